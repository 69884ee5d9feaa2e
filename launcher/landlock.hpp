// Optional stage (--landlock): a Landlock ruleset on top of the mount namespace. Everything is
// readable and executable as mounted, but writes are allowed only under the writable mounts
// (read-write binds, tmpfs, the /dev nodes), so even a read-write bind of a parent directory
// somewhere under a read-only one cannot widen what the command may change.
#pragma once

#include <vector>

#include "launcher/plan.hpp"
#include "src/core/error.hpp"

namespace nestbox::launcher {

// An error if the kernel has no Landlock: the boundary was asked for and cannot be enforced.
Result<void> restrict_with_landlock(const std::vector<MountStep>& mounts);

}  // namespace nestbox::launcher
