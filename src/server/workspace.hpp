// Agents' files, reached only through two-phase containment:
//   1. lexical: absolute paths, '..', NUL bytes and overlong paths are refused outright;
//   2. resolution: openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from the agent's workspace
//      directory fd, so no symlink (planted by a command, or swapped in during the request) can
//      lead outside; the kernel answers EXDEV and the request gets a 403.
// Every operation runs with the thread's fsuid/fsgid set to the agent's (FsIdentity), so the
// kernel's own permission checks apply as that agent and new files are the agent's.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/core/unique_fd.hpp"
#include "src/server/agents.hpp"
#include "src/server/requests.hpp"

namespace nestbox::server {

// Sets the calling thread's filesystem uid/gid for its lifetime. Linux keeps them per thread, and
// a non-zero fsuid drops the filesystem capabilities (CAP_DAC_OVERRIDE, CAP_CHOWN, ...) from the
// thread's effective set until it is restored. Never held across a co_await.
class FsIdentity {
  public:
    FsIdentity(uid_t uid, gid_t gid);
    ~FsIdentity();
    FsIdentity(const FsIdentity&) = delete;
    FsIdentity& operator=(const FsIdentity&) = delete;

  private:
    uid_t old_uid_;
    gid_t old_gid_;
};

// openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) of `rel` ("" for the directory itself) below
// the directory `root`; an invalid fd with errno set on failure (EXDEV for an escape).
UniqueFd open_beneath(int root, const std::string& rel, std::uint64_t flags);

// "a/b" + "c" -> "a/b/c"; "" + "c" -> "c".
std::string join_path(const std::string& prefix, const std::string& name);

// The agent's workspace directory, opened without following a symlink in its place.
UniqueFd open_workspace(const Agent& agent);

struct FileContent {
    std::string data;  // encoded as `encoding` says
    Encoding encoding = Encoding::Utf8;
    std::uint64_t size = 0;
};

struct DirEntry {
    std::string name;
    std::string path;  // relative to the workspace root (or the shared prefix)
    std::string type;  // "file", "directory", "symlink" or "other"
    std::uint64_t size = 0;
    double mtime = 0;  // seconds since the epoch
};

struct Listing {
    std::vector<DirEntry> entries;
    bool truncated = false;
};

class Workspaces {
  public:
    // `shared`: prefix name -> host directory, served read-only.
    Workspaces(std::map<std::string, std::string> shared, std::uint64_t max_file_bytes)
        : shared_(std::move(shared)), max_file_bytes_(max_file_bytes) {}

    // Phase 1 alone: the normalized relative path ("" for the root), or 400/403.
    static Parsed<std::string> check_path(const std::string& path, bool allow_root);

    Parsed<FileContent> read(const Agent& agent, const std::string& path,
                             std::optional<Encoding> encoding) const;
    Parsed<std::string> read_bytes(const Agent& agent, const std::string& path) const;
    Parsed<bool> exists(const Agent& agent, const std::string& path) const;
    Parsed<std::uint64_t> write(const Agent& agent, const std::string& path,
                                const std::string& content, unsigned mode) const;
    // Refuses what write() would refuse (a read-only shared directory, a parent that is a file, a
    // directory at the path) without changing anything, so that a request writing several files
    // can refuse before it writes any.
    Parsed<void> check_write(const Agent& agent, const std::string& path) const;
    Parsed<Listing> list(const Agent& agent, const std::string& path, bool recursive) const;
    Parsed<void> remove(const Agent& agent, const std::string& path, bool recursive) const;

    // For /exec's cwd: the normalized path if it is a directory in the workspace or does not
    // exist yet (checked before anything is written); make_dir then creates it, parents included.
    Parsed<std::string> dir_or_absent(const Agent& agent, const std::string& field,
                                      const std::string& path) const;
    Parsed<void> make_dir(const Agent& agent, const std::string& rel) const;

    const std::map<std::string, std::string>& shared() const { return shared_; }

  private:
    std::map<std::string, std::string> shared_;
    std::uint64_t max_file_bytes_;
};

inline constexpr std::size_t kMaxListEntries = 10000;

}  // namespace nestbox::server
