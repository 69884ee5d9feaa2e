// Stage 3 (rootless only): user namespace id maps. The sandbox's init writes its own maps,
// mapping exactly one id each way: the sandbox uid/gid to the caller's. Nothing else of the host's
// id space exists inside, and no setuid helper (newuidmap) is involved.
#pragma once

#include <sys/types.h>

#include "src/core/error.hpp"

namespace nestbox::launcher {

Result<void> write_id_maps(uid_t inside_uid, uid_t outside_uid, gid_t inside_gid,
                           gid_t outside_gid);

}  // namespace nestbox::launcher
