// Stage 5: pivot_root. Makes the finished tmpfs the root of the mount namespace and detaches the
// host's root, so no path inside the sandbox can name a host file again.
#pragma once

#include "src/core/error.hpp"

namespace nestbox::launcher {

Result<void> enter_root(int root_fd);

}  // namespace nestbox::launcher
