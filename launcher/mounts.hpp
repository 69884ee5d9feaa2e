// Stage 4: mounts. Builds the sandbox's root in a fresh tmpfs from the plan's mount steps, in
// order, then makes that tmpfs read-only. Runs in init, inside the new mount namespace.
#pragma once

#include <sys/types.h>

#include <vector>

#include "launcher/plan.hpp"
#include "src/core/error.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox::launcher {

struct SandboxUser {
    uid_t uid = 0;
    gid_t gid = 0;
    bool rootless = false;
};

// Returns an O_PATH fd of the finished root, ready for enter_root().
Result<UniqueFd> build_root(const std::vector<MountStep>& steps, const SandboxUser& user);

}  // namespace nestbox::launcher
