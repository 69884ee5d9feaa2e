#include <gtest/gtest.h>

#include "policy/policy.hpp"

namespace nestbox::policy {
namespace {

TEST(ParseSize, AcceptsBytesAndBinaryUnits) {
    EXPECT_EQ(parse_size("65536").value(), 65536u);
    EXPECT_EQ(parse_size("512M").value(), 512ULL << 20);
    EXPECT_EQ(parse_size("1G").value(), 1ULL << 30);
    EXPECT_EQ(parse_size("64KiB").value(), 64ULL << 10);
    EXPECT_EQ(parse_size("2t").value(), 2ULL << 40);
    EXPECT_EQ(parse_size("100B").value(), 100u);
}

TEST(ParseSize, RejectsEverythingElseNamingTheValue) {
    for (const char* bad :
         {"", "M", "-1", "1.5G", "12Q", "1GG", "1 G", "99999999999999999999", "17179869184G"}) {
        auto r = parse_size(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message().find(std::string("'") + bad + "'"), std::string::npos);
    }
}

TEST(ParseSeconds, AcceptsFractionsWithinADay) {
    EXPECT_EQ(parse_seconds("120").value().count(), 120000);
    EXPECT_EQ(parse_seconds("0.5").value().count(), 500);
    EXPECT_EQ(parse_seconds("0.0001").value().count(), 1);  // rounded up, never to zero
    for (const char* bad : {"0", "-1", "abc", "1e9", "inf", "nan", "", "5s"}) {
        EXPECT_FALSE(parse_seconds(bad)) << bad;
    }
}

TEST(PolicyJson, ParsesEveryField) {
    auto p = parse_policy_json(R"({
        "default_root": false,
        "mounts": [{"type": "ro-bind", "source": "/opt", "dest": "/opt", "optional": true},
                   {"type": "tmpfs", "dest": "/scratch", "size": "64M"},
                   {"type": "symlink", "source": "usr/bin", "dest": "/bin"}],
        "workspace": "/srv/ws/a", "chdir": "/workspace", "share_net": true, "hostname": "h",
        "uid": 12345, "gid": 12346,
        "limits": {"memory": "512M", "cpu": 150, "pids": 64, "timeout": 1.5,
                   "cgroup_parent": "/x", "mode": "best-effort"},
        "seccomp": "none", "landlock": true,
        "env": {"inherit": false, "set": {"A": "1"}, "unset": ["B"]}})");
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_EQ(p->default_root, false);
    ASSERT_EQ(p->mounts.size(), 3u);
    EXPECT_EQ(p->mounts[0].type, MountType::RoBind);
    EXPECT_TRUE(p->mounts[0].optional);
    EXPECT_EQ(p->mounts[1].size, 64ULL << 20);
    EXPECT_EQ(p->uid, 12345u);
    EXPECT_EQ(p->limits.memory_bytes, 512ULL << 20);
    EXPECT_EQ(p->limits.timeout->count(), 1500);
    EXPECT_EQ(p->limits.mode, LimitMode::BestEffort);
    ASSERT_EQ(p->setenv.size(), 1u);
    EXPECT_EQ(p->unsetenv, std::vector<std::string>{"B"});
}

TEST(PolicyJson, RoundTripsThroughToJson) {
    Policy p;
    p.mounts.push_back({MountType::Bind, "/a", "/b", false, std::nullopt});
    p.mounts.push_back({MountType::Tmpfs, "", "/t", false, 1 << 20});
    p.workspace = "/ws";
    p.uid = 10001;
    p.gid = 10001;
    p.limits.memory_bytes = 1 << 30;
    p.limits.timeout = std::chrono::milliseconds(2500);
    p.setenv = {{"SECRET", "va\"lue\n"}};
    p.share_net = false;
    auto back = parse_policy_json(to_json(p));
    ASSERT_TRUE(back) << back.error().message() << "\n" << to_json(p);
    EXPECT_EQ(*back, p);
}

TEST(PolicyJson, RejectsUnknownFieldsAndWrongTypesNamingThem) {
    struct Case {
        const char* json;
        const char* field;
    };
    for (const Case& c : std::initializer_list<Case>{
             {R"({"limits": {"memroy": "1G"}})", "limits.memroy"},
             {R"({"uid": "root"})", "uid"},
             {R"({"uid": -1})", "uid"},
             {R"({"uid": 4294967296})", "uid"},
             {R"({"mounts": [{"type": "bind", "dest": "/x"}]})", "mounts[0].source"},
             {R"({"mounts": [{"type": "teleport", "dest": "/x"}]})", "mounts[0].type"},
             {R"({"mounts": [{"type": "tmpfs", "dest": "/x", "source": "/y"}]})",
              "mounts[0].source"},
             {R"({"limits": {"timeout": 0}})", "limits.timeout"},
             {R"({"mounts": [{"type": "dir", "dest": "/x", "size": "1M"}]})", "mounts[0].size"},
             {R"({"mounts": [{"type": "tmpfs", "dest": "/x", "optional": true}]})",
              "mounts[0].optional"},
             {R"({"limits": {"mode": "sloppy"}})", "limits.mode"},
             {R"({"env": {"set": {"A": 1}}})", "env.set.A"},
             {R"({"share_net": "yes"})", "share_net"},
             {R"([1, 2])", "object"},
             {R"({"unterminated": )", "JSON"},
         }) {
        auto p = parse_policy_json(c.json);
        ASSERT_FALSE(p) << c.json;
        EXPECT_NE(p.error().message().find(c.field), std::string::npos) << p.error().message();
    }
}

TEST(Policy, MergeLetsOverridesWinAndAppendsLists) {
    Policy file;
    file.hostname = "file";
    file.uid = 1;
    file.mounts.push_back({MountType::Dir, "", "/a", false, std::nullopt});
    file.setenv = {{"A", "1"}};
    Policy cli;
    cli.hostname = "cli";
    cli.mounts.push_back({MountType::Dir, "", "/b", false, std::nullopt});
    cli.setenv = {{"A", "2"}};
    file.merge(cli);
    EXPECT_EQ(file.hostname, "cli");
    EXPECT_EQ(file.uid, 1u);
    ASSERT_EQ(file.mounts.size(), 2u);
    EXPECT_EQ(file.mounts[1].dest, "/b");
    ASSERT_EQ(file.setenv.size(), 2u);
    EXPECT_EQ(file.setenv[1].second, "2");  // applied later, so it wins
}

}  // namespace
}  // namespace nestbox::policy
