// Stage 1: the plan. Options and policy become a validated, fully expanded description of the
// sandbox: every mount in order, the ids, the environment, the limits. Building it makes no
// syscalls, so every bad input is rejected here, before anything exists that would need undoing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "src/core/error.hpp"

namespace nestbox::launcher {

// What the command line said besides the policy.
struct Invocation {
    policy::Policy policy;
    std::vector<std::string> command;
    std::optional<int> status_fd;
};

// Facts about the caller that the plan depends on, gathered by main() so that make_plan() stays
// pure and testable.
struct Caller {
    uid_t uid = 0;  // real uid: 0 means root mode, anything else rootless mode
    gid_t gid = 0;
    std::string cwd;                   // relative bind sources resolve against it
    std::vector<std::string> environ;  // for --inherit-env
};

struct MountStep {
    enum class Kind {
        SystemDir,  // a system directory: mirrored if the host has a symlink, else ro-bind-try
        Bind,
        RoBind,
        Tmpfs,
        Dir,
        Symlink,
        Proc,
        Dev,
        File,  // a file with `content`, e.g. the synthetic /etc/passwd
    };
    Kind kind = Kind::Dir;
    std::string source;  // host path, or symlink target
    std::string dest;    // absolute, normalized path inside the sandbox
    bool optional = false;
    std::uint64_t size = 0;              // tmpfs bytes
    unsigned mode = 0755;                // tmpfs root and directory mode
    bool owned_by_sandbox_user = false;  // tmpfs root owned by the sandbox uid/gid
    std::string content;                 // File
};

enum class SeccompMode { Default, None, File };

struct Plan {
    bool rootless = false;
    unsigned long namespaces = 0;  // CLONE_NEW* flags for clone3
    std::vector<MountStep> mounts;
    std::string chdir;
    std::string hostname;
    bool loopback = true;  // a new network namespace needs its loopback brought up

    uid_t uid = 65534;  // inside the sandbox
    gid_t gid = 65534;
    uid_t outer_uid = 0;  // rootless: the caller ids the inside ids map to
    gid_t outer_gid = 0;

    std::vector<std::string> argv;
    std::vector<std::string> env;  // "NAME=value"

    policy::Limits limits;
    bool best_effort_limits = false;
    SeccompMode seccomp = SeccompMode::Default;
    std::string seccomp_file;
    bool landlock = false;
    std::optional<int> status_fd;
};

inline constexpr uid_t kDefaultUid = 65534;
inline constexpr std::uint64_t kDefaultTmpSize = 256ULL << 20;
inline constexpr std::uint64_t kDevSize = 64ULL << 20;  // /dev, which holds /dev/shm

Result<Plan> make_plan(const Invocation& invocation, const Caller& caller);

// Lexical checks shared by every path the plan accepts. Exposed for tests.
Result<std::string> normalize_dest(const std::string& option, const std::string& dest);

}  // namespace nestbox::launcher
