#include "launcher/options.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

namespace nestbox::launcher {
namespace {

using policy::MountType;

Result<ParsedCommandLine> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "nestbox");
    std::vector<const char*> argv;
    argv.reserve(args.size());
    for (const auto& a : args)
        argv.push_back(a.c_str());
    return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST(Options, FilesystemOptionsKeepTheirOrderAndSizesApplyToTheNextTmpfs) {
    auto r =
        parse({"--ro-bind", "/usr", "/usr", "--size", "1M", "--tmpfs", "/a", "--bind-try", "/x",
               "/y", "--tmpfs", "/b", "--symlink", "usr/bin", "/bin", "--dir", "/d", "--", "ls"});
    ASSERT_TRUE(r) << r.error().message();
    const auto& m = r->invocation.policy.mounts;
    ASSERT_EQ(m.size(), 6u);
    EXPECT_EQ(m[0].type, MountType::RoBind);
    EXPECT_EQ(m[1].type, MountType::Tmpfs);
    EXPECT_EQ(m[1].size, 1u << 20);
    EXPECT_EQ(m[2].type, MountType::Bind);
    EXPECT_TRUE(m[2].optional);
    EXPECT_FALSE(m[3].size.has_value());  // --size applied once
    EXPECT_EQ(m[4].source, "usr/bin");
    EXPECT_EQ(r->invocation.command, std::vector<std::string>{"ls"});
}

TEST(Options, TheCommandStartsAtTheFirstNonOptionOrAfterTheSeparator) {
    auto r = parse({"--share-net", "git", "log", "--", "file", "--bind"});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->invocation.command,
              (std::vector<std::string>{"git", "log", "--", "file", "--bind"}));
    r = parse({"--tmpfs", "/t", "--", "ls", "-la"});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->invocation.command, (std::vector<std::string>{"ls", "-la"}));
    // A second "--" belongs to the command.
    r = parse({"--", "sh", "--", "x"});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->invocation.command.size(), 3u);
}

TEST(Options, ValuesMayLookLikeOptions) {
    auto r = parse({"--setenv", "JAVA_OPTS", "-Xmx1g", "--setenv", "X", "--", "--", "true"});
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->invocation.policy.setenv.size(), 2u);
    EXPECT_EQ(r->invocation.policy.setenv[0].second, "-Xmx1g");
    EXPECT_EQ(r->invocation.policy.setenv[1].second, "--");
    EXPECT_EQ(r->invocation.command, std::vector<std::string>{"true"});
}

TEST(Options, SetenvAndUnsetenvApplyInOrder) {
    auto r = parse(
        {"--setenv", "A", "1", "--unsetenv", "A", "--unsetenv", "B", "--setenv", "B", "2", "true"});
    ASSERT_TRUE(r);
    const auto& p = r->invocation.policy;
    EXPECT_EQ(p.setenv, (std::vector<std::pair<std::string, std::string>>{{"B", "2"}}));
    EXPECT_EQ(p.unsetenv, std::vector<std::string>{"A"});
}

TEST(Options, BadInputNamesTheOptionAndTheValue) {
    struct Case {
        std::vector<std::string> args;
        std::string mentions;
    };
    for (const Case& c : std::vector<Case>{
             {{"--frobnicate", "ls"}, "--frobnicate"},
             {{"-x", "ls"}, "-x"},
             {{"--", "--bind", "/a", "/b"}, "'--bind' looks like an option"},
             {{"--bind", "/a"}, "--bind: needs 2 values"},
             {{"--memory", "12Q", "ls"}, "12Q"},
             {{"--uid", "root", "ls"}, "--uid"},
             {{"--cpu", "-5", "ls"}, "--cpu"},
             {{"--limits", "sometimes", "ls"}, "sometimes"},
             {{"--timeout", "soon", "ls"}, "soon"},
             {{"--status-fd", "-1", "ls"}, "--status-fd: must be a file descriptor"},
             {{"--bind=/a", "ls"}, "--bind"},
         }) {
        auto r = parse(c.args);
        ASSERT_FALSE(r) << c.args[0];
        EXPECT_NE(r.error().message().find(c.mentions), std::string::npos) << r.error().message();
    }
}

TEST(Options, HelpAndVersionPrintInsteadOfRunning) {
    auto r = parse({"--help"});
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->print);
    for (const char* documented : {"--bind", "--ro-bind-try", "--tmpfs", "--memory", "--seccomp",
                                   "--status-fd", "--policy", "--workspace"}) {
        EXPECT_NE(r->print->find(documented), std::string::npos) << documented;
    }
    r = parse({"--version"});
    ASSERT_TRUE(r && r->print);
    EXPECT_EQ(r->print->rfind("nestbox ", 0), 0u);
}

TEST(Options, CommandLineOverridesThePolicyFile) {
    char path[] = "/tmp/nestbox-policy-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << R"({"hostname":"file","uid":7,"mounts":[{"type":"dir","dest":"/f"}]})";
    auto r = parse({"--policy", path, "--hostname", "cli", "--dir", "/c", "true"});
    std::remove(path);
    ASSERT_TRUE(r) << r.error().message();
    const auto& p = r->invocation.policy;
    EXPECT_EQ(p.hostname, "cli");
    EXPECT_EQ(p.uid, 7u);
    ASSERT_EQ(p.mounts.size(), 2u);
    EXPECT_EQ(p.mounts[0].dest, "/f");
    EXPECT_EQ(p.mounts[1].dest, "/c");
}

TEST(Options, AMissingOrBrokenPolicyFileIsAnError) {
    auto r = parse({"--policy", "/no/such/policy.json", "true"});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("/no/such/policy.json"), std::string::npos);
}

}  // namespace
}  // namespace nestbox::launcher
