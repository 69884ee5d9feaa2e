// Small, fd-based file helpers shared by the launcher and the server.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/error.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox {

// Opens `path` relative to `dirfd` (AT_FDCWD for the cwd) with O_CLOEXEC added.
Result<UniqueFd> open_at(int dirfd, const std::string& path, int flags, unsigned mode = 0);

// Reads a whole file of at most `limit` bytes; a larger file is an EFBIG error rather than a
// silent truncation.
Result<std::string> read_file(int dirfd, const std::string& path, std::size_t limit = 1 << 20);
Result<std::string> read_fd(int fd, std::size_t limit = 1 << 20);

// The names in the directory `path` relative to `dirfd` ("." for dirfd itself), without "." and
// "..". Callers that need an entry's type fstatat() it: d_type is DT_UNKNOWN on some filesystems.
Result<std::vector<std::string>> list_names(int dirfd, const std::string& path = ".");

// Writes all of `data`, retrying short writes and EINTR.
Result<void> write_all(int fd, std::string_view data);

// Opens an existing file for writing (no O_CREAT, no truncation) and writes `data`: the shape of
// every cgroup and /proc control file write.
Result<void> write_existing(int dirfd, const std::string& path, std::string_view data);

}  // namespace nestbox
