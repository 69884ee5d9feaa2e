// nestboxd on cgroup v2, run inside the qemu VM after vm_tests (init.sh's nestboxd hook). Each
// test starts the real server as a deployment would: as PID 1 of a container, whose cgroup is the
// root of its cgroup namespace and holds it; or as a service in a leaf group of the host's
// hierarchy. It then asks over HTTP for what a limit forbids, and checks from outside the
// server, in the cgroup filesystem and /proc, that the kernel held it where the server said.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/harness.hpp"
#include "tests/integration/server_harness.hpp"
#include "tests/vm/vm_cgroups.hpp"

namespace nestbox::test {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kTests = kCgroupRoot + "/tests";
// The probe, shared into every sandbox read-only by --shared-dirs.
const std::string kProbe = "/mnt/shared/probe/probe";

// A process as /proc shows it to the test (the VM's PID namespace).
struct Process {
    pid_t pid = 0;
    pid_t ppid = 0;
    char state = '?';
    std::string comm;
};

std::vector<Process> all_processes() {
    std::vector<Process> out;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename();
        if (name.empty() || name[0] < '1' || name[0] > '9') continue;
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses, the last ')' ends it.
        const std::string stat = read_text(entry.path() / "stat");
        const std::size_t open = stat.find('('), close = stat.rfind(')');
        if (open == std::string::npos || close == std::string::npos) continue;  // exited meanwhile
        Process p;
        p.pid = std::stoi(name);
        p.comm = stat.substr(open + 1, close - open - 1);
        std::istringstream rest(stat.substr(close + 1));
        rest >> p.state >> p.ppid;
        out.push_back(p);
    }
    return out;
}

std::vector<Process> children_of(pid_t parent) {
    std::vector<Process> out;
    for (const Process& p : all_processes()) {
        if (p.ppid == parent) out.push_back(p);
    }
    return out;
}

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

// Polls `done` every 20 ms for up to `limit`; true once it held.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
        if (done()) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(20ms);
    }
}

json::object exec_body(const std::string& agent, json::object fields) {
    fields["agent_id"] = agent;
    return fields;
}

json::object probe(const std::string& agent, const char* what, json::object limits) {
    return exec_body(agent, {{"argv", json::array{kProbe, what}}, {"cgroup", std::move(limits)}});
}

// Posts an /exec in the background; `watch` is called every 20 ms while it runs, until it returns
// true.
HttpResponse exec_watching(const Server& s, const json::object& body,
                           const std::function<bool()>& watch) {
    auto run = std::async(std::launch::async, [&] { return s.post("/exec", body); });
    while (run.wait_for(20ms) == std::future_status::timeout) {
        if (watch()) break;
    }
    return run.get();
}

// A launcher of nestboxd's with its sandbox's init, running the command.
struct RunningSandbox {
    Process launcher, init;
};

std::optional<RunningSandbox> wait_for_sandbox(pid_t server) {
    RunningSandbox found;
    const bool seen = eventually([&] {
        for (const Process& l : children_of(server)) {
            if (l.comm != "nestbox") continue;
            const std::vector<Process> inits = children_of(l.pid);
            if (inits.empty() || children_of(inits[0].pid).empty()) continue;
            found = {l, inits[0]};
            return true;
        }
        return false;
    });
    return seen ? std::optional(found) : std::nullopt;
}

// Posts an /exec in the background; its answer, or status 0 if the connection broke.
std::future<HttpResponse> post_in_background(const Server& s, const json::object& body) {
    return std::async(std::launch::async, [&s, body] {
        try {
            return s.post("/exec", body);
        } catch (const std::exception&) {
            return HttpResponse{};
        }
    });
}

// No test may leave a sandbox group behind, in any deployment: checked once all have run.
class NoGroupsLeft : public testing::Environment {
  public:
    void TearDown() override {
        EXPECT_EQ(sandbox_groups(), std::vector<std::string>{}) << "sandbox groups left behind";
    }
};
const auto* const kNoGroupsLeft = testing::AddGlobalTestEnvironment(new NoGroupsLeft);

// A group that a deployment gives nestboxd, made fresh for each test and removed after it.
class Deployment : public testing::Test {
  protected:
    // `group`: where nestboxd is started; `made`: what the test removes after it (the group).
    explicit Deployment(std::string group, std::string made = {})
        : group_(std::move(group)), made_(made.empty() ? group_ : std::move(made)) {}

    void SetUp() override {
        // What a runtime or systemd does for the group it delegates: the controllers reach it.
        ASSERT_TRUE(write_text(kCgroupRoot + "/cgroup.subtree_control", "+memory +cpu +pids"));
        ASSERT_TRUE(write_text(kTests + "/cgroup.subtree_control", "+memory +cpu +pids"));
        ASSERT_TRUE(fs::create_directory(group_)) << group_;
    }
    void TearDown() override {
        if (server_) {
            // As PID 1 a lost SIGTERM is ignored: that fails the test rather than hanging the VM.
            EXPECT_TRUE(server_->stop_within(10s)) << "SIGTERM did not stop nestboxd";
            if (HasFailure()) std::cerr << "nestboxd's log:\n" << server_->log();
            server_.reset();
        }
        remove_tree(made_);
    }

    void start(ServerOptions options) {
        server_ = std::make_unique<Server>(
            std::vector<std::string>{"--shared-dirs", "probe:" + binaries().dir},
            std::move(options));
    }
    Server& server() { return *server_; }
    std::string server_cgroup() const {
        return read_text("/proc/" + std::to_string(server_->pid()) + "/cgroup");
    }

    // nestboxd left the group it was started in for a leaf of its own, and handed memory, cpu
    // and pids to the group's children.
    void expect_moved_into_a_leaf() {
        EXPECT_EQ(read_text(group_ + "/cgroup.procs"), "") << "processes left in " << group_;
        EXPECT_EQ(words(read_text(group_ + "/server/cgroup.procs")),
                  std::vector<std::string>{std::to_string(server().pid())});
        const std::vector<std::string> enabled =
            words(read_text(group_ + "/cgroup.subtree_control"));
        for (const char* c : {"memory", "cpu", "pids"})
            EXPECT_TRUE(contains(enabled, c))
                << c << " is not handed to " << group_ << "'s children";
        EXPECT_EQ(server_cgroup(), "0::" + group_.substr(kCgroupRoot.size()) + "/server\n");
    }

    void expect_healthy_on_v2() {
        HttpResponse h = server().get("/healthz");
        ASSERT_EQ(h.status, 200) << h.body;
        const json::value v = h.json();
        EXPECT_EQ(v.at("status").as_string(), "ok") << h.body;
        EXPECT_EQ(v.at("isolation").at("cgroup").as_string(), "v2") << h.body;
        for (const auto& w : v.at("warnings").as_array())
            EXPECT_EQ(std::string(w.as_string()).find("cgroup"), std::string::npos) << w;
    }

    // A memory bomb with "memory_mb": 64 is OOM-killed in its own group below
    // <group>/sandboxes/<agent>/, and the group is gone when the answer comes.
    void expect_memory_limit_held(const std::string& agent) {
        const std::string parent = group_ + "/sandboxes/" + agent + "/nbx-";
        std::vector<std::string> seen;
        HttpResponse r = exec_watching(server(), probe(agent, "membomb", {{"memory_mb", 64}}), [&] {
            seen = sandbox_groups(kCgroupRoot);
            return !seen.empty();
        });
        ASSERT_EQ(r.status, 200) << r.body;
        const json::value v = r.json();
        EXPECT_EQ(v.at("exit_code").as_int64(), 137) << r.body;
        EXPECT_TRUE(v.at("oom_killed").as_bool()) << r.body;
        EXPECT_EQ(v.at("signal").as_string(), "SIGKILL") << r.body;
        // memory.peak: the bomb got close to the limit, and not past it.
        EXPECT_GT(v.at("usage").at("memory_peak_bytes").to_number<std::int64_t>(), 48 << 20);
        EXPECT_LE(v.at("usage").at("memory_peak_bytes").to_number<std::int64_t>(), 64 << 20);
        ASSERT_EQ(seen.size(), 1u);
        EXPECT_TRUE(seen[0].starts_with(parent)) << seen[0];
        EXPECT_EQ(sandbox_groups(), std::vector<std::string>{});
    }

    std::string group_;
    std::string made_;
    std::unique_ptr<Server> server_;
};

// --- the container case: PID 1, alone in its cgroup namespace's root -------------------------

// The runtime's part: a fresh group for the container; its init is cloned into a new PID
// namespace (the harness does that), joins the group, and gets new cgroup and mount namespaces
// with cgroup2 and proc mounted again, so that it sees the group as /sys/fs/cgroup and itself as
// PID 1 in /proc.
class Container : public Deployment {
  protected:
    Container() : Deployment(kTests + "/container") {}

    static ServerOptions as_init(const std::string& group) {
        ServerOptions o;
        o.pid_namespace = true;
        o.before_exec = [group] {
            if (!enter_container(group, true)) return false;
            if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
                std::perror("entering the container: mounting proc");
                return false;
            }
            return true;
        };
        return o;
    }
    void start_as_init() { start(as_init(group_)); }
};

TEST_F(Container, TheServerIsItsInitAndMovesIntoALeaf) {
    start_as_init();
    // Positive control: it is PID 1 of its own PID namespace.
    const std::string status = read_text("/proc/" + std::to_string(server().pid()) + "/status");
    EXPECT_NE(status.find("NSpid:\t" + std::to_string(server().pid()) + "\t1\n"), std::string::npos)
        << status;
    expect_moved_into_a_leaf();
    expect_healthy_on_v2();
}

TEST_F(Container, LimitsAreEnforced) {
    start_as_init();
    expect_memory_limit_held("agent-mem");
    // The sandbox's init and the probe count against max_pids too.
    HttpResponse r = server().post("/exec", probe("agent-pids", "forkbomb", {{"max_pids", 32}}));
    ASSERT_EQ(r.status, 200) << r.body;
    const json::value v = r.json();
    ASSERT_EQ(v.at("exit_code").as_int64(), 0) << r.body;
    const json::value report = json::parse(v.at("stdout").as_string());
    EXPECT_EQ(report.at("forked").as_int64(), 30) << r.body;
    EXPECT_EQ(report.at("errno").as_int64(), EAGAIN);
}

TEST_F(Container, TheCommandRunsInItsAgentsGroupWhichGoesWithIt) {
    start_as_init();
    const std::string agent_group = group_ + "/sandboxes/agent-sleep";
    std::string command_cgroup;
    std::vector<std::string> groups;
    HttpResponse r =
        exec_watching(server(), exec_body("agent-sleep", {{"command", "exec sleep 1"}}), [&] {
            for (const Process& p : all_processes()) {
                if (p.comm != "sleep") continue;
                command_cgroup = read_text("/proc/" + std::to_string(p.pid) + "/cgroup");
                groups = sandbox_groups();
                return true;
            }
            return false;
        });
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json().at("exit_code").as_int64(), 0) << r.body;
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_TRUE(groups[0].starts_with(agent_group + "/nbx-")) << groups[0];
    EXPECT_EQ(command_cgroup, "0::" + groups[0].substr(kCgroupRoot.size()) + "\n");
    EXPECT_FALSE(fs::exists(groups[0])) << "the sandbox's group outlived it";
    EXPECT_TRUE(fs::exists(agent_group));
}

TEST_F(Container, AKilledLaunchersOrphansAreReapedAndItsRequestAnswered) {
    start_as_init();
    const pid_t server_pid = server().pid();
    auto run = post_in_background(
        server(), exec_body("agent-orphan", {{"command", "exec sleep 60"}, {"timeout_sec", 120}}));
    const std::optional<RunningSandbox> sandbox = wait_for_sandbox(server_pid);
    ASSERT_TRUE(sandbox) << "no sandbox started";
    const Process launcher = sandbox->launcher;
    const Process init = sandbox->init;
    const std::vector<std::string> groups = sandbox_groups(group_);
    ASSERT_EQ(groups.size(), 1u);

    ASSERT_EQ(::kill(launcher.pid, SIGKILL), 0);
    // The request is answered, not left hanging: the sandbox is gone, so is its report.
    ASSERT_EQ(run.wait_for(30s), std::future_status::ready) << "the request hangs";
    HttpResponse r = run.get();
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_EQ(r.error_code(), "sandbox_failed") << r.body;
    // The sandbox's init died with its launcher and was reparented to nestboxd, PID 1 here; as
    // init it must reap it, or it stays a zombie for as long as the container lives.
    EXPECT_TRUE(eventually([&] { return !fs::exists("/proc/" + std::to_string(init.pid)); }, 5s))
        << "the sandbox's init " << init.pid << " was not reaped";
    for (const Process& p : children_of(server_pid))
        EXPECT_NE(p.state, 'Z') << "zombie " << p.pid << " (" << p.comm << ") under nestboxd";
    // The launcher could not remove its group; the request that lost it did.
    EXPECT_FALSE(fs::exists(groups[0])) << "left behind: " << groups[0];
    // And the server goes on serving.
    EXPECT_EQ(exec(server(), "agent-orphan", "echo still here").at("stdout").as_string(),
              "still here\n");
}

TEST_F(Container, AServerThatIsNotAloneInTheRootIsRefusedNotUnlimited) {
    // The container's entrypoint is a shell (or an init such as tini) that stays in the root
    // beside nestboxd: the root cannot hand out controllers, whatever nestboxd moves. It must
    // say so and refuse to run sandboxes, not run them without their limits.
    ServerOptions o;
    o.before_exec = [group = group_] {
        if (!enter_container(group, true)) return false;
        const pid_t entrypoint = ::fork();
        if (entrypoint == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;)
                ::pause();
        }
        return entrypoint > 0;
    };
    start(o);
    EXPECT_EQ(words(read_text(group_ + "/cgroup.procs")).size(), 1u);  // the entrypoint
    HttpResponse h = server().get("/healthz");
    const json::value v = h.json();
    EXPECT_EQ(v.at("status").as_string(), "unavailable") << h.body;
    bool says_why = false;
    for (const auto& w : v.at("warnings").as_array())
        says_why |=
            std::string(w.as_string()).find("has processes of its own") != std::string::npos;
    EXPECT_TRUE(says_why) << h.body;
    HttpResponse r = server().post("/exec", probe("agent-refused", "membomb", {{"memory_mb", 64}}));
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_EQ(r.error_code(), "sandbox_failed") << r.body;
    EXPECT_EQ(sandbox_groups(), std::vector<std::string>{});
}

// --- outside a container: a service's leaf group, as systemd's Delegate= gives one -------------

class Service : public Deployment {
  protected:
    Service() : Deployment(kTests + "/service") {}
    void SetUp() override {
        Deployment::SetUp();
        if (HasFatalFailure()) return;
        ServerOptions o;
        o.before_exec = [group = group_] { return write_text(group + "/cgroup.procs", "0"); };
        start(o);
    }
};

TEST_F(Service, MovesIntoALeafOfItsGroupAndLimitsWork) {
    expect_moved_into_a_leaf();
    expect_healthy_on_v2();
    expect_memory_limit_held("agent-svc");
}

TEST_F(Service, ItsGroupTakesNoProcessOnceItHandsOutControllers) {
    // Why a restart needs a fresh group (see ByHand below): once nestboxd has set its group up,
    // the kernel lets no process join it, not even a new nestboxd.
    ASSERT_TRUE(server_->stop_within(10s));
    const pid_t child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    const int fd = ::open((group_ + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    const std::string pid = std::to_string(child);
    const bool joined = ::write(fd, pid.data(), pid.size()) >= 0;
    const int error = errno;
    ::close(fd);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    EXPECT_FALSE(joined);
    EXPECT_EQ(error, EBUSY);
}

// --- by hand, in the root group: where a restart finds what the last run left -----------------

// A group that hands controllers to its children can take no process (the no-internal-processes
// rule holds when joining too, see Service above): a restarted nestboxd cannot go back into the
// group of a container or a service it set up. Runtimes and systemd give the restart a fresh group
// and remove the old, empty one with its sandbox groups. The root group is exempt from the rule, so
// a nestboxd run by hand from it (a host without systemd) finds the groups its last run left, and
// its start-up sweep is what removes them.
class ByHand : public Deployment {
  protected:
    ByHand() : Deployment(kCgroupRoot, kCgroupRoot + "/sandboxes") {}
    void SetUp() override {
        ASSERT_TRUE(write_text(kCgroupRoot + "/cgroup.subtree_control", "+memory +cpu +pids"));
        ServerOptions o;
        o.before_exec = [] { return write_text(kCgroupRoot + "/cgroup.procs", "0"); };
        start(o);
    }
};

TEST_F(ByHand, TheNextStartRemovesTheGroupsOfLaunchersKilledWithTheServer) {
    EXPECT_EQ(server_cgroup(), "0::/\n");
    auto run = post_in_background(
        server(), exec_body("agent-crash", {{"command", "exec sleep 60"}, {"timeout_sec", 120}}));
    const std::optional<RunningSandbox> sandbox = wait_for_sandbox(server().pid());
    ASSERT_TRUE(sandbox) << "no sandbox started";
    const std::vector<std::string> groups = sandbox_groups(made_);
    ASSERT_EQ(groups.size(), 1u);
    // Both killed at once, as the OOM killer or `kill -9` of the process group would: the
    // launcher, stopped, cannot act on its parent's death before SIGKILL ends it.
    const pid_t launcher = sandbox->launcher.pid;
    ASSERT_EQ(::kill(launcher, SIGSTOP), 0);
    server().kill_hard();
    ASSERT_EQ(::kill(launcher, SIGKILL), 0);
    EXPECT_EQ(run.get().status, 0);
    ASSERT_TRUE(eventually([&] { return !fs::exists("/proc/" + std::to_string(launcher)); }))
        << "the VM's init did not reap the launcher " << launcher;
    ASSERT_TRUE(eventually([&] {
        return read_text(groups[0] + "/cgroup.events").find("populated 0") != std::string::npos;
    })) << "the sandbox outlived its launcher";
    ASSERT_TRUE(fs::exists(groups[0])) << "positive control: the crash leaves the group behind";

    server().restart();
    EXPECT_FALSE(fs::exists(groups[0])) << "the start-up sweep left " << groups[0];
    expect_memory_limit_held("agent-crash");
}

}  // namespace
}  // namespace nestbox::test
