#include "launcher/clone.hpp"

#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace nestbox::launcher {

Result<Clone> clone_sandbox(unsigned long namespaces, int cgroup_fd) {
    int pidfd = -1;
    clone_args args{};
    args.flags = namespaces | static_cast<__u64>(CLONE_PIDFD);
    args.pidfd = static_cast<__u64>(reinterpret_cast<std::uintptr_t>(&pidfd));
    args.exit_signal = static_cast<__u64>(SIGCHLD);
    if (cgroup_fd >= 0) {
        args.flags |= static_cast<__u64>(CLONE_INTO_CGROUP);
        args.cgroup = static_cast<__u64>(cgroup_fd);
    }
    // glibc has no clone3() wrapper. Without CLONE_VM the child gets a copy of this
    // single-threaded process, exactly as with fork().
    const long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0) {
        const bool userns = (namespaces & CLONE_NEWUSER) != 0;
        return Error::from_errno("clone", std::string("creating the sandbox's namespaces") +
                                              (userns ? " (with a user namespace)" : ""));
    }
    Clone c;
    c.pid = static_cast<pid_t>(pid);
    if (pid != 0) c.pidfd = PidFd(UniqueFd(pidfd), c.pid);
    return c;
}

}  // namespace nestbox::launcher
