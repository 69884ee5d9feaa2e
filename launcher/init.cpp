#include "launcher/init.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/exit_codes.hpp"

namespace nestbox::launcher {

[[noreturn]] void reap_until_command_exits(pid_t command, const Channel& channel) {
    Report started;
    started.kind = Report::Kind::Started;
    started.pid = command;
    channel.send(started);
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            ::_exit(kLauncherError);  // ECHILD before the command was reaped cannot happen
        }
        if (pid == command) {
            Report exited;
            exited.kind = Report::Kind::Exited;
            exited.wait_status = status;
            channel.send(exited);
            ::_exit(0);
        }
    }
}

}  // namespace nestbox::launcher
