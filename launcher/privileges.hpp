// Stage 7: privileges. Becomes the sandbox user with no capability in any of the five sets, the
// securebits locked so none can come back through exec, and no_new_privs set.
#pragma once

#include <sys/types.h>

#include "src/core/error.hpp"

namespace nestbox::launcher {

// `can_setgroups` is false in rootless mode, where setgroups(2) was given up for the id maps.
Result<void> drop_privileges(uid_t uid, gid_t gid, bool can_setgroups);

}  // namespace nestbox::launcher
