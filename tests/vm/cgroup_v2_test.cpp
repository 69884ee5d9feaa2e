// cgroup v2 enforcement, run inside the qemu VM that tests/vm/run-vm.sh boots: a kernel with
// cgroup2 alone at /sys/fs/cgroup. Each test runs the real nestbox on the real probe, attempts
// what the limit forbids, and checks the kernel stopped it and the exit event said so. The
// runner sits in the leaf group /tests/runner (init.sh puts it there), so nestbox's default
// parent is /tests/nestbox.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <future>
#include <iostream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/harness.hpp"
#include "tests/vm/vm_cgroups.hpp"

namespace nestbox::test {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kDefaultParent = kCgroupRoot + "/tests/nestbox";

std::int64_t usage(const RunResult& r, const char* key) {
    const json::value& v = r.exited().at("usage").at(key);
    return v.is_null() ? -1 : v.as_int64();
}

// Runs nestbox in the background; `watch` is called every 20 ms while it runs (with the
// sandbox groups that exist at that moment) until it returns true.
RunResult run_watching(const std::vector<std::string>& args,
                       const std::function<bool(const std::vector<std::string>&)>& watch,
                       const RunOptions& options = {}) {
    auto run = std::async(std::launch::async, [&] { return run_nestbox(args, options); });
    while (run.wait_for(20ms) == std::future_status::timeout) {
        if (watch(sandbox_groups())) break;
    }
    return run.get();
}

// No test may leave a group behind, even one that fails half-way: checked once all have run.
class NoGroupsLeft : public testing::Environment {
  public:
    void TearDown() override {
        EXPECT_EQ(sandbox_groups(), std::vector<std::string>{}) << "sandbox groups left behind";
    }
};
const auto* const kNoGroupsLeft = testing::AddGlobalTestEnvironment(new NoGroupsLeft);

// --- the VM itself: if this fails, no other result here says anything about cgroup v2 --------

TEST(Vm, HasCgroupV2AloneAtSysFsCgroup) {
    struct statfs st {};
    ASSERT_EQ(statfs(kCgroupRoot.c_str(), &st), 0);
    EXPECT_EQ(st.f_type, CGROUP2_SUPER_MAGIC);
    const std::string mounts = read_text("/proc/self/mounts");
    EXPECT_EQ(mounts.find(" cgroup "), std::string::npos) << "a cgroup v1 mount:\n" << mounts;
    for (const char* c : {"memory", "cpu", "pids"}) {
        EXPECT_NE(read_text(kCgroupRoot + "/cgroup.controllers").find(c), std::string::npos) << c;
    }
    EXPECT_EQ(read_text("/proc/self/cgroup"), "0::/tests/runner\n");
}

// --- limits ------------------------------------------------------------------------------------

TEST(Limits, MemoryBombIsOomKilledAndReported) {
    RunResult r = run_nestbox(with_probe({"--memory", "64M", "--", "/probe", "membomb"}));
    EXPECT_EQ(r.exit_code, 137) << r.err << r.out;
    const json::object e = r.exited();
    ASSERT_FALSE(e.empty()) << r.err;
    EXPECT_EQ(e.at("cgroup").as_string(), "v2");
    EXPECT_TRUE(e.at("oom_killed").as_bool());
    EXPECT_EQ(e.at("signal").as_string(), "SIGKILL");
    EXPECT_FALSE(e.at("timed_out").as_bool());
    // memory.peak: the bomb got close to the limit, and not past it.
    EXPECT_GT(usage(r, "memory_peak_bytes"), 48 << 20);
    EXPECT_LE(usage(r, "memory_peak_bytes"), 64 << 20);
    EXPECT_TRUE(cgroups_of(r.pid).empty());

    // Control: a higher limit lets the same bomb grow past 64M, so it was this limit that held.
    r = run_nestbox(with_probe({"--memory", "128M", "--", "/probe", "membomb"}));
    EXPECT_TRUE(r.exited().at("oom_killed").as_bool()) << r.err;
    EXPECT_GT(usage(r, "memory_peak_bytes"), 96 << 20);
}

TEST(Limits, ForkBombStopsAtThePidsLimit) {
    // The sandbox's init and the probe count against the limit too.
    for (const int limit : {32, 64}) {
        RunResult r =
            run_nestbox(with_probe({"--pids", std::to_string(limit), "--", "/probe", "forkbomb"}));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const json::value out = r.out_json();
        EXPECT_EQ(out.at("forked").as_int64(), limit - 2) << "--pids " << limit;
        EXPECT_EQ(out.at("errno").as_int64(), EAGAIN);
        EXPECT_EQ(r.exited().at("cgroup").as_string(), "v2");
        EXPECT_TRUE(cgroups_of(r.pid).empty());
    }
}

TEST(Limits, CpuLimitHoldsABusyLoopNearItsShare) {
    // Calibrated against an unlimited run in the same VM: TCG is slow, but its clock is the
    // host's, so a busy loop of S seconds uses about S seconds of CPU when nothing holds it.
    constexpr double kSeconds = 2.0;
    const std::string busy = std::to_string(kSeconds);
    RunResult free_run = run_nestbox(with_probe({"--pids", "64", "--", "/probe", "busy", busy}));
    ASSERT_EQ(free_run.exit_code, 0) << free_run.err;
    RunResult held = run_nestbox(with_probe({"--cpu", "20", "--", "/probe", "busy", busy}));
    ASSERT_EQ(held.exit_code, 0) << held.err;
    EXPECT_EQ(held.exited().at("cgroup").as_string(), "v2");
    const double free_share = static_cast<double>(usage(free_run, "cpu_ms")) / (kSeconds * 1000);
    const double held_share = static_cast<double>(usage(held, "cpu_ms")) / (kSeconds * 1000);
    std::cout << "cpu share of a " << kSeconds << " s busy loop: unlimited " << free_share
              << ", --cpu 20 " << held_share << "\n";
    EXPECT_GT(free_share, 0.6) << "the calibration run could not get a core";
    EXPECT_GT(held_share, 0.12);
    EXPECT_LT(held_share, 0.30);
}

TEST(Limits, UsageComesFromTheV2Group) {
    // What only the group sees: a tmpfs file is charged to it but is in no process's RSS, and a
    // busy process killed at the timeout was never reaped, so its time is in no rusage. 16 MiB
    // are written well within the timeout even on a loaded host (64 MiB were not, under TCG
    // with the host's cores busy: the timeout cut dd short at a peak of 35 MiB).
    RunResult r = run_nestbox(
        with_probe({"--memory", "256M", "--timeout", "2", "--", "/bin/sh", "-c",
                    "dd if=/dev/zero of=/tmp/f bs=1M count=16 && /probe busy 60 & sleep 60"}));
    EXPECT_EQ(r.exit_code, 137) << r.err;
    const json::object e = r.exited();
    ASSERT_FALSE(e.empty()) << r.err;
    EXPECT_EQ(e.at("cgroup").as_string(), "v2");
    EXPECT_TRUE(e.at("timed_out").as_bool());
    EXPECT_FALSE(e.at("oom_killed").as_bool());
    EXPECT_TRUE(e.at("warnings").as_array().empty());
    EXPECT_GE(usage(r, "cpu_ms"), 1000);
    EXPECT_LE(usage(r, "cpu_ms"), 2500);
    EXPECT_GE(usage(r, "memory_peak_bytes"), 16 << 20) << r.out << r.err;
    EXPECT_LT(usage(r, "memory_peak_bytes"), 256 << 20);
}

TEST(Limits, TimeoutKillsASetsidDaemonThroughTheGroup) {
    const std::string name = unique_name("nbxd");
    std::string daemon_group;
    RunResult r = run_watching(with_probe({"--timeout", "2", "--pids", "64", "--", "/bin/sh", "-c",
                                           "/probe daemon " + name + "; sleep 60"}),
                               [&](const std::vector<std::string>&) {
                                   const std::vector<pid_t> daemons = processes_named(name);
                                   if (daemons.empty()) return false;
                                   daemon_group =
                                       read_text("/proc/" + std::to_string(daemons[0]) + "/cgroup");
                                   return true;
                               });
    EXPECT_EQ(r.exit_code, 137) << r.err;
    EXPECT_TRUE(r.exited().at("timed_out").as_bool());
    EXPECT_EQ(r.exited().at("signal").as_string(), "SIGKILL");
    // Positive control: the daemon ran, in the sandbox's own group, where cgroup.kill reaches.
    EXPECT_TRUE(daemon_group.starts_with("0::/tests/nestbox/nbx-" + std::to_string(r.pid) + "-"))
        << "the daemon was seen in '" << daemon_group << "'";
    EXPECT_TRUE(processes_named(name).empty()) << "daemon " << name << " survived the timeout";
    EXPECT_TRUE(cgroups_of(r.pid).empty());
}

// --- nothing left behind -----------------------------------------------------------------------

TEST(Cleanup, TheGroupExistsWhileTheSandboxRunsAndGoesAfter) {
    std::vector<std::string> seen;
    RunResult r = run_watching({"--memory", "64M", "--", "/bin/sleep", "1"},
                               [&](const std::vector<std::string>& groups) {
                                   seen = groups;
                                   return !groups.empty();
                               });
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_TRUE(seen[0].starts_with(kDefaultParent + "/nbx-" + std::to_string(r.pid) + "-"))
        << seen[0];
    EXPECT_FALSE(fs::exists(seen[0]));
}

TEST(Cleanup, LauncherErrorsLeaveNoGroup) {
    struct Case {
        std::vector<std::string> args;
        std::string must_mention;
    };
    const std::vector<Case> failing = {
        {{"--memory", "64M", "--frobnicate", "--", "true"}, "--frobnicate"},          // the parser
        {{"--memory", "64M", "--bind", "/no/such", "/x", "--", "true"}, "/no/such"},  // mounting
        {{"--memory", "64M", "--chdir", "/no/such", "--", "true"}, "/no/such"},  // late, inside
        {{"--pids", "16", "--seccomp", "/no/such.json", "--", "true"}, "/no/such.json"},
    };
    for (const Case& c : failing) {
        RunResult r = run_nestbox(c.args);
        EXPECT_EQ(r.exit_code, 125) << c.args[2] << ": " << r.err;
        EXPECT_NE(r.err.find(c.must_mention), std::string::npos) << r.err;
        EXPECT_TRUE(sandbox_groups().empty()) << c.args[2];
    }
    // A command that is not there is the command's failure, not the launcher's; same rule.
    RunResult r = run_nestbox({"--memory", "64M", "--", "/no/such/command"});
    EXPECT_EQ(r.exit_code, 127) << r.err;
    EXPECT_TRUE(sandbox_groups().empty());
}

// --- the sandbox cannot leave its group ------------------------------------------------------

TEST(Escape, SandboxCannotMoveOutOfItsGroup) {
    // The whole cgroup filesystem, writable, inside the sandbox: only the kernel's checks
    // (the sandbox user's permissions, the cgroup namespace's boundary) stand in the way.
    for (const char* target : {"/cg", "/cg/tests/runner", "/cg/tests/nestbox"}) {
        RunResult r = run_nestbox(with_probe({"--memory", "64M", "--bind", kCgroupRoot, "/cg", "--",
                                              "/probe", "cgroup-escape", target}));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_FALSE(r.out_json().at("ok").as_bool()) << target << ": " << r.out;
    }
    // Nor raise its own limit.
    RunResult r = run_nestbox(with_probe(
        {"--memory", "64M", "--bind", kCgroupRoot, "/cg", "--", "/bin/sh", "-c",
         "for f in /cg/tests/nestbox/nbx-*/memory.max; do /probe write $f; cat $f; done"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"ok\":false"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::to_string(64 << 20)), std::string::npos) << r.out;

    // Control: the same probe, run by root outside any sandbox, moves itself.
    const std::string scratch = kCgroupRoot + "/escape-control";
    ASSERT_TRUE(fs::create_directory(scratch));
    FILE* control = popen((binaries().probe + " cgroup-escape " + scratch).c_str(), "r");
    ASSERT_NE(control, nullptr);
    char line[256] = {};
    const bool got = fgets(line, sizeof line, control) != nullptr;
    pclose(control);
    remove_group(scratch);
    ASSERT_TRUE(got);
    EXPECT_TRUE(json::parse(line).at("ok").as_bool()) << line;
}

// --- a container: the caller is in a cgroup namespace whose root holds processes ---------------

// A container's cgroup, seen from the outside. The launcher runs as a process of that container
// would: moved into the group, in a new cgroup and mount namespace with cgroup2 mounted again,
// so that the group is its namespace's root and its /sys/fs/cgroup.
class Container : public testing::Test {
  protected:
    void SetUp() override {
        // What a runtime does for its containers: the controllers reach the container's group.
        ASSERT_TRUE(write_text(kCgroupRoot + "/cgroup.subtree_control", "+memory +cpu +pids"));
        path_ = kCgroupRoot + "/" + unique_name("ctr-");
        ASSERT_TRUE(fs::create_directory(path_));
    }
    void TearDown() override { remove_tree(path_); }

    // `into_leaf`: like nestboxd will, the process first moves from the namespace's root into
    // a leaf group of its own (/init), so the root holds no process.
    RunOptions inside(bool into_leaf, bool remount = true) const {
        RunOptions o;
        o.before_exec = [path = path_, into_leaf, remount] {
            if (!enter_container(path, remount)) return false;
            if (into_leaf) {
                const std::string leaf = remount ? kCgroupRoot + "/init" : path + "/init";
                if ((::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) ||
                    !write_text(leaf + "/cgroup.procs", "0")) {
                    std::fprintf(stderr, "entering the container: joining %s: %s\n", leaf.c_str(),
                                 strerrordesc_np(errno));
                    return false;
                }
            }
            return true;
        };
        return o;
    }

    void expect_limits_work(const std::vector<std::string>& parent_option,
                            const std::string& parent, bool remount = true) const;

    std::string path_;
};

TEST_F(Container, LimitsNeedTheRootsProcessesInALeaf) {
    // The launcher itself holds the namespace's root: the kernel will not let that group hand
    // controllers to children, and the launcher says why, for the default parent and any other.
    for (const std::vector<std::string>& parent :
         {std::vector<std::string>{}, std::vector<std::string>{"--cgroup-parent", "/sandboxes"}}) {
        std::vector<std::string> args = parent;
        args.insert(args.end(), {"--memory", "64M", "--", "true"});
        RunResult r = run_nestbox(args, inside(false));
        EXPECT_EQ(r.exit_code, 125) << r.err;
        EXPECT_NE(r.err.find("has processes of its own"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("--cgroup-parent"), std::string::npos) << r.err;
        ASSERT_NE(r.event("error"), nullptr);
        EXPECT_EQ(r.event("error")->at("errno").as_int64(), EBUSY);
        EXPECT_TRUE(sandbox_groups().empty());
    }
}

// Once the container's processes sit in a leaf, limits work, and the sandbox's group is made
// inside the container's group (under `parent`, relative to the namespace), never beside it.
void Container::expect_limits_work(const std::vector<std::string>& parent_option,
                                   const std::string& parent, bool remount) const {
    std::vector<std::string> args = with_probe(parent_option);
    args.insert(args.end(), {"--memory", "64M", "--", "/probe", "membomb"});
    std::vector<std::string> seen;
    RunResult r = run_watching(
        args,
        [&](const std::vector<std::string>& groups) {
            seen = groups;
            return !groups.empty();
        },
        inside(true, remount));
    EXPECT_EQ(r.exit_code, 137) << r.err;
    ASSERT_FALSE(r.exited().empty()) << r.err;
    EXPECT_TRUE(r.exited().at("oom_killed").as_bool());
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_TRUE(seen[0].starts_with(path_ + parent + "/")) << seen[0];
    EXPECT_TRUE(sandbox_groups().empty());
}

TEST_F(Container, LimitsWorkOnceTheRootHoldsNoProcess) {
    expect_limits_work({}, "/nestbox");
}

TEST_F(Container, LimitsWorkUnderACgroupParentOnceTheRootHoldsNoProcess) {
    expect_limits_work({"--cgroup-parent", "/sandboxes"}, "/sandboxes");
}

TEST_F(Container, ANamespaceShowingMoreThanItsRootNeedsTheParentNamed) {
    // The host's whole hierarchy mounted in a container with a private cgroup namespace: the
    // paths in /proc/self/cgroup are relative to the namespace, not to the mount, so the group
    // beside the caller's cannot be found. The launcher refuses rather than guess (a guess lands
    // outside the container's group, beyond its limits).
    RunResult r = run_nestbox({"--memory", "64M", "--", "true"}, inside(true, false));
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_NE(r.err.find("cgroup namespace"), std::string::npos) << r.err;
    EXPECT_TRUE(sandbox_groups().empty());
    // Named as the mount shows it, the parent works, inside the container's group.
    const std::string parent = "/" + fs::path(path_).filename().string() + "/sandboxes";
    expect_limits_work({"--cgroup-parent", parent}, "/sandboxes", false);
}

}  // namespace
}  // namespace nestbox::test
