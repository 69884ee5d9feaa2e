#include "launcher/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "src/core/unique_fd.hpp"

// Debian 12's kernel headers predate Landlock ABI 3; the bit is fixed by the kernel ABI.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace nestbox::launcher {

namespace {

constexpr std::uint64_t kRead =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;

// The filesystem rights each Landlock ABI version knows; handling a right means denying it
// unless a rule grants it.
std::uint64_t handled_rights(long abi) {
    std::uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0-12
    if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
    return rights;
}

Result<void> allow(int ruleset, const char* path, std::uint64_t rights) {
    UniqueFd dir(::open(path, O_PATH | O_CLOEXEC));
    if (!dir) return Error::from_errno("landlock", path);
    landlock_path_beneath_attr rule{};
    rule.allowed_access = rights;
    rule.parent_fd = dir.get();
    if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
        return Error::from_errno("landlock", std::string("rule for ") + path);
    }
    return {};
}

}  // namespace

Result<void> restrict_with_landlock(const std::vector<MountStep>& mounts) {
    const long abi =
        ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return Error::from_errno("landlock", "this kernel does not offer Landlock");
    const std::uint64_t all = handled_rights(abi);
    landlock_ruleset_attr attr{};
    attr.handled_access_fs = all;
    UniqueFd ruleset(
        static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
    if (!ruleset) return Error::from_errno("landlock", "creating the ruleset");
    NESTBOX_TRY(allow(ruleset.get(), "/", kRead));
    for (const MountStep& m : mounts) {
        const bool writable = m.kind == MountStep::Kind::Bind || m.kind == MountStep::Kind::Tmpfs ||
                              m.kind == MountStep::Kind::Dev;
        if (!writable) continue;
        if (auto r = allow(ruleset.get(), m.dest.c_str(), all); !r) {
            if (m.optional && r.error().code() == ENOENT) continue;  // a skipped --bind-try
            return r;
        }
    }
    if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
        return Error::from_errno("landlock", "restricting the sandbox");
    }
    return {};
}

}  // namespace nestbox::launcher
