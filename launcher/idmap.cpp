#include "launcher/idmap.hpp"

#include <fcntl.h>

#include <string>

#include "src/core/files.hpp"

namespace nestbox::launcher {

Result<void> write_id_maps(uid_t inside_uid, uid_t outside_uid, gid_t inside_gid,
                           gid_t outside_gid) {
    auto step = [](Result<void> r) -> Result<void> {
        if (!r) return Error("idmap", r.error().what(), r.error().code());
        return r;
    };
    // An unprivileged process may write its gid_map only after giving up setgroups(2): otherwise
    // it could drop a supplementary group that a file's permissions deny access to.
    NESTBOX_TRY(step(write_existing(AT_FDCWD, "/proc/self/setgroups", "deny")));
    NESTBOX_TRY(step(
        write_existing(AT_FDCWD, "/proc/self/uid_map",
                       std::to_string(inside_uid) + " " + std::to_string(outside_uid) + " 1")));
    NESTBOX_TRY(step(
        write_existing(AT_FDCWD, "/proc/self/gid_map",
                       std::to_string(inside_gid) + " " + std::to_string(outside_gid) + " 1")));
    return {};
}

}  // namespace nestbox::launcher
