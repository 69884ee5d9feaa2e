#include "launcher/exec.hpp"

#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace nestbox::launcher {

namespace {

char* g_args = nullptr;
std::size_t g_args_len = 0;

std::vector<char*> c_strings(const std::vector<std::string>& v) {
    std::vector<char*> out;
    out.reserve(v.size() + 1);
    for (const std::string& s : v)
        out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

// execvp's search, done by init before the child exists (the child may only make raw syscalls):
// the first executable regular file on PATH, else the name itself so execve reports why.
std::string resolve(const std::string& file, const std::vector<std::string>& env) {
    if (file.find('/') != std::string::npos) return file;
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    for (const std::string& e : env) {
        if (e.starts_with("PATH=")) path = e.substr(5);
    }
    std::string not_executable;
    std::size_t pos = 0;
    while (pos <= path.size()) {
        const std::size_t end = std::min(path.find(':', pos), path.size());
        std::string dir = path.substr(pos, end - pos);
        pos = end + 1;
        std::string candidate = (dir.empty() ? "." : dir) + "/" + file;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        if (not_executable.empty()) not_executable = candidate;
    }
    return not_executable.empty() ? file : not_executable;
}

// The kernel's struct for rt_sigaction (glibc's differs and may not be used from the child).
struct KernelSigaction {
    __sighandler_t handler;
    unsigned long flags;
    void* restorer;
    std::uint64_t mask;
};

struct ChildArgs {
    const char* path;
    char* const* argv;
    char* const* envp;
    const sock_fprog* filter;
    int error;           // written by the child before it exits, read by init after
    const char* failed;  // which step failed: "exec" or "seccomp"
};

// Runs in the child, on its own stack, sharing init's memory until execve (CLONE_VM |
// CLONE_VFORK): raw syscalls only, nothing that allocates or touches glibc state.
int command_main(void* raw) {
    auto* a = static_cast<ChildArgs*>(raw);
    // A session of its own and so no controlling terminal: TIOCSTI and TIOCLINUX need one, so even
    // with seccomp off the command cannot type into the terminal nestbox was started from.
    ::syscall(SYS_setsid);
    // Ignored signals survive execve, and glibc's posix_spawn cannot reset its own two (32, 33):
    // every signal starts at its default, none blocked.
    const KernelSigaction dfl{SIG_DFL, 0, nullptr, 0};
    for (long sig = 1; sig <= 64; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP)
            ::syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof(std::uint64_t));
    }
    const std::uint64_t none = 0;
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof none);
    // Only stdin, stdout and stderr cross into the command, whatever the caller leaked to us.
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    if (a->filter != nullptr &&
        ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, a->filter) != 0) {
        a->error = errno;
        a->failed = "seccomp";
        ::syscall(SYS_exit, kLauncherError);
    }
    ::syscall(SYS_execve, a->path, a->argv, a->envp);
    a->error = errno;
    a->failed = "exec";
    ::syscall(SYS_exit, a->error == ENOENT ? kNotFound : kCannotExecute);
    return 0;
}

}  // namespace

Result<pid_t> spawn_command(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env,
                            const std::optional<sock_fprog>& seccomp) {
    const std::string path = resolve(argv.front(), env);
    std::vector<char*> args = c_strings(argv);
    std::vector<char*> envp = c_strings(env);
    ChildArgs a{path.c_str(), args.data(), envp.data(), seccomp ? &*seccomp : nullptr, 0, nullptr};

    constexpr std::size_t kStack = 64 << 10;
    void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return Error::from_errno("exec", "stack for the command");
    // CLONE_VFORK: init sleeps until the child has executed the command (or failed to), so the
    // child can use this stack frame's strings and report its error through `a`.
    const pid_t pid = ::clone(command_main, static_cast<char*>(stack) + kStack,
                              CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    const int clone_errno = errno;
    ::munmap(stack, kStack);
    if (pid < 0) return Error("exec", "clone", clone_errno);
    if (a.failed != nullptr && std::string_view(a.failed) == "seccomp") {
        // Not the command's failure but the sandbox's: a launcher error (the child has exited).
        return Error("seccomp", "installing the filter", a.error);
    }
    if (a.error != 0) {
        std::fprintf(stderr, "nestbox: exec: %s: %s\n", argv.front().c_str(),
                     strerrordesc_np(a.error));
    }
    return pid;
}

void remember_arguments(int argc, char** argv) {
    if (argc < 1) return;
    g_args = argv[0];
    g_args_len = static_cast<std::size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) - argv[0]);
}

void hide_arguments(const char* shown_name) {
    if (g_args == nullptr) return;
    std::memset(g_args, 0, g_args_len);
    std::strncpy(g_args, shown_name, g_args_len);
}

}  // namespace nestbox::launcher
