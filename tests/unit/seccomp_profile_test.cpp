#include "policy/seccomp_profile.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace nestbox::policy {
namespace {

std::string default_profile_text() {
    const char* path = std::getenv("NESTBOX_DEFAULT_PROFILE");
    if (path == nullptr) throw std::runtime_error("NESTBOX_DEFAULT_PROFILE is not set");
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

SeccompProfile default_profile() {
    auto p = parse_seccomp_profile(default_profile_text());
    if (!p) throw std::runtime_error(p.error().message());
    return *p;
}

// Installs `program` in a forked child, runs `fn` there and returns what it saw: the errno of a
// failed call, 0 for success, or 1000 + signal if the child was killed.
int in_filtered_child(std::span<const sock_filter> program, const std::function<long()>& fn) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return -1;
    const pid_t pid = fork();
    if (pid == 0) {
        sock_fprog prog{static_cast<unsigned short>(program.size()),
                        const_cast<sock_filter*>(program.data())};
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) _exit(90);
        errno = 0;
        const long rc = fn();
        const int result = rc < 0 ? errno : 0;
        (void)!write(pipefd[1], &result, sizeof result);
        _exit(0);
    }
    close(pipefd[1]);
    int result = -1;
    const ssize_t n = read(pipefd[0], &result, sizeof result);
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) return 1000 + WTERMSIG(status);
    return n == sizeof result ? result : -2;
}

TEST(DefaultProfile, EveryRuleSaysWhichThreatItCloses) {
    const SeccompProfile p = default_profile();
    EXPECT_EQ(p.default_action, SCMP_ACT_ALLOW);
    ASSERT_GT(p.rules.size(), 20u);
    for (const SeccompRule& r : p.rules) {
        EXPECT_FALSE(r.comment.empty()) << r.names.front();
        EXPECT_NE(r.action, SCMP_ACT_ALLOW) << r.names.front();
    }
}

TEST(DefaultProfile, TheBuiltInFilterIsTheCompiledProfile) {
    auto compiled = compile_seccomp_profile(default_profile());
    ASSERT_TRUE(compiled) << compiled.error().message();
    const auto builtin = default_seccomp_filter();
    ASSERT_EQ(compiled->size(), builtin.size());
    for (std::size_t i = 0; i < builtin.size(); ++i) {
        EXPECT_EQ((*compiled)[i].code, builtin[i].code) << i;
        EXPECT_EQ((*compiled)[i].k, builtin[i].k) << i;
    }
}

// Every rule, exercised with arguments that match it, returns its errno even for root, which
// holds every capability: the filter, not a permission check, is what refuses.
TEST(DefaultProfile, EveryRuleDeniesEvenRoot) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to tell the filter from permission checks";
    const SeccompProfile p = default_profile();
    const auto filter = default_seccomp_filter();
    for (const SeccompRule& rule : p.rules) {
        const int expected = static_cast<int>(rule.action & SECCOMP_RET_DATA);
        long args[6] = {0, 0, 0, 0, 0, 0};
        for (const SeccompArg& a : rule.args) {
            args[a.index] = static_cast<long>(a.op == SCMP_CMP_MASKED_EQ ? a.value_two : a.value);
        }
        for (const std::string& name : rule.names) {
            const int nr = seccomp_syscall_resolve_name(name.c_str());
            const int seen = in_filtered_child(filter, [&] {
                return syscall(nr, args[0], args[1], args[2], args[3], args[4], args[5]);
            });
            EXPECT_EQ(seen, expected) << name << " (" << rule.comment << ")";
        }
    }
}

TEST(DefaultProfile, OrdinaryCallsStillWork) {
    const auto filter = default_seccomp_filter();
    EXPECT_EQ(in_filtered_child(filter, [] { return syscall(SYS_getpid); }), 0);
    EXPECT_EQ(in_filtered_child(filter,
                                [] {
                                    const pid_t pid = fork();  // clone without namespace flags
                                    if (pid == 0) _exit(0);
                                    return pid < 0 ? -1L
                                                   : static_cast<long>(waitpid(pid, nullptr, 0));
                                }),
              0);
    EXPECT_EQ(in_filtered_child(filter, [] { return syscall(SYS_unshare, 0); }), 0);
    EXPECT_EQ(in_filtered_child(
                  filter, [] { return syscall(SYS_ioctl, 0, 0x5401 /*TCGETS*/, 0); }) == EPERM,
              false);
}

TEST(DefaultProfile, ForeignAbisAreKilled) {
    const auto filter = default_seccomp_filter();
    EXPECT_EQ(in_filtered_child(filter, [] { return syscall(0x40000000 | SYS_getpid); }),
              1000 + SIGSYS);
    EXPECT_EQ(in_filtered_child(filter,
                                [] {
                                    long rc = 0;
                                    __asm__ volatile("int $0x80" : "=a"(rc) : "a"(20) : "memory");
                                    return rc;
                                }),
              1000 + SIGSYS);
}

TEST(Profile, DockerConditionsAreEvaluatedForACapabilityFreeNativeSandbox) {
    auto p = parse_seccomp_profile(R"({
        "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
        "archMap": [{"architecture": "SCMP_ARCH_X86_64"}],
        "syscalls": [
          {"names": ["getpid"], "action": "SCMP_ACT_ALLOW"},
          {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
          {"names": ["gettid"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64"]}},
          {"names": ["getppid"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
          {"names": ["getuid"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "99.0"}},
          {"names": ["getgid"], "action": "SCMP_ACT_ALLOW", "excludes": {"minKernel": "4.0"}},
          {"names": ["geteuid"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["SCMP_ARCH_X86_64"]}},
          {"names": ["getegid"], "action": "SCMP_ACT_ALLOW", "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
          {"names": ["no_such_syscall_xyz"], "action": "SCMP_ACT_ALLOW"}
        ]})");
    ASSERT_TRUE(p) << p.error().message();
    std::vector<std::string> kept;
    for (const auto& r : p->rules)
        kept.push_back(r.names.front());
    EXPECT_EQ(kept, (std::vector<std::string>{"getpid", "gettid", "geteuid", "getegid",
                                              "no_such_syscall_xyz"}));
    auto program = compile_seccomp_profile(*p);
    ASSERT_TRUE(program) << program.error().message();  // unknown names in allow rules are skipped
    EXPECT_EQ(p->default_action, SCMP_ACT_ERRNO(1));
}

TEST(Profile, BadProfilesAreRefusedNamingTheProblem) {
    struct Case {
        const char* json;
        const char* mentions;
    };
    for (
        const Case& c : std::initializer_list<Case>{
            {R"({"defaultAction": "SCMP_ACT_NOTIFY"})", "SCMP_ACT_NOTIFY"},
            {R"({"defaultAction": "SCMP_ACT_ALLOW", "frobs": 1})", "frobs"},
            {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["getpid"]}]})",
             "action"},
            {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"action": "SCMP_ACT_KILL"}]})",
             "names"},
            {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ERRNO",
                  "args": [{"index": 7, "value": 1, "op": "SCMP_CMP_EQ"}]}]})",
             "index"},
            {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ERRNO",
                  "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_SIMILAR"}]}]})",
             "SCMP_CMP_SIMILAR"},
            {R"(not json)", "JSON"},
        }) {
        auto p = parse_seccomp_profile(c.json);
        ASSERT_FALSE(p) << c.json;
        EXPECT_NE(p.error().message().find(c.mentions), std::string::npos) << p.error().message();
    }
    // A deny rule naming a syscall libseccomp does not know would deny nothing: refused.
    auto unknown = parse_seccomp_profile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
        {"names": ["no_such_syscall_xyz"], "action": "SCMP_ACT_ERRNO"}]})");
    ASSERT_TRUE(unknown);
    auto compiled = compile_seccomp_profile(*unknown);
    ASSERT_FALSE(compiled);
    EXPECT_NE(compiled.error().message().find("no_such_syscall_xyz"), std::string::npos);
    EXPECT_NE(compiled.error().message().find("syscalls[0]"), std::string::npos);
}

TEST(Profile, PodmanErrnoNamesAndEmptyArchListsAreUnderstood) {
    auto p = parse_seccomp_profile(R"({
        "defaultAction": "SCMP_ACT_ERRNO", "defaultErrno": "ENOSYS",
        "syscalls": [
          {"names": ["getpid"], "action": "SCMP_ACT_ERRNO", "errno": "EPERM"},
          {"names": ["gettid"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": []}}
        ]})");
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_EQ(p->default_action, SCMP_ACT_ERRNO(ENOSYS));
    ASSERT_EQ(p->rules.size(), 2u);
    EXPECT_EQ(p->rules[0].action, SCMP_ACT_ERRNO(EPERM));
}

}  // namespace
}  // namespace nestbox::policy
