#include "launcher/exec.hpp"

#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

// RAII for the two posix_spawn attribute objects.
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

pid_t spawn_command(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    SpawnSetup s;
    // A session of its own and so no controlling terminal: TIOCSTI and TIOCLINUX need one, so even
    // with seccomp off the command cannot type into the terminal nestbox was started from.
    // Ignored signals survive execve and the launcher blocks the ones it handles: the command
    // starts with every signal at its default and nothing blocked.
    sigset_t all;
    sigset_t none;
    ::sigfillset(&all);
    ::sigemptyset(&none);
    ::posix_spawnattr_setsigdefault(&s.attr, &all);
    ::posix_spawnattr_setsigmask(&s.attr, &none);
    ::posix_spawnattr_setflags(&s.attr,
                               POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    // Only stdin, stdout and stderr cross into the command, whatever the caller leaked to us.
    ::posix_spawn_file_actions_addclosefrom_np(&s.actions, 3);

    std::vector<char*> args = c_strings(argv);
    std::vector<char*> envp = c_strings(env);
    // posix_spawnp searches PATH as found in our own environment: make it the sandbox's.
    environ = envp.data();
    pid_t pid = -1;
    // glibc's posix_spawn uses clone(CLONE_VM | CLONE_VFORK): no copy of our page tables, and an
    // exec failure comes back here as the return value.
    const int err = ::posix_spawnp(&pid, args[0], &s.actions, &s.attr, args.data(), envp.data());
    if (err == 0) return pid;
    std::fprintf(stderr, "nestbox: exec: %s: %s\n", args[0], strerrordesc_np(err));
    const pid_t failed = ::fork();
    if (failed == 0) ::_exit(err == ENOENT ? kNotFound : kCannotExecute);
    return failed;
}

}  // namespace nestbox::launcher
