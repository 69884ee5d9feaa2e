#include "launcher/cgroup.hpp"

#include <gtest/gtest.h>

namespace nestbox::launcher {
namespace {

using namespace cgroupfs;

TEST(Cgroup, FindsItsOwnGroupInEachHierarchy) {
    const std::string self =
        "9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/x\n2:cpu,cpuacct:/c\n0::/user.slice/"
        "s\n";
    EXPECT_EQ(own_cgroup(self, "memory").value(), "/process_api/x");
    EXPECT_EQ(own_cgroup(self, "cpu").value(), "/c");
    EXPECT_EQ(own_cgroup(self, "cpuacct").value(), "/c");
    EXPECT_EQ(own_cgroup(self, "").value(), "/user.slice/s");
    EXPECT_FALSE(own_cgroup(self, "blkio"));
}

TEST(Cgroup, LeafNamesAreRecognizableAndUnique) {
    const std::string a = leaf_name();
    const std::string b = leaf_name();
    EXPECT_EQ(a.rfind("nbx-" + std::to_string(getpid()) + "-", 0), 0u);
    EXPECT_NE(a, b);
}

TEST(Cgroup, NoLimitNeedsNoGroup) {
    auto setup = create_cgroup(policy::Limits{}, false, CgroupLayout{});
    ASSERT_TRUE(setup);
    EXPECT_EQ(setup->group, nullptr);
}

TEST(Cgroup, AnUnenforceableLimitIsAnErrorNamingTheController) {
    policy::Limits l;
    l.memory_bytes = 64 << 20;
    l.pids = 10;
    CgroupLayout none;  // no cgroup filesystem at all
    auto strict = create_cgroup(l, false, none);
    ASSERT_FALSE(strict);
    EXPECT_NE(strict.error().message().find("memory, pids"), std::string::npos)
        << strict.error().message();
    EXPECT_NE(strict.error().message().find("--limits=best-effort"), std::string::npos);
}

TEST(Cgroup, BestEffortDropsTheLimitWithAWarning) {
    policy::Limits l;
    l.memory_bytes = 64 << 20;
    auto lax = create_cgroup(l, true, CgroupLayout{});
    ASSERT_TRUE(lax);
    EXPECT_EQ(lax->group, nullptr);
    ASSERT_EQ(lax->warnings.size(), 1u);
    EXPECT_NE(lax->warnings[0].find("memory"), std::string::npos);
}

TEST(Cgroup, SplitsControllerLists) {
    EXPECT_EQ(split_words("cpuset cpu io memory\n"),
              (std::vector<std::string>{"cpuset", "cpu", "io", "memory"}));
    EXPECT_TRUE(split_words("\n").empty());
}

}  // namespace
}  // namespace nestbox::launcher
