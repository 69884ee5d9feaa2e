// The sandbox policy: everything `nestbox` can be told, as one value type.
//
// The command line and a `--policy FILE` both produce a Policy; the server builds one per request
// and hands it to the launcher as JSON. Fields that are unset (std::nullopt) take the launcher's
// defaults, so a merge can tell "not said" from "said false".
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/error.hpp"

namespace nestbox::policy {

enum class MountType {
    Bind,     // --bind SRC DEST: read-write bind of a host path
    RoBind,   // --ro-bind SRC DEST
    Tmpfs,    // --tmpfs DEST, sized by the --size before it
    Dir,      // --dir DEST
    Symlink,  // --symlink TARGET DEST
    Proc,     // --proc DEST
    Dev,      // --dev DEST: a minimal /dev
};

std::string_view to_string(MountType type);

struct Mount {
    MountType type = MountType::Dir;
    std::string source;                 // host path for binds, link target for symlinks
    std::string dest;                   // absolute path inside the sandbox
    bool optional = false;              // the -try variants: a missing source is skipped
    std::optional<std::uint64_t> size;  // tmpfs size in bytes

    bool operator==(const Mount&) const = default;
};

// What to do when a requested limit cannot be enforced on this host.
enum class LimitMode { Strict, BestEffort };

struct Limits {
    std::optional<std::uint64_t> memory_bytes;
    std::optional<std::uint32_t> cpu_percent;  // 100 = one core
    std::optional<std::uint32_t> pids;
    std::optional<std::chrono::milliseconds> timeout;
    std::optional<std::string> cgroup_parent;
    std::optional<LimitMode> mode;

    bool any_cgroup_limit() const { return memory_bytes || cpu_percent || pids; }
    bool operator==(const Limits&) const = default;
};

struct Policy {
    std::optional<bool> default_root;      // false: start from an empty root
    std::vector<Mount> mounts;             // applied in order, after the default root
    std::optional<std::string> workspace;  // host dir bound read-write at /workspace
    std::optional<std::string> chdir;
    std::optional<bool> share_net;
    std::optional<std::string> hostname;
    std::optional<std::uint32_t> uid;
    std::optional<std::uint32_t> gid;
    Limits limits;
    std::optional<std::string> seccomp;  // "default", "none" or a profile path
    std::optional<bool> landlock;
    std::optional<bool> inherit_env;
    std::vector<std::pair<std::string, std::string>> setenv;
    std::vector<std::string> unsetenv;

    // Applies `overrides` on top of this policy: its set scalars win, its lists are appended.
    // This is how command-line options override a --policy file.
    void merge(const Policy& overrides);

    bool operator==(const Policy&) const = default;
};

// Parses the JSON policy format of nestbox-policy(5). Unknown fields are errors: a misspelt limit
// must not silently become no limit. Errors name the field ("policy: limits.memory: ...").
Result<Policy> parse_policy_json(std::string_view json);

// The inverse of parse_policy_json, for the server.
std::string to_json(const Policy& policy);

// "512M", "1G", "65536", "64KiB": binary units. Errors for empty, fractional, negative,
// unknown-suffix and overflowing values.
Result<std::uint64_t> parse_size(std::string_view text);

// "120", "1.5": seconds, more than 0 and at most a day, rounded up to milliseconds.
Result<std::chrono::milliseconds> parse_seconds(std::string_view text);
Result<std::chrono::milliseconds> seconds_to_timeout(double seconds);

}  // namespace nestbox::policy
