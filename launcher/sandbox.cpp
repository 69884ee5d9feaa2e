#include "launcher/sandbox.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "launcher/cgroup.hpp"
#include "launcher/channel.hpp"
#include "launcher/clone.hpp"
#include "launcher/exec.hpp"
#include "launcher/idmap.hpp"
#include "launcher/init.hpp"
#include "launcher/landlock.hpp"
#include "launcher/mounts.hpp"
#include "launcher/network.hpp"
#include "launcher/pivot_root.hpp"
#include "launcher/privileges.hpp"
#include "launcher/seccomp.hpp"
#include "launcher/status.hpp"
#include "launcher/supervise.hpp"

namespace nestbox::launcher {

namespace {

// Every signal whose default action would end the launcher is blocked and read from a signalfd,
// so that the launcher always ends the sandbox and removes its cgroup instead of dying mid-way.
// That includes the fault signals when another process sends them: a genuine fault of our own is
// still delivered, the kernel unblocks it. Only SIGKILL cannot be caught. Job control and SIGCHLD
// keep their usual meaning; SIGPIPE is ignored.
sigset_t stop_signals() {
    sigset_t set;
    ::sigfillset(&set);
    for (int sig : {SIGKILL, SIGSTOP, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD, SIGWINCH, SIGURG,
                    SIGPIPE}) {
        ::sigdelset(&set, sig);
    }
    return set;
}

void print_error(const Error& e) {
    std::fprintf(stderr, "nestbox: %s\n", e.message().c_str());
}

// Everything the caller leaked to us is closed before init does anything, except the channel.
void close_inherited_fds(const Channel& channel) {
    int keep[] = {channel.release_fd(), channel.report_write_fd()};
    std::sort(std::begin(keep), std::end(keep));
    unsigned from = 3;
    for (int fd : keep) {
        const auto u = static_cast<unsigned>(fd);
        if (u > from) ::close_range(from, u - 1, 0);
        from = u + 1;
    }
    ::close_range(from, ~0U, 0);
}

// Inside: PID 1 of the new namespaces. Each step assumes the ones before it; the order is the
// design (docs/architecture.md):
//  - the id maps come before any mount, because mounting needs the namespace's root mapped;
//  - the root is built while the launcher makes the v1 cgroup on the other core; we join it
//    before pivot_root, while its host path can still be opened, and before anything of the
//    command runs; the cgroup namespace is made right after, so our group is its root;
//  - every mount is made, and the host root detached, while we still hold the privileges to;
//  - hostname and loopback need CAP_SYS_ADMIN and CAP_NET_ADMIN, so they precede the drop;
//  - chdir is done as the sandbox user, so its permission is checked as that user;
//  - changing uid clears the parent-death signal, so it is armed again right after the drop;
//  - seccomp is installed by the command's own process just before execve, so neither our setup
//    syscalls nor init's reaping need to be allowed by it; init stays behind to reap.
[[noreturn]] void inside(const Plan& plan, Channel& channel, const Cgroup* cgroup,
                         const SeccompFilter& seccomp) {
    auto step = [&channel](const Result<void>& r) {
        if (!r) {
            channel.send_error(r.error());
            ::_exit(kLauncherError);
        }
    };
    auto sys = [&step](int rc, const char* stage, const char* what) {
        if (rc != 0) step(Error::from_errno(stage, what));
    };
    // If the launcher dies, so does the sandbox: init gets SIGKILL, and with it every process in
    // its PID namespace. A launcher that died before the signal was armed shows up as end-of-file
    // where init waits for the release.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    channel.close_launcher_ends();
    close_inherited_fds(channel);
    if (plan.rootless) step(write_id_maps(plan.uid, plan.outer_uid, plan.gid, plan.outer_gid));
    auto root = build_root(plan.mounts, SandboxUser{plan.uid, plan.gid, plan.rootless});
    if (!root) step(root.error());
    const std::optional<Release> release = channel.wait_for_release();
    if (!release) ::_exit(kLauncherError);  // the launcher is gone
    if (cgroup != nullptr && *release == Release::WithCgroup) step(cgroup->join());
    sys(::unshare(CLONE_NEWCGROUP), "clone", "new cgroup namespace");
    step(enter_root(root->get()));
    root->reset();
    sys(::sethostname(plan.hostname.data(), plan.hostname.size()), "uts", "sethostname");
    if (plan.loopback) step(bring_up_loopback());
    step(drop_privileges(plan.uid, plan.gid, !plan.rootless));
    // The kernel cleared the parent-death signal when our uid changed: arm it again, and catch a
    // launcher that died in between by its end of the report pipe being closed.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!channel.launcher_alive()) ::_exit(kLauncherError);
    sys(::chdir(plan.chdir.c_str()), "chdir", plan.chdir.c_str());
    if (plan.landlock) step(restrict_with_landlock(plan.mounts));
    // PID 1 runs next to the command as the same user: non-dumpable, it cannot be ptraced by it,
    // nor its /proc/1/fd (and with it the report pipe) opened.
    sys(::prctl(PR_SET_DUMPABLE, 0), "privileges", "PR_SET_DUMPABLE");
    hide_arguments("nestbox-init");

    auto command = spawn_command(plan.argv, plan.env, seccomp.fprog());
    if (!command) step(command.error());
    reap_until_command_exits(*command, channel);
}

}  // namespace

// Outside: the launcher, in the caller's namespaces.
int run_sandbox(const Plan& plan) {
    const StatusFd status(plan.status_fd);
    auto fail = [&status](const Error& e) {
        print_error(e);
        status.error(e);
        return kLauncherError;
    };

    // Stop signals are blocked before anything exists that would need cleaning up (the cgroup),
    // so none is lost in between; a parent that dies sends one (--die-with-parent).
    const sigset_t stop = stop_signals();
    ::sigprocmask(SIG_BLOCK, &stop, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) return fail(Error("launcher", "the parent process exited", ESRCH));
    UniqueFd signals(::signalfd(-1, &stop, SFD_CLOEXEC));
    if (!signals) return fail(Error::from_errno("launcher", "signalfd"));

    // Anything that can be refused is refused before a namespace or cgroup exists.
    auto seccomp = SeccompFilter::prepare(plan.seccomp, plan.seccomp_file);
    if (!seccomp) return fail(seccomp.error());
    auto setup = create_cgroup(plan.limits, plan.best_effort_limits);
    if (!setup) return fail(setup.error());
    std::vector<std::string>& warnings = setup->warnings;
    Cgroup* cgroup = setup->group.get();

    auto channel = Channel::create();
    if (!channel) return fail(channel.error());
    auto clone = clone_sandbox(plan.namespaces, cgroup != nullptr ? cgroup->clone_fd() : -1);
    if (!clone) return fail(clone.error());
    if (clone->in_child()) inside(plan, *channel, cgroup, *seccomp);

    channel->close_init_ends();
    // From here a failure must take the half-started sandbox down with it.
    auto abandon = [&](const Error& e) {
        (void)clone->pidfd.send_signal(SIGKILL);
        (void)supervise(clone->pidfd, *channel, cgroup, std::nullopt, signals.get(), status);
        return fail(e);
    };
    // The v1 groups are made now, on this core, while init builds the root on the other.
    if (cgroup != nullptr) {
        if (auto r = cgroup->finish(); !r) {
            if (!plan.best_effort_limits) return abandon(r.error());
            warnings.push_back(r.error().message() + ": no limit is enforced");
            setup->group.reset();
            cgroup = nullptr;
        }
    }
    // If init already failed, the release finds its end closed: its own error report, waiting in
    // the report pipe, is the one that explains what happened, so supervise normally.
    (void)channel->release(cgroup != nullptr ? Release::WithCgroup : Release::WithoutCgroup);
    // With --status-fd the warnings go to the exited event only: stderr is the command's.
    if (!plan.status_fd) {
        for (const std::string& w : warnings)
            std::fprintf(stderr, "nestbox: warning: %s\n", w.c_str());
    }

    const Ending ending =
        supervise(clone->pidfd, *channel, cgroup, plan.limits.timeout, signals.get(), status);
    Outcome outcome = summarize(ending, cgroup);
    outcome.warnings = warnings;
    if (ending.setup_error) {
        print_error(*ending.setup_error);
        status.error(*ending.setup_error);
    }
    status.exited(outcome);
    return outcome.exit_code;
}

}  // namespace nestbox::launcher
