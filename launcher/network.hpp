// Stage 6: network. A new network namespace starts with only a loopback device, and that one is
// down; bring it up so local servers and tests work, and nothing else exists to reach.
#pragma once

#include "src/core/error.hpp"

namespace nestbox::launcher {

Result<void> bring_up_loopback();

}  // namespace nestbox::launcher
