// Atomic file replacement: readers see the old content or the new one, never a torn mix, and a
// crash leaves no half-written file behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "src/core/error.hpp"

namespace nestbox {

// Writes `content` to `name` in the directory `dirfd` (which the caller has already resolved
// safely): an unnamed O_TMPFILE is written and fsynced, linked in under a temporary name, renamed
// over `name`, and the directory fsynced. The new file is owned by the caller's fsuid/fsgid.
Result<void> write_atomically_at(int dirfd, const std::string& name, std::string_view content,
                                 mode_t mode);

// The same for a full path.
Result<void> write_file_atomically(const std::string& path, std::string_view content, mode_t mode);

}  // namespace nestbox
