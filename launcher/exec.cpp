#include "launcher/exec.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace nestbox::launcher {

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
    std::vector<char*> out;
    out.reserve(v.size() + 1);
    for (const std::string& s : v)
        out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

}  // namespace

[[noreturn]] void exec_command(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env) {
    // A session of its own and so no controlling terminal: TIOCSTI and TIOCLINUX need one, so even
    // with seccomp off the command cannot type into the terminal nestbox was started from.
    ::setsid();
    // Ignored signals survive execve and the launcher blocks the ones it handles; the command
    // starts with the default disposition for every signal and nothing blocked.
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    }
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Only stdin, stdout and stderr cross into the command, whatever the caller leaked to us.
    ::close_range(3, ~0U, 0);

    std::vector<char*> args = c_strings(argv);
    std::vector<char*> envp = c_strings(env);
    // execvp searches PATH as found in `environ`, so the sandbox's PATH must be in place first.
    environ = envp.data();
    ::execvp(args[0], args.data());
    const int err = errno;
    std::fprintf(stderr, "nestbox: exec: %s: %s\n", args[0], strerrordesc_np(err));
    ::_exit(err == ENOENT ? kNotFound : kCannotExecute);
}

}  // namespace nestbox::launcher
