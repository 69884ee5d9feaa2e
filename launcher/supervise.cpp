#include "launcher/supervise.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/exit_codes.hpp"

namespace nestbox::launcher {

namespace {

void kill_sandbox(const PidFd& init, Cgroup* cgroup) {
    if (cgroup != nullptr) cgroup->kill();
    // Killing a PID namespace's init kills everything in the namespace.
    (void)init.send_signal(SIGKILL);
}

void handle(const Report& r, Ending& ending, const PidFd& init, const StatusFd& status) {
    switch (r.kind) {
        case Report::Kind::Started:
            status.started(init.pid());
            break;
        case Report::Kind::Exited:
            ending.command_status = r.wait_status;
            break;
        case Report::Kind::SetupFailed:
            ending.setup_error = Error(r.step, r.message, r.error_code);
            break;
    }
}

}  // namespace

Ending supervise(const PidFd& init, Channel& channel, Cgroup* cgroup,
                 std::optional<std::chrono::milliseconds> timeout, int signal_fd,
                 const StatusFd& status) {
    using Clock = std::chrono::steady_clock;
    Ending ending;
    const auto deadline = timeout ? std::optional(Clock::now() + *timeout) : std::nullopt;
    bool killed = false;
    bool reports_open = true;
    for (;;) {
        pollfd fds[3] = {{init.get(), POLLIN, 0},
                         {signal_fd, POLLIN, 0},
                         {reports_open ? channel.report_fd() : -1, POLLIN, 0}};
        int wait_ms = -1;
        if (deadline && !killed) {
            const auto left =
                std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
            wait_ms = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
        }
        const int n = ::poll(fds, 3, wait_ms);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {  // the deadline passed
            ending.timed_out = true;
            killed = true;
            kill_sandbox(init, cgroup);
            continue;
        }
        if ((fds[2].revents & (POLLIN | POLLHUP)) != 0) {
            if (auto r = channel.read_report()) {
                handle(*r, ending, init, status);
            } else {
                reports_open = false;
            }
        }
        if ((fds[1].revents & POLLIN) != 0) {
            signalfd_siginfo info{};
            if (::read(signal_fd, &info, sizeof info) == sizeof info && !killed) {
                ending.stop_signal = static_cast<int>(info.ssi_signo);
                killed = true;
                kill_sandbox(init, cgroup);
            }
        }
        if ((fds[0].revents & POLLIN) != 0) {
            break;
        }  // init has exited
    }
    // wait4 rather than waitid(P_PIDFD): it also returns the usage of init and all it reaped.
    while (::wait4(init.pid(), &ending.init_status, 0, &ending.usage) < 0 && errno == EINTR) {
    }
    while (reports_open) {
        if (auto r = channel.read_report()) {
            handle(*r, ending, init, status);
        } else {
            reports_open = false;
        }
    }
    return ending;
}

Outcome summarize(const Ending& e, const Cgroup* cgroup) {
    Outcome o;
    const bool killed = e.timed_out || e.stop_signal.has_value();
    if (e.command_status && !killed) {
        const int st = *e.command_status;
        if (WIFSIGNALED(st)) {
            o.signal = WTERMSIG(st);
            o.exit_code = 128 + *o.signal;
        } else {
            o.exit_code = WEXITSTATUS(st);
        }
    } else if (killed || (!e.setup_error && WIFSIGNALED(e.init_status))) {
        // The sandbox was killed as a whole, by us or (an OOM kill of init) by the kernel.
        o.signal = killed ? SIGKILL : WTERMSIG(e.init_status);
        o.exit_code = 128 + *o.signal;
    } else {
        // Setup failed, or init ended without a word: a launcher failure either way.
        o.exit_code = kLauncherError;
    }
    o.timed_out = e.timed_out;
    const auto ms = [](const timeval& t) {
        return static_cast<std::uint64_t>(t.tv_sec) * 1000 +
               static_cast<std::uint64_t>(t.tv_usec) / 1000;
    };
    o.cpu_ms = ms(e.usage.ru_utime) + ms(e.usage.ru_stime);
    o.memory_peak_bytes = static_cast<std::uint64_t>(e.usage.ru_maxrss) * 1024;
    if (cgroup != nullptr) {
        o.cgroup = std::string(cgroup->version());
        o.oom_killed = cgroup->oom_killed();
        const CgroupUsage u = cgroup->usage();
        if (u.cpu_usec) o.cpu_ms = *u.cpu_usec / 1000;
        if (u.memory_peak_bytes) o.memory_peak_bytes = u.memory_peak_bytes;
    }
    return o;
}

}  // namespace nestbox::launcher
