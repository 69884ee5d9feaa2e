#include "launcher/plan.hpp"

#include <sched.h>

#include <gtest/gtest.h>

namespace nestbox::launcher {
namespace {

using Kind = MountStep::Kind;

Caller root_caller() {
    return Caller{0, 0, "/home/me", {"PATH=/host/bin", "SECRET=1"}};
}
Caller user_caller() {
    return Caller{1000, 1000, "/home/me", {}};
}

Invocation command(std::vector<std::string> argv = {"true"}) {
    Invocation inv;
    inv.command = std::move(argv);
    return inv;
}

const MountStep* find(const Plan& p, const std::string& dest) {
    for (const auto& m : p.mounts) {
        if (m.dest == dest) return &m;
    }
    return nullptr;
}

TEST(Plan, DefaultSandboxHasTheSpecifiedRoot) {
    auto plan = make_plan(command(), root_caller());
    ASSERT_TRUE(plan) << plan.error().message();
    for (const char* d : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt"}) {
        ASSERT_NE(find(*plan, d), nullptr) << d;
        EXPECT_EQ(find(*plan, d)->kind, Kind::SystemDir);
    }
    for (const char* f : {"/etc/ld.so.cache", "/etc/ssl", "/etc/resolv.conf", "/etc/localtime"}) {
        ASSERT_NE(find(*plan, f), nullptr) << f;
        EXPECT_EQ(find(*plan, f)->kind, Kind::RoBind);
        EXPECT_TRUE(find(*plan, f)->optional);
    }
    EXPECT_EQ(find(*plan, "/proc")->kind, Kind::Proc);
    EXPECT_EQ(find(*plan, "/dev")->kind, Kind::Dev);
    EXPECT_EQ(find(*plan, "/tmp")->kind, Kind::Tmpfs);
    EXPECT_EQ(find(*plan, "/tmp")->mode, 01777u);
    EXPECT_GT(find(*plan, "/tmp")->size, 0u);
    EXPECT_NE(find(*plan, "/etc/passwd")->content.find("sandbox:x:65534:65534:"),
              std::string::npos);
    EXPECT_EQ(find(*plan, "/etc/shadow"), nullptr);
    EXPECT_EQ(plan->uid, 65534u);
    EXPECT_EQ(plan->hostname, "nestbox");
    EXPECT_EQ(plan->namespaces,
              static_cast<unsigned long>(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                                         CLONE_NEWNET));
    EXPECT_FALSE(plan->rootless);
    EXPECT_EQ(plan->seccomp, SeccompMode::Default);
}

TEST(Plan, UnprivilegedCallersGetAUserNamespaceMappingThemselves) {
    auto plan = make_plan(command(), user_caller());
    ASSERT_TRUE(plan);
    EXPECT_TRUE(plan->rootless);
    EXPECT_TRUE(plan->namespaces & CLONE_NEWUSER);
    EXPECT_EQ(plan->outer_uid, 1000u);
    EXPECT_EQ(plan->uid, 65534u);
}

TEST(Plan, WorkspaceIsBoundAfterTheRootAndIsWhereTheCommandStarts) {
    Invocation inv = command();
    inv.policy.workspace = "ws";  // relative: resolved against the caller's cwd
    inv.policy.mounts.push_back(
        {policy::MountType::RoBind, "/ref", "/workspace/ref", false, std::nullopt});
    auto plan = make_plan(inv, root_caller());
    ASSERT_TRUE(plan);
    const MountStep* ws = find(*plan, "/workspace");
    ASSERT_NE(ws, nullptr);
    EXPECT_EQ(ws->kind, Kind::Bind);
    EXPECT_EQ(ws->source, "/home/me/ws");
    EXPECT_LT(ws - plan->mounts.data(), find(*plan, "/workspace/ref") - plan->mounts.data());
    EXPECT_EQ(plan->chdir, "/workspace");
    EXPECT_NE(std::find(plan->env.begin(), plan->env.end(), "HOME=/workspace"), plan->env.end());
}

TEST(Plan, NoDefaultRootStartsEmpty) {
    Invocation inv = command();
    inv.policy.default_root = false;
    auto plan = make_plan(inv, root_caller());
    ASSERT_TRUE(plan);
    EXPECT_TRUE(plan->mounts.empty());
}

TEST(Plan, DestinationsAreNormalizedOrRefused) {
    EXPECT_EQ(normalize_dest("--bind", "//a///b/").value(), "/a/b");
    for (const char* bad : {"relative", "", "/a/../b", "/./a", "/", "///"}) {
        auto r = normalize_dest("--bind", bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message().find("--bind"), std::string::npos);
    }
    EXPECT_FALSE(normalize_dest("--bind", std::string("/a\0b", 4)));
}

TEST(Plan, BadValuesAreRefusedNamingTheOption) {
    struct Case {
        std::function<void(Invocation&)> set;
        std::string mentions;
    };
    const std::vector<Case> cases = {
        {[](Invocation& i) { i.policy.uid = 0; }, "--uid"},
        {[](Invocation& i) { i.policy.gid = 0; }, "--gid"},
        {[](Invocation& i) { i.policy.limits.pids = 1; }, "--pids"},
        {[](Invocation& i) { i.policy.limits.memory_bytes = 4096; }, "--memory"},
        {[](Invocation& i) { i.policy.limits.cpu_percent = 0; }, "--cpu"},
        {[](Invocation& i) { i.policy.limits.cgroup_parent = "relative"; }, "--cgroup-parent"},
        {[](Invocation& i) { i.policy.limits.cgroup_parent = "/a/../b"; }, "--cgroup-parent"},
        {[](Invocation& i) { i.policy.hostname = "no spaces"; }, "--hostname"},
        {[](Invocation& i) {
             i.policy.setenv = {{"A=B", "x"}};
         },
         "--setenv"},
        {[](Invocation& i) {
             i.policy.setenv = {{"A", std::string("x\0y", 3)}};
         },
         "NUL"},
        {[](Invocation& i) { i.policy.unsetenv = {""}; }, "--unsetenv"},
        {[](Invocation& i) {
             i.policy.mounts.push_back({policy::MountType::Bind, "", "/x", false, {}});
         },
         "--bind"},
        {[](Invocation& i) {
             i.policy.mounts.push_back({policy::MountType::Tmpfs, "", "/x", false, 0});
         },
         "--size"},
        {[](Invocation& i) { i.policy.chdir = "rel"; }, "--chdir"},
        {[](Invocation& i) { i.command.clear(); }, "no command"},
    };
    for (const Case& c : cases) {
        Invocation inv = command();
        c.set(inv);
        auto plan = make_plan(inv, root_caller());
        ASSERT_FALSE(plan) << c.mentions;
        EXPECT_NE(plan.error().message().find(c.mentions), std::string::npos)
            << plan.error().message();
    }
}

TEST(Plan, EnvironmentIsCleanByDefault) {
    auto plan = make_plan(command(), root_caller());
    ASSERT_TRUE(plan);
    for (const auto& e : plan->env)
        EXPECT_EQ(e.find("SECRET"), std::string::npos) << e;
    Invocation inv = command();
    inv.policy.inherit_env = true;
    inv.policy.setenv = {{"PATH", "/opt/bin"}};
    inv.policy.unsetenv = {"SECRET"};
    plan = make_plan(inv, root_caller());
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->env, std::vector<std::string>{"PATH=/opt/bin"});
}

TEST(Plan, SharedNetworkSkipsTheNamespaceAndLoopback) {
    Invocation inv = command();
    inv.policy.share_net = true;
    auto plan = make_plan(inv, root_caller());
    ASSERT_TRUE(plan);
    EXPECT_FALSE(plan->namespaces & CLONE_NEWNET);
    EXPECT_FALSE(plan->loopback);
}

}  // namespace
}  // namespace nestbox::launcher
