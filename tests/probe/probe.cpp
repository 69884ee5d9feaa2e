// probe: runs inside a sandbox under test and reports, as JSON on stdout, what it can see and
// which escape attempts succeed. The tests decide what is right; the probe only tries and tells.
//
//   probe report [--host-pid PID] [--path P]...   identity, capabilities, fds, network, attempts
//   probe daemon NAME                              double-fork a setsid daemon named NAME, exit 0
//   probe forkbomb                                 fork until refused; report the count
//   probe membomb                                  touch memory until killed
//   probe busy SECONDS                             spin on the CPU for SECONDS of wall time
//   probe tiocsti                                  try to push a character into fd 0's terminal
//   probe write PATH                               try to create PATH
//   probe cgroup-escape DIR                        try to move itself into DIR/cgroup.procs
//
// Statically linked, so it runs in any root the tests build and in the cgroup v2 VM.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "src/core/json_writer.hpp"

namespace {

using nestbox::JsonWriter;

// The outcome of one attempt: ok, or the errno it failed with, or the signal that killed it.
struct Attempt {
    bool ok = false;
    int err = 0;
    int signal = 0;
};

// Runs `fn` in a child so that an attempt that kills (seccomp's KILL for a foreign ABI) or
// succeeds in changing the process (unshare) does not affect the probe.
Attempt in_child(const std::function<long()>& fn) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return {false, errno, 0};
    const pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        errno = 0;
        const long rc = fn();
        const int result[2] = {rc >= 0 ? 1 : 0, rc >= 0 ? 0 : errno};
        (void)!write(pipefd[1], result, sizeof result);
        _exit(0);
    }
    close(pipefd[1]);
    int result[2] = {0, 0};
    const ssize_t n = read(pipefd[0], result, sizeof result);
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    Attempt a;
    if (WIFSIGNALED(status)) {
        a.signal = WTERMSIG(status);
        return a;
    }
    if (n == sizeof result) {
        a.ok = result[0] == 1;
        a.err = result[1];
    }
    return a;
}

void write_attempt(JsonWriter& w, const char* name, const Attempt& a) {
    w.key(name).begin_object().field("ok", a.ok).field("errno", a.err);
    if (a.err != 0) w.field("error", strerrordesc_np(a.err));
    w.field("signal", a.signal).end_object();
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string status_field(const std::string& status, const std::string& key) {
    const auto pos = status.find(key + ":");
    if (pos == std::string::npos) return "";
    auto start = status.find_first_not_of(" \t", pos + key.size() + 1);
    auto end = status.find('\n', start);
    return status.substr(start, end - start);
}

std::vector<int> open_fds() {
    std::vector<int> fds;
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return fds;
    const int self = dirfd(dir);
    while (dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        const int fd = std::atoi(e->d_name);
        if (fd != self) fds.push_back(fd);
    }
    closedir(dir);
    return fds;
}

std::vector<std::string> interfaces() {
    std::vector<std::string> out;
    if (struct if_nameindex* list = if_nameindex()) {
        for (struct if_nameindex* i = list; i->if_index != 0; ++i)
            out.emplace_back(i->if_name);
        if_freenameindex(list);
    }
    return out;
}

// Listens on 127.0.0.1 and connects to itself: loopback is up and usable.
long loopback_roundtrip() {
    const int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(l, 1) != 0 || getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return -1;
    }
    const int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return c < 0 ? -1 : connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
}

long try_connect(const char* ip, int port) {
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, ip, &addr.sin_addr);
    timeval tv{1, 0};
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const long rc = connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    const int err = errno;
    close(s);
    errno = err;
    return rc;
}

int cmd_report(int argc, char** argv) {
    pid_t host_pid = 0;
    std::vector<std::string> paths;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--host-pid") == 0) host_pid = std::atoi(argv[i + 1]);
        if (std::strcmp(argv[i], "--path") == 0) paths.emplace_back(argv[i + 1]);
    }
    const std::string status = read_text("/proc/self/status");
    JsonWriter w;
    w.begin_object();
    w.field("pid", static_cast<int>(getpid())).field("ppid", static_cast<int>(getppid()));
    w.field("uid", static_cast<unsigned>(getuid())).field("euid", static_cast<unsigned>(geteuid()));
    w.field("gid", static_cast<unsigned>(getgid())).field("egid", static_cast<unsigned>(getegid()));
    gid_t groups[64];
    const int ngroups = getgroups(64, groups);
    w.key("groups").begin_array();
    for (int i = 0; i < ngroups; ++i)
        w.value(static_cast<unsigned>(groups[i]));
    w.end_array();
    w.key("caps").begin_object();
    for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
        w.field(set, status_field(status, set));
    }
    w.end_object();
    w.field("no_new_privs", status_field(status, "NoNewPrivs"));
    w.field("sig_ignored", status_field(status, "SigIgn"))
        .field("sig_blocked", status_field(status, "SigBlk"));
    w.field("init_cmdline", read_text("/proc/1/cmdline"));
    w.field("seccomp", status_field(status, "Seccomp"));
    w.field("securebits", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
    w.field("dumpable", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    w.field("sid_is_self", getsid(0) == getpid());
    w.key("fds").begin_array();
    for (int fd : open_fds())
        w.value(fd);
    w.end_array();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    w.field("hostname", host);
    char cwd[4096] = {};
    w.field("cwd", getcwd(cwd, sizeof cwd) != nullptr ? cwd : "");
    w.key("interfaces").begin_array();
    for (const auto& i : interfaces())
        w.value(i);
    w.end_array();
    w.field("cgroup", read_text("/proc/self/cgroup"));
    w.field("uid_map", read_text("/proc/self/uid_map"));
    w.key("env").begin_array();
    for (char** e = environ; *e != nullptr; ++e)
        w.value(*e);
    w.end_array();
    w.key("visible").begin_object();
    for (const auto& p : paths) {
        struct stat st {};
        w.field(p, lstat(p.c_str(), &st) == 0);
    }
    w.end_object();
    w.field("proc_pids", [] {
        int n = 0;
        if (DIR* d = opendir("/proc")) {
            while (dirent* e = readdir(d))
                n += (e->d_name[0] >= '1' && e->d_name[0] <= '9') ? 1 : 0;
            closedir(d);
        }
        return n;
    }());

    w.key("attempts").begin_object();
    write_attempt(w, "unshare_user", in_child([] { return syscall(SYS_unshare, CLONE_NEWUSER); }));
    write_attempt(w, "unshare_mount", in_child([] { return syscall(SYS_unshare, CLONE_NEWNS); }));
    write_attempt(w, "unshare_net", in_child([] { return syscall(SYS_unshare, CLONE_NEWNET); }));
    write_attempt(w, "clone_newuser", in_child([] {
                      const long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
                      if (pid == 0) _exit(0);
                      if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
                      return pid;
                  }));
    write_attempt(w, "clone3", in_child([] {
                      struct {
                          uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
                              stack_size, tls;
                      } args{};
                      args.flags = CLONE_NEWUSER;
                      args.exit_signal = SIGCHLD;
                      const long pid = syscall(SYS_clone3, &args, sizeof args);
                      if (pid == 0) _exit(0);
                      if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
                      return pid;
                  }));
    write_attempt(w, "setns", in_child([] {
                      const int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
                      return fd < 0 ? -1 : syscall(SYS_setns, fd, 0);
                  }));
    write_attempt(w, "mount_tmpfs", in_child([] {
                      return static_cast<long>(mount("none", "/tmp", "tmpfs", 0, nullptr));
                  }));
    write_attempt(w, "fsopen", in_child([] { return syscall(SYS_fsopen, "tmpfs", 0); }));
    write_attempt(w, "keyctl", in_child([] {
                      return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING,
                                     1);
                  }));
    write_attempt(w, "add_key", in_child([] {
                      return syscall(SYS_add_key, "user", "nestbox-probe", "x", 1,
                                     KEY_SPEC_PROCESS_KEYRING);
                  }));
    write_attempt(w, "bpf", in_child([] {
                      union bpf_attr attr {};
                      attr.map_type = BPF_MAP_TYPE_ARRAY;
                      attr.key_size = 4;
                      attr.value_size = 4;
                      attr.max_entries = 1;
                      return syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
                  }));
    write_attempt(w, "perf_event_open", in_child([] {
                      perf_event_attr attr{};
                      attr.size = sizeof attr;
                      attr.type = PERF_TYPE_SOFTWARE;
                      attr.config = PERF_COUNT_SW_CPU_CLOCK;
                      attr.exclude_kernel = 1;
                      return syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
                  }));
    write_attempt(w, "userfaultfd", in_child([] { return syscall(SYS_userfaultfd, O_CLOEXEC); }));
    write_attempt(w, "io_uring_setup", in_child([] {
                      io_uring_params p{};
                      return syscall(SYS_io_uring_setup, 4, &p);
                  }));
    write_attempt(w, "ptrace_host", in_child([host_pid] {
                      if (host_pid <= 0) {
                          errno = EINVAL;
                          return -1L;
                      }
                      return ptrace(PTRACE_ATTACH, host_pid, nullptr, nullptr);
                  }));
    write_attempt(w, "ptrace_init",
                  in_child([] { return ptrace(PTRACE_ATTACH, 1, nullptr, nullptr); }));
    write_attempt(w, "kill_init", in_child([] { return static_cast<long>(kill(1, SIGKILL)); }));
    write_attempt(w, "open_init_fd", in_child([] {
                      return static_cast<long>(open("/proc/1/fd/0", O_RDONLY | O_CLOEXEC));
                  }));
    write_attempt(w, "setuid_root", in_child([] { return static_cast<long>(setuid(0)); }));
    write_attempt(w, "chroot", in_child([] { return static_cast<long>(chroot("/tmp")); }));
    write_attempt(w, "open_by_handle_at", in_child([] {
                      char buf[sizeof(file_handle) + 128];
                      auto* h = reinterpret_cast<file_handle*>(buf);
                      h->handle_bytes = 128;
                      int mount_id = 0;
                      if (syscall(SYS_name_to_handle_at, AT_FDCWD, "/", h, &mount_id, 0) != 0)
                          return -1L;
                      return syscall(SYS_open_by_handle_at, AT_FDCWD, h, O_RDONLY | O_CLOEXEC);
                  }));
    write_attempt(w, "tiocsti", in_child([] {
                      char c = 'x';
                      return static_cast<long>(ioctl(0, TIOCSTI, &c));
                  }));
    write_attempt(w, "tiocsti_high_bits", in_child([] {
                      char c = 'x';
                      return syscall(SYS_ioctl, 0, 0xffffffff00000000UL | TIOCSTI, &c);
                  }));
    write_attempt(w, "x32_syscall", in_child([] { return syscall(0x40000000 | 39); }));
    write_attempt(w, "i386_syscall", in_child([] {
                      long rc = 0;
                      __asm__ volatile("int $0x80" : "=a"(rc) : "a"(20) : "memory");  // getpid
                      return rc;
                  }));
    write_attempt(w, "connect_external", in_child([] { return try_connect("192.0.2.1", 80); }));
    write_attempt(w, "loopback_connect", in_child([] { return loopback_roundtrip(); }));
    write_attempt(
        w, "write_root", in_child([] {
            return static_cast<long>(open("/nestbox-probe", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        }));
    write_attempt(w, "write_usr", in_child([] {
                      return static_cast<long>(
                          open("/usr/nestbox-probe", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
                  }));
    write_attempt(w, "write_etc", in_child([] {
                      return static_cast<long>(open("/etc/passwd", O_WRONLY | O_CLOEXEC));
                  }));
    write_attempt(w, "write_tmp", in_child([] {
                      return static_cast<long>(
                          open("/tmp/nestbox-probe", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
                  }));
    write_attempt(w, "mknod", in_child([] {
                      return static_cast<long>(mknod("/tmp/null2", S_IFCHR | 0666, makedev(1, 3)));
                  }));
    w.end_object();
    w.end_object();
    std::puts(w.str().c_str());
    return 0;
}

int cmd_daemon(const char* name) {
    const pid_t first = fork();
    if (first != 0) {
        waitpid(first, nullptr, 0);
        return 0;
    }
    setsid();
    if (fork() != 0) _exit(0);
    // The grandchild: a session leader's orphan, reparented to the sandbox's init.
    prctl(PR_SET_NAME, name, 0, 0, 0);
    for (int fd = 0; fd < 3; ++fd)
        close(fd);
    for (;;)
        pause();
}

int cmd_forkbomb() {
    int forked = 0;
    for (;;) {
        const pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                pause();
        }
        if (pid < 0) break;
        ++forked;
        if (forked > 100000) break;
    }
    const int err = errno;
    std::printf("{\"forked\":%d,\"errno\":%d}\n", forked, err);
    std::fflush(stdout);
    return 0;
}

int cmd_membomb() {
    std::vector<char*> blocks;
    for (int mb = 1;; ++mb) {
        auto* p = static_cast<char*>(std::malloc(1 << 20));
        if (p == nullptr) {
            std::printf("{\"malloc_failed_at_mb\":%d}\n", mb);
            return 1;
        }
        std::memset(p, mb & 0xff, 1 << 20);
        blocks.push_back(p);
        if (mb > 1 << 16) return 2;
    }
}

int cmd_busy(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    volatile unsigned long spins = 0;
    while (std::chrono::steady_clock::now() < end)
        spins = spins + 1;
    return 0;
}

int cmd_tiocsti() {
    char c = 'x';
    const int rc = ioctl(0, TIOCSTI, &c);
    std::printf("{\"ok\":%s,\"errno\":%d}\n", rc == 0 ? "true" : "false", rc == 0 ? 0 : errno);
    return 0;
}

int cmd_write(const char* path) {
    const int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    std::printf("{\"ok\":%s,\"errno\":%d}\n", fd >= 0 ? "true" : "false", fd >= 0 ? 0 : errno);
    return 0;
}

int cmd_cgroup_escape(const std::string& dir) {
    const int fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    long rc = fd;
    if (fd >= 0) {
        rc = write(fd, "0", 1);
        close(fd);
    }
    std::printf("{\"ok\":%s,\"errno\":%d}\n", rc > 0 ? "true" : "false", rc > 0 ? 0 : errno);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "report") return cmd_report(argc, argv);
    if (cmd == "daemon" && argc > 2) return cmd_daemon(argv[2]);
    if (cmd == "forkbomb") return cmd_forkbomb();
    if (cmd == "membomb") return cmd_membomb();
    if (cmd == "busy" && argc > 2) return cmd_busy(std::atof(argv[2]));
    if (cmd == "tiocsti") return cmd_tiocsti();
    if (cmd == "write" && argc > 2) return cmd_write(argv[2]);
    if (cmd == "cgroup-escape" && argc > 2) return cmd_cgroup_escape(argv[2]);
    std::fprintf(stderr,
                 "usage: probe report|daemon NAME|forkbomb|membomb|busy S|tiocsti|write "
                 "P|cgroup-escape DIR\n");
    return 2;
}
