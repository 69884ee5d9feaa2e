#include "src/server/workspace.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "src/core/atomic_file.hpp"
#include "src/core/base64.hpp"
#include "src/core/files.hpp"
#include "src/core/unique_fd.hpp"
#include "src/core/utf8.hpp"

namespace nestbox::server {

namespace {

constexpr std::size_t kMaxPath = 4096;
constexpr std::size_t kMaxComponent = 255;

// Maps a resolution errno to the response the contract gives it.
ApiError resolve_error(int err, const std::string& path) {
    switch (err) {
        case EXDEV:
        case ELOOP:
            return ApiError::forbidden("'" + path + "' leads outside the workspace");
        case ENOENT:
            return ApiError::not_found("not_found", "'" + path + "' does not exist");
        case ENOTDIR:
            return ApiError::not_found("not_found",
                                       "a parent of '" + path + "' is not a directory");
        case EACCES:
        case EPERM:
            return {http::status::forbidden, "permission_denied",
                    "'" + path + "': permission denied"};
        case ENAMETOOLONG:
            return ApiError::bad_request("path_too_long", "'" + path + "' is too long");
        default: {
            const char* text = strerrordesc_np(err);
            return ApiError::internal("'" + path + "': " + (text != nullptr ? text : "error"));
        }
    }
}

// Phase 2: resolves `rel` beneath the directory `root`, or the response for why it could not.
Parsed<UniqueFd> open_checked(int root, const std::string& rel, std::uint64_t flags,
                              const std::string& shown) {
    UniqueFd fd = open_beneath(root, rel, flags);
    if (!fd) return resolve_error(errno, shown);
    return fd;
}

// Where a request path lands: the agent's workspace, or a read-only shared directory.
struct Target {
    UniqueFd root;
    std::string rel;  // beneath root
    bool shared = false;
};

std::pair<std::string, std::string> split_parent(const std::string& rel) {
    const std::size_t slash = rel.rfind('/');
    if (slash == std::string::npos) return {"", rel};
    return {rel.substr(0, slash), rel.substr(slash + 1)};
}

std::string type_of(mode_t mode) {
    if (S_ISREG(mode)) return "file";
    if (S_ISDIR(mode)) return "directory";
    if (S_ISLNK(mode)) return "symlink";
    return "other";
}

double seconds(const timespec& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// Removes the directory `name` in `parent` and everything in it, without following symlinks.
Result<void> remove_tree(int parent, const std::string& name) {
    UniqueFd dir(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return Error::from_errno("delete", name);
    NESTBOX_TRY_ASSIGN(auto children, list_names(dir.get()));
    for (const std::string& child : children) {
        struct stat st {};
        if (::fstatat(dir.get(), child.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue;
            return Error::from_errno("delete", child);
        }
        if (S_ISDIR(st.st_mode)) {
            NESTBOX_TRY(remove_tree(dir.get(), child));
        } else if (::unlinkat(dir.get(), child.c_str(), 0) != 0 && errno != ENOENT) {
            return Error::from_errno("delete", child);
        }
    }
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0)
        return Error::from_errno("delete", name);
    return {};
}

}  // namespace

UniqueFd open_beneath(int root, const std::string& rel, std::uint64_t flags) {
    open_how how{};
    // openat2 rejects flags O_PATH does not take (O_NOCTTY among them) instead of ignoring them.
    how.flags = flags | O_CLOEXEC | ((flags & O_PATH) != 0 ? 0 : O_NOCTTY);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    return UniqueFd(static_cast<int>(
        ::syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how)));
}

std::string join_path(const std::string& prefix, const std::string& name) {
    if (prefix.empty()) return name;
    std::string out = prefix;
    out += '/';
    out += name;
    return out;
}

// Opened as the server (root), before the thread takes the agent's fsuid: the directories above
// the workspace root are the operator's and need not be searchable by agents.
UniqueFd open_workspace(const Agent& agent) {
    return UniqueFd(
        ::open(agent.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

FsIdentity::FsIdentity(uid_t uid, gid_t gid)
    : old_uid_(static_cast<uid_t>(::setfsuid(uid))),
      old_gid_(static_cast<gid_t>(::setfsgid(gid))) {}

FsIdentity::~FsIdentity() {
    ::setfsuid(old_uid_);
    ::setfsgid(old_gid_);
}

Parsed<std::string> Workspaces::check_path(const std::string& path, bool allow_root) {
    if (path.find('\0') != std::string::npos)
        return ApiError::invalid_field("path", "contains a NUL byte");
    if (path.size() > kMaxPath)
        return ApiError::bad_request("path_too_long", "path is longer than 4096 bytes");
    if (!path.empty() && path.front() == '/') {
        return ApiError::forbidden("'" + path +
                                   "' is absolute; paths are relative to the workspace");
    }
    std::string out;
    std::size_t i = 0;
    while (i <= path.size()) {
        const std::size_t end = std::min(path.find('/', i), path.size());
        const std::string part = path.substr(i, end - i);
        i = end + 1;
        if (part.empty() || part == ".") continue;
        if (part == "..") return ApiError::forbidden("'" + path + "' contains '..'");
        if (part.size() > kMaxComponent)
            return ApiError::bad_request("path_too_long",
                                         "a component of the path is longer than 255 bytes");
        out += (out.empty() ? "" : "/") + part;
    }
    if (out.empty() && !allow_root)
        return ApiError::invalid_field("path", "names the workspace itself");
    return out;
}

namespace {

// Resolves a checked path to its root: a shared prefix wins, as the contract says.
Parsed<Target> target_for(const Agent& agent, const std::map<std::string, std::string>& shared,
                          const std::string& rel) {
    Target t;
    const std::size_t slash = rel.find('/');
    const std::string first = rel.substr(0, slash);
    if (auto it = shared.find(first); it != shared.end()) {
        t.shared = true;
        t.rel = slash == std::string::npos ? "" : rel.substr(slash + 1);
        t.root.reset(::open(it->second.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!t.root) return ApiError::internal("shared directory '" + first + "' is unavailable");
        return t;
    }
    t.rel = rel;
    t.root = open_workspace(agent);
    if (!t.root) return ApiError::internal("the workspace of " + agent.id + " is unavailable");
    return t;
}

// A write may replace a file or a link, never a directory.
Parsed<void> refuse_directory(int parent, const std::string& name, const std::string& shown) {
    struct stat st {};
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
        return ApiError::bad_request("is_a_directory", "'" + shown + "' is a directory");
    return {};
}

// The target of a write or a delete: a checked path, not in a read-only shared directory.
Parsed<Target> writable_target(const Agent& agent, const std::map<std::string, std::string>& shared,
                               const std::string& path) {
    auto rel = Workspaces::check_path(path, false);
    if (!rel) return rel.error();
    auto t = target_for(agent, shared, *rel);
    if (t && t->shared) {
        return ApiError{http::status::forbidden, "read_only",
                        "'" + path + "' is in a read-only shared directory"};
    }
    return t;
}

// Opens the directory `rel` beneath `root`, making what is missing; with `create` false it makes
// nothing and returns an empty fd where a part is missing (nothing there can be in the way).
Parsed<UniqueFd> make_parents(int root, const std::string& rel, const std::string& shown,
                              bool create = true) {
    UniqueFd dir(::fcntl(root, F_DUPFD_CLOEXEC, 3));
    if (rel.empty()) return dir;
    std::string prefix;
    std::size_t i = 0;
    while (i <= rel.size()) {
        const std::size_t end = std::min(rel.find('/', i), rel.size());
        const std::string part = rel.substr(i, end - i);
        i = end + 1;
        prefix += (prefix.empty() ? "" : "/") + part;
        auto next = open_checked(root, prefix, O_RDONLY | O_DIRECTORY, shown);
        if (!next && next.error().status == http::status::not_found) {
            if (!create) {
                struct stat st {};
                if (::fstatat(dir.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                    return UniqueFd();  // missing, to be made
            } else {
                if (::mkdirat(dir.get(), part.c_str(), 0755) != 0 && errno != EEXIST)
                    return resolve_error(errno, shown);
                next = open_checked(root, prefix, O_RDONLY | O_DIRECTORY, shown);
            }
        }
        if (!next) {
            if (next.error().status == http::status::not_found) {
                return ApiError::bad_request("not_a_directory",
                                             "a parent of '" + shown + "' is not a directory");
            }
            return next.error();
        }
        dir = std::move(*next);
    }
    return dir;
}

}  // namespace

Parsed<std::string> Workspaces::read_bytes(const Agent& agent, const std::string& path) const {
    auto rel = check_path(path, false);
    if (!rel) return rel.error();
    auto t = target_for(agent, shared_, *rel);
    if (!t) return t.error();
    const FsIdentity as_agent(agent.uid, agent.gid);
    // O_NONBLOCK: opening a FIFO planted in the workspace must not hang the server.
    auto fd = open_checked(t->root.get(), t->rel, O_RDONLY | O_NONBLOCK, path);
    if (!fd) return fd.error();
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return resolve_error(errno, path);
    if (S_ISDIR(st.st_mode))
        return ApiError::bad_request("is_a_directory", "'" + path + "' is a directory");
    if (!S_ISREG(st.st_mode))
        return ApiError::bad_request("not_a_file", "'" + path + "' is not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > max_file_bytes_) {
        return ApiError{
            http::status::payload_too_large, "file_too_large",
            "'" + path + "' is larger than " + std::to_string(max_file_bytes_) + " bytes"};
    }
    auto data = read_fd(fd->get(), max_file_bytes_);
    if (!data) return resolve_error(data.error().code(), path);
    return std::move(*data);
}

Parsed<FileContent> Workspaces::read(const Agent& agent, const std::string& path,
                                     std::optional<Encoding> encoding) const {
    auto data = read_bytes(agent, path);
    if (!data) return data.error();
    FileContent out;
    out.size = data->size();
    bool text = encoding == Encoding::Utf8;
    if (!encoding) {
        text = true;
        for (std::size_t i = 0; i < data->size() && text;) {
            const std::size_t n = utf8_sequence_length(std::string_view(*data).substr(i));
            text = n > 0;
            i += n;
        }
    }
    out.encoding = text ? Encoding::Utf8 : Encoding::Base64;
    out.data = text ? std::move(*data) : base64_encode(*data);
    return out;
}

Parsed<bool> Workspaces::exists(const Agent& agent, const std::string& path) const {
    auto rel = check_path(path, true);
    if (!rel) return rel.error();
    auto t = target_for(agent, shared_, *rel);
    if (!t) return t.error();
    const FsIdentity as_agent(agent.uid, agent.gid);
    if (open_beneath(t->root.get(), t->rel, O_PATH)) return true;
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return resolve_error(errno, path);  // an escape is a 403, not "no"
}

Parsed<std::uint64_t> Workspaces::write(const Agent& agent, const std::string& path,
                                        const std::string& content, unsigned mode) const {
    auto t = writable_target(agent, shared_, path);
    if (!t) return t.error();
    const FsIdentity as_agent(agent.uid, agent.gid);
    const auto [parent_rel, name] = split_parent(t->rel);
    auto parent = make_parents(t->root.get(), parent_rel, path);
    if (!parent) return parent.error();
    if (auto free = refuse_directory(parent->get(), name, path); !free) return free.error();
    if (auto w = write_atomically_at(parent->get(), name, content, mode); !w) {
        return resolve_error(w.error().code(), path);
    }
    return static_cast<std::uint64_t>(content.size());
}

Parsed<void> Workspaces::check_write(const Agent& agent, const std::string& path) const {
    auto t = writable_target(agent, shared_, path);
    if (!t) return t.error();
    const FsIdentity as_agent(agent.uid, agent.gid);
    const auto [parent_rel, name] = split_parent(t->rel);
    auto parent = make_parents(t->root.get(), parent_rel, path, false);
    if (!parent) return parent.error();
    if (!*parent) return {};  // its parents are yet to be made: nothing can be in the way
    return refuse_directory(parent->get(), name, path);
}

Parsed<Listing> Workspaces::list(const Agent& agent, const std::string& path,
                                 bool recursive) const {
    auto rel = check_path(path, true);
    if (!rel) return rel.error();
    Listing out;
    if (rel->empty()) {
        // The root also shows the shared prefixes, as the directories they appear to be.
        for (const auto& [name, dir] : shared_)
            out.entries.push_back({name, name, "directory", 0, 0});
    }
    auto t = target_for(agent, shared_, *rel);
    if (!t) return t.error();
    const FsIdentity as_agent(agent.uid, agent.gid);
    auto top = open_checked(t->root.get(), t->rel, O_RDONLY | O_DIRECTORY, path);
    if (!top) {
        if (top.error().status == http::status::not_found) {
            return ApiError::not_found("not_found", "'" + path + "' is not a directory");
        }
        return top.error();
    }
    std::function<void(int, const std::string&, int)> walk =
        [&](int dirfd, const std::string& prefix, int depth) {
            auto names = list_names(dirfd);
            if (!names) return;
            std::vector<DirEntry> here;
            for (const std::string& name : *names) {
                struct stat st {};
                if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
                here.push_back({name, join_path(prefix, name), type_of(st.st_mode),
                                static_cast<std::uint64_t>(st.st_size), seconds(st.st_mtim)});
            }
            std::sort(here.begin(), here.end(),
                      [](const auto& a, const auto& b) { return a.name < b.name; });
            for (DirEntry& e : here) {
                if (out.entries.size() >= kMaxListEntries) {
                    out.truncated = true;
                    return;
                }
                const bool descend = recursive && e.type == "directory" && depth < 64;
                const std::string child_prefix = e.path;
                out.entries.push_back(std::move(e));
                if (descend) {
                    UniqueFd child(::openat(dirfd, out.entries.back().name.c_str(),
                                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                    if (child) walk(child.get(), child_prefix, depth + 1);
                }
            }
        };
    walk(top->get(), *rel, 0);
    return out;
}

Parsed<void> Workspaces::remove(const Agent& agent, const std::string& path, bool recursive) const {
    auto t = writable_target(agent, shared_, path);
    if (!t) return t.error();
    const FsIdentity as_agent(agent.uid, agent.gid);
    const auto [parent_rel, name] = split_parent(t->rel);
    auto parent = open_checked(t->root.get(), parent_rel, O_RDONLY | O_DIRECTORY, path);
    if (!parent) return parent.error();
    struct stat st {};
    if (::fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return resolve_error(errno, path);
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(parent->get(), name.c_str(), 0) != 0) return resolve_error(errno, path);
        return {};
    }
    if (!recursive) {
        if (::unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR) == 0) return {};
        if (errno == ENOTEMPTY || errno == EEXIST) {
            return ApiError::bad_request("directory_not_empty",
                                         "'" + path + "' is not empty; pass \"recursive\": true");
        }
        return resolve_error(errno, path);
    }
    if (auto r = remove_tree(parent->get(), name); !r) return resolve_error(r.error().code(), path);
    return {};
}

Parsed<std::string> Workspaces::dir_or_absent(const Agent& agent, const std::string& field,
                                              const std::string& path) const {
    auto rel = check_path(path, true);
    if (!rel) {
        ApiError e = rel.error();
        e.message = field + ": " + e.message;
        return e;
    }
    UniqueFd root = open_workspace(agent);
    if (!root) return ApiError::internal("the workspace of " + agent.id + " is unavailable");
    const FsIdentity as_agent(agent.uid, agent.gid);
    UniqueFd dir = open_beneath(root.get(), *rel, O_PATH | O_DIRECTORY);
    if (dir || errno == ENOENT) return *rel;
    if (errno == ENOTDIR)
        return ApiError::invalid_field(field, "'" + path + "' is not a directory");
    ApiError e = resolve_error(errno, path);
    e.message = field + ": " + e.message;
    return e;
}

Parsed<void> Workspaces::make_dir(const Agent& agent, const std::string& rel) const {
    UniqueFd root = open_workspace(agent);
    if (!root) return ApiError::internal("the workspace of " + agent.id + " is unavailable");
    const FsIdentity as_agent(agent.uid, agent.gid);
    auto dir = make_parents(root.get(), rel, rel);
    if (!dir) return dir.error();
    return {};
}

}  // namespace nestbox::server
