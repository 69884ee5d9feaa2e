#include "src/server/child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "src/core/files.hpp"

namespace nestbox::server {

namespace {

struct Pipe {
    UniqueFd read, write;
};

Result<Pipe> make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno("exec", "pipe2");
    return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

struct SpawnSetup {
    posix_spawnattr_t attr{};
    posix_spawn_file_actions_t actions{};
    SpawnSetup() {
        ::posix_spawnattr_init(&attr);
        ::posix_spawn_file_actions_init(&actions);
    }
    ~SpawnSetup() {
        ::posix_spawn_file_actions_destroy(&actions);
        ::posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

Result<Child> spawn_launcher(const std::vector<std::string>& argv, const std::string& policy_json,
                             bool with_stdin) {
    UniqueFd policy(::memfd_create("nestbox-policy", MFD_CLOEXEC));
    if (!policy) return Error::from_errno("exec", "memfd_create");
    NESTBOX_TRY(write_all(policy.get(), policy_json));
    if (::lseek(policy.get(), 0, SEEK_SET) != 0) return Error::from_errno("exec", "lseek");

    NESTBOX_TRY_ASSIGN(Pipe in, make_pipe());
    NESTBOX_TRY_ASSIGN(Pipe out, make_pipe());
    NESTBOX_TRY_ASSIGN(Pipe err, make_pipe());
    NESTBOX_TRY_ASSIGN(Pipe status, make_pipe());
    UniqueFd devnull;
    if (!with_stdin) {
        devnull.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!devnull) return Error::from_errno("exec", "/dev/null");
    }

    SpawnSetup s;
    ::posix_spawn_file_actions_adddup2(&s.actions, with_stdin ? in.read.get() : devnull.get(), 0);
    ::posix_spawn_file_actions_adddup2(&s.actions, out.write.get(), 1);
    ::posix_spawn_file_actions_adddup2(&s.actions, err.write.get(), 2);
    ::posix_spawn_file_actions_adddup2(&s.actions, policy.get(), kPolicyFd);
    ::posix_spawn_file_actions_adddup2(&s.actions, status.write.get(), kStatusFd);
    // Sockets of other clients are not O_CLOEXEC (Asio does not ask for it); close every fd the
    // launcher has no business holding, whatever another thread opened meanwhile.
    ::posix_spawn_file_actions_addclosefrom_np(&s.actions, kStatusFd + 1);
    // The server ignores SIGPIPE and blocks nothing the launcher needs: start it with defaults.
    sigset_t all;
    sigset_t none;
    ::sigfillset(&all);
    ::sigemptyset(&none);
    ::posix_spawnattr_setsigdefault(&s.attr, &all);
    ::posix_spawnattr_setsigmask(&s.attr, &none);
    ::posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

    std::vector<char*> cargv;
    cargv.reserve(argv.size() + 1);
    for (const auto& a : argv)
        cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    char* envp[] = {nullptr};
    pid_t pid = -1;
    if (const int rc = ::posix_spawn(&pid, cargv[0], &s.actions, &s.attr, cargv.data(), envp);
        rc != 0) {
        return Error("exec", "starting " + argv[0], rc);
    }
    Reaper::instance().track(pid);
    // Opened before anything could reap the child: the pidfd names exactly this process.
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) {
        const Error e = Error::from_errno("exec", "pidfd_open");
        ::kill(pid, SIGKILL);
        return e;
    }
    Child c;
    c.pidfd = PidFd(std::move(pidfd), pid);
    if (with_stdin) c.stdin_w = std::move(in.write);
    c.stdout_r = std::move(out.read);
    c.stderr_r = std::move(err.read);
    c.status_r = std::move(status.read);
    return c;
}

std::string describe_wait_status(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const char* name = ::sigabbrev_np(WTERMSIG(status));
        return name != nullptr ? std::string("signal SIG") + name
                               : "signal " + std::to_string(WTERMSIG(status));
    }
    return "wait status " + std::to_string(status);
}

Reaper& Reaper::instance() {
    static Reaper r;
    return r;
}

void Reaper::track(pid_t pid) {
    std::lock_guard lock(mu_);
    statuses_[pid] = std::nullopt;
}

int Reaper::collect(const PidFd& child) {
    std::lock_guard lock(mu_);
    int status = 0;
    siginfo_t info{};
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.get()), &info, WEXITED) ==
        0) {
        status = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0) : info.si_status;
    } else if (auto it = statuses_.find(child.pid()); it != statuses_.end() && it->second) {
        status = *it->second;  // reaped by reap_all() before we got here
    }
    statuses_.erase(child.pid());
    return status;
}

void Reaper::reap_all() {
    std::lock_guard lock(mu_);
    int status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
        if (auto it = statuses_.find(pid); it != statuses_.end()) it->second = status;
    }
}

}  // namespace nestbox::server
