// The launcher's security properties, each checked by attempting to break it inside a real
// sandbox, as root and as an unprivileged user. Where the attempt would also fail for a reason
// other than nestbox's boundary, a control run without that boundary shows it succeeding.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/harness.hpp"

namespace nestbox::test {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

enum class Mode { Root, Rootless };

std::string mode_name(const testing::TestParamInfo<Mode>& info) {
    return info.param == Mode::Root ? "Root" : "Rootless";
}

class Launcher : public testing::TestWithParam<Mode> {
  protected:
    void SetUp() override {
        if (!is_root())
            GTEST_SKIP() << "the integration tests start as root and drop to a test uid";
    }
    bool rootless() const { return GetParam() == Mode::Rootless; }
    RunOptions opts(RunOptions o = {}) const {
        if (rootless()) o.as_uid = kTestUid;
        return o;
    }
    RunResult run(const std::vector<std::string>& args, RunOptions o = {}) const {
        return run_nestbox(args, opts(std::move(o)));
    }
    // The probe's report from a default sandbox (plus `extra` options).
    json::object report(std::vector<std::string> extra = {},
                        std::vector<std::string> probe_args = {}) const {
        std::vector<std::string> args = with_probe(std::move(extra));
        args.insert(args.end(), {"--", "/probe", "report"});
        args.insert(args.end(), probe_args.begin(), probe_args.end());
        RunResult r = run(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.out_json().as_object();
    }
};

const json::object& attempt(const json::object& report, const char* name) {
    return report.at("attempts").as_object().at(name).as_object();
}

int err(const json::object& report, const char* name) {
    return static_cast<int>(attempt(report, name).at("errno").as_int64());
}

bool ok(const json::object& report, const char* name) {
    return attempt(report, name).at("ok").as_bool();
}

int killed_by(const json::object& report, const char* name) {
    return static_cast<int>(attempt(report, name).at("signal").as_int64());
}

// --- identity and privileges --------------------------------------------------------------

TEST_P(Launcher, CommandHoldsNoCapabilityInAnySet) {
    const json::object r = report();
    for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
        EXPECT_EQ(r.at("caps").at(set).as_string(), "0000000000000000") << set;
    }
    EXPECT_EQ(r.at("no_new_privs").as_string(), "1");
    EXPECT_EQ(r.at("seccomp").as_string(), "2");
    // NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE, all locked: 0xef.
    EXPECT_EQ(r.at("securebits").as_int64(), 0xef);
    EXPECT_FALSE(ok(r, "setuid_root"));
}

TEST_P(Launcher, RunsAsTheSandboxUserByDefaultAndAsAskedOtherwise) {
    json::object r = report();
    EXPECT_EQ(r.at("uid").as_int64(), 65534);
    EXPECT_EQ(r.at("gid").as_int64(), 65534);
    r = report({"--uid", "12345", "--gid", "23456"});
    EXPECT_EQ(r.at("uid").as_int64(), 12345);
    EXPECT_EQ(r.at("euid").as_int64(), 12345);
    EXPECT_EQ(r.at("gid").as_int64(), 23456);
    if (!rootless()) {
        // setgroups(0) in root mode: no supplementary group of the caller survives.
        EXPECT_TRUE(r.at("groups").as_array().empty() ||
                    (r.at("groups").as_array().size() == 1 &&
                     r.at("groups").as_array()[0].as_int64() == 23456));
    } else {
        EXPECT_EQ(r.at("uid_map").as_string().find("12345"),
                  r.at("uid_map").as_string().find_first_not_of(' '));
    }
}

TEST_P(Launcher, RefusesHostRootWithoutAUserNamespace) {
    RunResult r = run({"--uid", "0", "--", "true"});
    if (rootless()) {
        EXPECT_EQ(r.exit_code, 0) << r.err;  // 0 inside maps to the caller, not to host root
    } else {
        EXPECT_EQ(r.exit_code, 125);
        EXPECT_NE(r.err.find("--uid"), std::string::npos) << r.err;
    }
}

TEST_P(Launcher, CommandStartsWithEverySignalAtItsDefault) {
    const json::object r = report();
    EXPECT_EQ(r.at("sig_ignored").as_string(), "0000000000000000");
    EXPECT_EQ(r.at("sig_blocked").as_string(), "0000000000000000");
}

TEST_P(Launcher, OnlyStandardFdsReachTheCommand) {
    RunOptions o;
    o.leak_fds = true;
    RunResult r = run(with_probe({"--", "/probe", "report"}), o);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json::value out = r.out_json();
    const json::array& fds = out.at("fds").as_array();
    ASSERT_EQ(fds.size(), 3u) << json::serialize(fds);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(fds[static_cast<std::size_t>(i)].as_int64(), i);
}

TEST_P(Launcher, InitCannotBeTracedKilledOrInspected) {
    const json::object r = report({"--hostname", "no-leak-host"});
    // /proc/1/cmdline is world-readable: it must not show the launcher's arguments.
    EXPECT_EQ(std::string(r.at("init_cmdline").as_string()).find("no-leak-host"),
              std::string::npos);
    EXPECT_FALSE(ok(r, "ptrace_init"));
    EXPECT_FALSE(ok(r, "open_init_fd"));
    EXPECT_EQ(r.at("dumpable").as_int64(), 1);   // the command itself stays debuggable
    EXPECT_TRUE(r.at("sid_is_self").as_bool());  // its own session: no controlling terminal
}

// --- seccomp: each denial, and a control showing the call works without the filter ---------

TEST_P(Launcher, SeccompDeniesNamespacesMountsAndKernelInterfaces) {
    const json::object r = report();
    EXPECT_EQ(err(r, "unshare_user"), EPERM);
    EXPECT_EQ(err(r, "unshare_mount"), EPERM);
    EXPECT_EQ(err(r, "unshare_net"), EPERM);
    EXPECT_EQ(err(r, "clone_newuser"), EPERM);
    EXPECT_EQ(err(r, "clone3"), ENOSYS);
    EXPECT_EQ(err(r, "setns"), EPERM);
    EXPECT_EQ(err(r, "mount_tmpfs"), EPERM);
    EXPECT_EQ(err(r, "fsopen"), ENOSYS);
    EXPECT_EQ(err(r, "keyctl"), EPERM);
    EXPECT_EQ(err(r, "add_key"), EPERM);
    EXPECT_EQ(err(r, "bpf"), EPERM);
    EXPECT_EQ(err(r, "perf_event_open"), EPERM);
    EXPECT_EQ(err(r, "userfaultfd"), EPERM);
    EXPECT_EQ(err(r, "io_uring_setup"), EPERM);
    EXPECT_EQ(err(r, "open_by_handle_at"), EPERM);
    EXPECT_EQ(err(r, "chroot"), EPERM);
    EXPECT_EQ(err(r, "tiocsti"), EPERM);
    EXPECT_EQ(err(r, "tiocsti_high_bits"), EPERM);  // the filter compares the low 32 bits
}

TEST_P(Launcher, WithoutSeccompTheSameCallsWork) {
    const json::object r = report({"--seccomp", "none"});
    EXPECT_EQ(r.at("seccomp").as_string(), "0");
    EXPECT_TRUE(ok(r, "unshare_user")) << err(r, "unshare_user");
    EXPECT_TRUE(ok(r, "keyctl")) << err(r, "keyctl");
    EXPECT_TRUE(ok(r, "add_key")) << err(r, "add_key");
    EXPECT_TRUE(ok(r, "io_uring_setup")) << err(r, "io_uring_setup");
    EXPECT_NE(err(r, "clone3"), ENOSYS);
    EXPECT_NE(err(r, "fsopen"), ENOSYS);
}

TEST_P(Launcher, ForeignSyscallAbisAreKilled) {
    json::object r = report();
    EXPECT_EQ(killed_by(r, "x32_syscall"), SIGSYS);
    EXPECT_EQ(killed_by(r, "i386_syscall"), SIGSYS);
    r = report({"--seccomp", "none"});
    EXPECT_EQ(killed_by(r, "x32_syscall"), 0);
    EXPECT_EQ(killed_by(r, "i386_syscall"), 0);
}

TEST_P(Launcher, HostProcessesCannotBeTraced) {
    const json::object r = report({}, {"--host-pid", std::to_string(getpid())});
    EXPECT_FALSE(ok(r, "ptrace_host"));
    EXPECT_LT(r.at("proc_pids").as_int64(), 10);  // /proc shows the sandbox's processes only
}

TEST_P(Launcher, TiocstiCannotReachTheCallersTerminalEvenWithoutSeccomp) {
    int master = -1, slave = -1;
    ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
    if (rootless()) {
        ASSERT_EQ(fchown(slave, kTestUid, kTestUid), 0);
    }
    for (const char* seccomp : {"default", "none"}) {
        RunOptions o;
        o.stdin_fd = slave;
        RunResult r = run(with_probe({"--seccomp", seccomp, "--", "/probe", "tiocsti"}), o);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_FALSE(r.out_json().at("ok").as_bool()) << seccomp;
        int pending = -1;
        ASSERT_EQ(ioctl(slave, FIONREAD, &pending), 0);
        EXPECT_EQ(pending, 0) << "a character was injected with seccomp " << seccomp;
    }
    close(master);
    close(slave);
}

// --- filesystem ------------------------------------------------------------------------------

TEST_P(Launcher, HostFilesOutsideTheBindsAreInvisible) {
    const json::object r =
        report({}, {"--path", "/root", "--path", "/home", "--path", "/etc/shadow", "--path", "/var",
                    "--path", "/sys", "--path", "/boot", "--path", "/etc/hostname", "--path",
                    "/usr/bin/env", "--path", "/etc/passwd"});
    const json::object& v = r.at("visible").as_object();
    for (const char* hidden :
         {"/root", "/home", "/etc/shadow", "/var", "/sys", "/boot", "/etc/hostname"}) {
        EXPECT_FALSE(v.at(hidden).as_bool()) << hidden;
    }
    EXPECT_TRUE(v.at("/usr/bin/env").as_bool());
    EXPECT_TRUE(v.at("/etc/passwd").as_bool());
}

TEST_P(Launcher, RootIsReadOnlyAndTmpIsWritable) {
    const json::object r = report();
    EXPECT_EQ(err(r, "write_root"), EROFS);
    EXPECT_EQ(err(r, "write_usr"), EROFS);
    // An existing file the sandbox user does not own fails the permission check first (EACCES);
    // one it owns (rootless: /etc/passwd was written by init, as the sandbox user) hits EROFS.
    EXPECT_EQ(err(r, "write_etc"), rootless() ? EROFS : EACCES);
    EXPECT_TRUE(ok(r, "write_tmp")) << err(r, "write_tmp");
    EXPECT_FALSE(ok(r, "mknod"));
}

TEST_P(Launcher, WorkspaceIsWritableAndOwnedByTheSandboxUser) {
    const uid_t owner = rootless() ? kTestUid : 12345;
    TempDir ws(owner);
    std::vector<std::string> args = with_probe({"--workspace", ws.path()});
    if (!rootless()) args.insert(args.end(), {"--uid", "12345", "--gid", "12345"});
    args.insert(args.end(), {"--", "/probe", "write", "/workspace/made-inside"});
    RunResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out_json().at("ok").as_bool()) << r.out;
    struct stat st {};
    ASSERT_EQ(stat((ws.path() + "/made-inside").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, owner);
    // And the command starts there.
    r = run(with_probe({"--workspace", ws.path(), "--", "/probe", "report"}));
    EXPECT_EQ(r.out_json().at("cwd").as_string(), "/workspace");
}

TEST_P(Launcher, SymlinksInsideTheRootCannotRedirectMountsToTheHost) {
    // /evil -> /etc inside the sandbox; a tmpfs at /evil/nbx-escape must land in the sandbox's
    // /etc, never on the host's.
    const std::string target = "/etc/" + unique_name("nbx-escape");
    RunResult r = run({"--symlink", "/etc", "/evil", "--tmpfs",
                       "/evil/" + fs::path(target).filename().string(), "--", "/bin/sh", "-c",
                       "test -d " + target});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(target));
}

TEST_P(Launcher, AFileCanBeBoundOverAFileOfTheDefaultRoot) {
    TempDir dir;
    std::ofstream(dir.path() + "/resolv.conf") << "nameserver 192.0.2.53\n";
    chmod((dir.path() + "/resolv.conf").c_str(), 0644);
    RunResult r = run({"--ro-bind", dir.path() + "/resolv.conf", "/etc/resolv.conf", "--",
                       "/bin/cat", "/etc/resolv.conf"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "nameserver 192.0.2.53\n");
}

TEST_P(Launcher, MountsApplyInOrder) {
    TempDir a(rootless() ? std::optional<uid_t>(kTestUid) : std::nullopt);
    std::ofstream(a.path() + "/marker") << "from-bind";
    if (rootless()) {
        ASSERT_EQ(chown((a.path() + "/marker").c_str(), kTestUid, kTestUid), 0);
    }
    // A tmpfs after the bind hides it; a bind after the tmpfs shows through.
    RunResult hidden = run({"--ro-bind", a.path(), "/data", "--tmpfs", "/data", "--", "/bin/sh",
                            "-c", "test ! -e /data/marker"});
    EXPECT_EQ(hidden.exit_code, 0) << hidden.err;
    RunResult shown =
        run({"--tmpfs", "/data", "--ro-bind", a.path(), "/data", "--", "/bin/cat", "/data/marker"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(shown.out, "from-bind");
}

// --- network -------------------------------------------------------------------------------

TEST_P(Launcher, OnlyLoopbackExists) {
    const json::object r = report();
    const json::array& ifs = r.at("interfaces").as_array();
    ASSERT_EQ(ifs.size(), 1u) << json::serialize(ifs);
    EXPECT_EQ(ifs[0].as_string(), "lo");
    EXPECT_EQ(err(r, "connect_external"), ENETUNREACH);
    EXPECT_TRUE(ok(r, "loopback_connect")) << err(r, "loopback_connect");
    // Control: with the host network the same probe sees more than loopback.
    const json::object shared = report({"--share-net"});
    EXPECT_GT(shared.at("interfaces").as_array().size(), 1u);
}

// --- processes ---------------------------------------------------------------------------

TEST_P(Launcher, DaemonsDieWithTheCommand) {
    const std::string name = unique_name("nbxd");
    // Inside, the daemon runs (a positive control), and the command exits while it does.
    RunResult r =
        run(with_probe({"--", "/bin/sh", "-c",
                        "/probe daemon " + name + " && sleep 0.2 && cat /proc/[0-9]*/comm"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(name), std::string::npos) << "the daemon never ran: " << r.out;
    EXPECT_TRUE(processes_named(name).empty()) << "daemon " << name << " outlived its sandbox";
}

TEST_P(Launcher, TimeoutKillsTheWholeTreeAndSaysSo) {
    const std::string name = unique_name("nbxt");
    RunResult r = run(with_probe(
        {"--timeout", "0.5", "--", "/bin/sh", "-c", "/probe daemon " + name + "; sleep 30"}));
    EXPECT_EQ(r.exit_code, 137) << r.err;
    EXPECT_LT(r.seconds, 5.0);
    const json::object e = r.exited();
    EXPECT_TRUE(e.at("timed_out").as_bool());
    EXPECT_EQ(e.at("signal").as_string(), "SIGKILL");
    EXPECT_TRUE(processes_named(name).empty());
}

// Starts nestbox in the background (from a parent process when `via_parent`) running a daemon
// named `name`; returns the pid of nestbox or of its parent, once the daemon runs.
pid_t start_in_background(const std::vector<std::string>& args, bool rootless, bool via_parent,
                          const std::string& name) {
    std::vector<std::string> argv = {binaries().nestbox};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv = exec_argv(argv);
    auto exec_nestbox = [&] {
        if (rootless && (setresgid(kTestUid, kTestUid, kTestUid) != 0 ||
                         setresuid(kTestUid, kTestUid, kTestUid) != 0)) {
            _exit(99);
        }
        const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        dup2(null, 1);
        dup2(null, 2);
        execv(cargv[0], cargv.data());
        _exit(98);
    };
    const pid_t pid = fork();
    if (pid == 0) {
        if (!via_parent) exec_nestbox();
        if (fork() == 0) exec_nestbox();  // nestbox's parent stays, to be killed by the test
        for (;;)
            pause();
    }
    for (int i = 0; i < 200 && processes_named(name).empty(); ++i)
        std::this_thread::sleep_for(20ms);
    return pid;
}

std::vector<std::string> daemon_then_sleep(const std::string& name) {
    return with_probe({"--", "/bin/sh", "-c", "/probe daemon " + name + "; sleep 30"});
}

bool gone_soon(const std::string& name) {
    for (int i = 0; i < 150 && !processes_named(name).empty(); ++i)
        std::this_thread::sleep_for(20ms);
    return processes_named(name).empty();
}

TEST_P(Launcher, SandboxDiesWithTheLaunchersParent) {
    const std::string name = unique_name("nbxp");
    const pid_t parent = start_in_background(daemon_then_sleep(name), rootless(), true, name);
    ASSERT_FALSE(processes_named(name).empty()) << "the daemon never started";
    kill(parent, SIGKILL);
    waitpid(parent, nullptr, 0);
    EXPECT_TRUE(gone_soon(name));
}

// The sandbox's init changes uid, which makes the kernel forget its parent-death signal; killing
// the launcher with SIGKILL (no chance to clean up) must still end the sandbox.
TEST_P(Launcher, SandboxDiesWithAKilledLauncher) {
    const std::string name = unique_name("nbxk");
    const pid_t launcher = start_in_background(daemon_then_sleep(name), rootless(), false, name);
    ASSERT_FALSE(processes_named(name).empty()) << "the daemon never started";
    kill(launcher, SIGKILL);
    waitpid(launcher, nullptr, 0);
    EXPECT_TRUE(gone_soon(name));
}

// --- exit status ---------------------------------------------------------------------------

TEST_P(Launcher, ExitStatusIsTheCommands) {
    EXPECT_EQ(run({"--", "/bin/sh", "-c", "exit 3"}).exit_code, 3);
    RunResult sig = run({"--", "/bin/sh", "-c", "kill -TERM $$"});
    EXPECT_EQ(sig.exit_code, 128 + SIGTERM);
    EXPECT_EQ(sig.exited().at("signal").as_string(), "SIGTERM");
    RunResult missing = run({"--", "no-such-command"});
    EXPECT_EQ(missing.exit_code, 127);
    EXPECT_NE(missing.err.find("no-such-command"), std::string::npos);
    EXPECT_EQ(run({"--", "/etc"}).exit_code, 126);
}

TEST_P(Launcher, SetupErrorsAreReportedWithTheirStep) {
    RunResult r = run({"--bind", "/no/such/source", "/x", "--", "true"});
    EXPECT_EQ(r.exit_code, 125);
    const json::object* e = r.event("error");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->at("step").as_string(), "mounts");
    EXPECT_NE(std::string(e->at("message").as_string()).find("/no/such/source"), std::string::npos);
    EXPECT_TRUE(r.err.empty() || r.err.find("warning") == std::string::npos);
}

TEST_P(Launcher, ADenyByDefaultProfileEndsTheCommandNotInit) {
    TempDir dir;
    const std::string profile = dir.path() + "/deny-all.json";
    std::ofstream(profile) << R"({"defaultAction": "SCMP_ACT_KILL_PROCESS",
                                 "syscalls": [{"names": ["execve"], "action": "SCMP_ACT_ALLOW"}]})";
    chmod(profile.c_str(), 0644);
    RunResult r = run({"--seccomp", profile, "--", "/bin/true"});
    EXPECT_EQ(r.exit_code, 128 + SIGSYS) << r.err;
    EXPECT_EQ(r.exited().at("signal").as_string(), "SIGSYS");
}

TEST_P(Launcher, StatusFdReportsStartAndExit) {
    RunResult r = run({"--", "/bin/true"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.events.size(), 2u);
    EXPECT_EQ(r.events[0].at("event").as_string(), "started");
    EXPECT_GT(r.events[0].at("pid").as_int64(), 0);
    const json::object& e = r.events[1];
    EXPECT_EQ(e.at("event").as_string(), "exited");
    EXPECT_EQ(e.at("exit_code").as_int64(), 0);
    EXPECT_TRUE(e.at("signal").is_null());
    EXPECT_FALSE(e.at("timed_out").as_bool());
    EXPECT_FALSE(e.at("oom_killed").as_bool());
    EXPECT_TRUE(e.at("usage").as_object().contains("cpu_ms"));
    EXPECT_TRUE(e.at("usage").as_object().contains("memory_peak_bytes"));
}

// --- environment ---------------------------------------------------------------------------

TEST_P(Launcher, EnvironmentIsCleanUnlessAskedOtherwise) {
    setenv("NESTBOX_TEST_SECRET", "s3cret", 1);
    json::object r = report({"--setenv", "JAVA_OPTS", "-Xmx1g", "--unsetenv", "LANG"});
    std::string env;
    for (const auto& e : r.at("env").as_array())
        env += std::string(e.as_string()) + "\n";
    EXPECT_EQ(env.find("NESTBOX_TEST_SECRET"), std::string::npos) << env;
    EXPECT_NE(env.find("PATH=/usr/local/bin:/usr/bin:/bin\n"), std::string::npos) << env;
    EXPECT_NE(env.find("JAVA_OPTS=-Xmx1g\n"), std::string::npos) << env;
    EXPECT_EQ(env.find("LANG="), std::string::npos) << env;
    r = report({"--inherit-env"});
    env.clear();
    for (const auto& e : r.at("env").as_array())
        env += std::string(e.as_string()) + "\n";
    EXPECT_NE(env.find("NESTBOX_TEST_SECRET=s3cret"), std::string::npos);
    unsetenv("NESTBOX_TEST_SECRET");
}

TEST_P(Launcher, HostnameIsTheSandboxs) {
    EXPECT_EQ(report().at("hostname").as_string(), "nestbox");
    EXPECT_EQ(report({"--hostname", "agent-7"}).at("hostname").as_string(), "agent-7");
}

// --- bad input ------------------------------------------------------------------------------

struct BadInput {
    std::vector<std::string> args;
    std::string must_mention;
};

TEST_P(Launcher, BadInputIsRefusedAndLeavesNothingBehind) {
    TempDir policy_dir;
    const std::string nul_policy = policy_dir.path() + "/nul.json";
    std::ofstream(nul_policy) << R"({"mounts":[{"type":"tmpfs","dest":"/a\u0000b"}]})";
    chmod(policy_dir.path().c_str(), 0755);
    chmod(nul_policy.c_str(), 0644);
    const std::vector<BadInput> cases = {
        {{"--bind", "/no/such/path", "/x", "--", "true"}, "/no/such/path"},
        {{"--bind", "/usr", "relative", "--", "true"}, "relative"},
        {{"--policy", nul_policy, "--", "true"}, "NUL"},
        {{"--frobnicate", "--", "true"}, "--frobnicate"},
        {{"--", "--bind", "/a", "/b"}, "--bind"},
        {{"--memory", "12Q", "--", "true"}, "12Q"},
        {{"--tmpfs", "/x", "--size", "lots", "--", "true"}, "lots"},
        {{"--pids", "1", "--", "true"}, "--pids"},
        {{"--timeout", "-3", "--", "true"}, "--timeout"},
        {{"--hostname", "bad host", "--", "true"}, "bad host"},
        {{"--chdir", "/no/such/dir", "--", "true"}, "/no/such/dir"},
        {{"--seccomp", "/no/such/profile.json", "--", "true"}, "profile.json"},
    };
    for (const BadInput& c : cases) {
        RunResult r = run(c.args);
        EXPECT_EQ(r.exit_code, 125) << c.args[0] << ": " << r.err;
        EXPECT_NE(r.err.find(c.must_mention), std::string::npos)
            << "message should name " << c.must_mention << ": " << r.err;
        EXPECT_TRUE(cgroups_of(r.pid).empty()) << c.args[0];
    }
}

// --- limits ----------------------------------------------------------------------------------

class Limits : public Launcher {
  protected:
    void SetUp() override {
        Launcher::SetUp();
        if (rootless()) GTEST_SKIP() << "cgroups are not delegated to the test user";
    }
};

TEST_P(Limits, ForkBombStopsAtThePidsLimit) {
    RunResult r = run(with_probe({"--pids", "16", "--", "/probe", "forkbomb"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json::value out = r.out_json();
    EXPECT_LT(out.at("forked").as_int64(), 16);
    EXPECT_EQ(out.at("errno").as_int64(), EAGAIN);
    EXPECT_TRUE(cgroups_of(r.pid).empty());
}

TEST_P(Limits, MemoryBombIsOomKilledAndReported) {
    RunResult r = run(with_probe({"--memory", "32M", "--", "/probe", "membomb"}));
    EXPECT_EQ(r.exit_code, 137) << r.err << r.out;
    const json::object e = r.exited();
    EXPECT_TRUE(e.at("oom_killed").as_bool());
    EXPECT_EQ(e.at("signal").as_string(), "SIGKILL");
    EXPECT_FALSE(e.at("timed_out").as_bool());
    EXPECT_TRUE(cgroups_of(r.pid).empty());
}

// Any signal that would end the launcher is caught: the sandbox ends and its cgroup is removed.
TEST_P(Limits, SignalsToTheLauncherEndTheSandboxAndRemoveItsCgroup) {
    for (int sig : {SIGTERM, SIGUSR1, SIGALRM, SIGSEGV}) {  // SIGSEGV sent by another process
        const std::string name = unique_name("nbxs");
        const pid_t launcher =
            start_in_background(with_probe({"--memory", "64M", "--", "/bin/sh", "-c",
                                            "/probe daemon " + name + "; sleep 30"}),
                                rootless(), false, name);
        ASSERT_FALSE(processes_named(name).empty()) << "the daemon never started";
        ASSERT_FALSE(cgroups_of(launcher).empty());
        kill(launcher, sig);
        int status = 0;
        waitpid(launcher, &status, 0);
        EXPECT_TRUE(WIFEXITED(status))
            << "signal " << sig << " killed the launcher before it cleaned up";
        EXPECT_TRUE(gone_soon(name)) << sig;
        EXPECT_TRUE(cgroups_of(launcher).empty()) << sig;
    }
}

TEST_P(Limits, UsageIsReported) {
    RunResult r =
        run(with_probe({"--memory", "256M", "--pids", "64", "--", "/probe", "busy", "0.3"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json::object e = r.exited();
    EXPECT_EQ(e.at("cgroup").as_string().size(), 2u);
    EXPECT_GE(e.at("usage").at("cpu_ms").as_int64(), 200);
    EXPECT_GT(e.at("usage").at("memory_peak_bytes").as_int64(), 0);
}

TEST_P(Limits, CpuLimitSlowsABusyLoop) {
    // 20% of a core for 1 s of wall time: well under the unrestricted ~1000 ms of CPU.
    RunResult r = run(with_probe({"--cpu", "20", "--", "/probe", "busy", "1"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto cpu = r.exited().at("usage").at("cpu_ms").as_int64();
    EXPECT_LT(cpu, 450) << "a 20% limit let the loop use " << cpu << " ms in 1 s";
    EXPECT_GT(cpu, 80);
}

TEST_P(Launcher, LimitsTheHostCannotEnforceAreErrorsUnlessBestEffort) {
    if (!rootless()) GTEST_SKIP() << "root can create cgroups here";
    RunResult strict = run({"--memory", "64M", "--", "true"});
    EXPECT_EQ(strict.exit_code, 125);
    EXPECT_NE(strict.err.find("cgroup"), std::string::npos) << strict.err;
    // With --status-fd the warning is in the exited event and stays out of the command's stderr;
    // without it, stderr is the only place to say it.
    RunResult lax = run({"--memory", "64M", "--limits", "best-effort", "--", "true"});
    EXPECT_EQ(lax.exit_code, 0) << lax.err;
    EXPECT_EQ(lax.err.find("warning"), std::string::npos) << lax.err;
    EXPECT_FALSE(lax.exited().at("warnings").as_array().empty());
    RunOptions no_status;
    no_status.status_fd = false;
    RunResult plain = run({"--memory", "64M", "--limits", "best-effort", "--", "true"}, no_status);
    EXPECT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_NE(plain.err.find("warning"), std::string::npos);
}

// --- policy file --------------------------------------------------------------------------

TEST_P(Launcher, PolicyFileAppliesAndOptionsOverrideIt) {
    TempDir dir;
    const std::string policy = dir.path() + "/policy.json";
    std::ofstream(policy)
        << R"({"hostname":"from-file","mounts":[{"type":"tmpfs","dest":"/scratch"}],
                               "env":{"set":{"FROM_FILE":"1"}}})";
    chmod(policy.c_str(), 0644);
    const json::object r =
        report({"--policy", policy, "--hostname", "from-cli"}, {"--path", "/scratch"});
    EXPECT_EQ(r.at("hostname").as_string(), "from-cli");
    EXPECT_TRUE(r.at("visible").at("/scratch").as_bool());
    std::string env;
    for (const auto& e : r.at("env").as_array())
        env += std::string(e.as_string()) + "\n";
    EXPECT_NE(env.find("FROM_FILE=1"), std::string::npos);
}

TEST_P(Launcher, LandlockConfinesWritesToWritableMounts) {
    TempDir ws(rootless() ? std::optional<uid_t>(kTestUid) : std::nullopt);
    if (!rootless()) chmod(ws.path().c_str(), 0777);
    RunResult r = run({"--landlock", "--workspace", ws.path(), "--", "/bin/sh", "-c",
                       "echo ok > /workspace/f && echo ok > /tmp/f && cat /workspace/f"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ok\n");
}

INSTANTIATE_TEST_SUITE_P(Modes, Launcher, testing::Values(Mode::Root, Mode::Rootless), mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, Limits, testing::Values(Mode::Root, Mode::Rootless), mode_name);

}  // namespace
}  // namespace nestbox::test
