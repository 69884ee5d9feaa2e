#include "launcher/mounts.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <string>

#include "src/core/files.hpp"

namespace nestbox::launcher {

namespace {

using Kind = MountStep::Kind;

// Where the new root's tmpfs is staged. Host paths under it are hidden once it is mounted, which
// is why every host source is opened before (resolve_sources).
constexpr const char* kStaging = "/tmp";
constexpr const char* kStagingOptions = "mode=0755,size=1m";
struct DevNode {
    const char* name;
    unsigned major, minor;
};
constexpr DevNode kDevNodes[] = {{"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
                                 {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
constexpr const char* kDevLinks[][2] = {{"fd", "/proc/self/fd"},
                                        {"stdin", "/proc/self/fd/0"},
                                        {"stdout", "/proc/self/fd/1"},
                                        {"stderr", "/proc/self/fd/2"},
                                        {"ptmx", "pts/ptmx"}};
constexpr gid_t kTtyGid = 5;  // Debian's tty group: devpts gives new terminals to it

std::string describe(const MountStep& s) {
    switch (s.kind) {
        case Kind::SystemDir:
        case Kind::RoBind:
            return "ro-bind " + s.source + " -> " + s.dest;
        case Kind::Bind:
            return "bind " + s.source + " -> " + s.dest;
        case Kind::Tmpfs:
            return "tmpfs " + s.dest;
        case Kind::Dir:
            return "dir " + s.dest;
        case Kind::Symlink:
            return "symlink " + s.dest + " -> " + s.source;
        case Kind::Proc:
            return "proc " + s.dest;
        case Kind::Dev:
            return "dev " + s.dest;
        case Kind::File:
            return "file " + s.dest;
    }
    return s.dest;
}

// Re-labels an error with the step it belongs to, keeping its errno:
// "mounts: bind /usr -> /usr: open_tree: Permission denied".
Error in_step(const MountStep& s, const Error& e) {
    std::string detail = e.step();
    if (!e.what().empty()) detail += (detail.empty() ? "" : " ") + e.what();
    return Error("mounts", describe(s) + (detail.empty() ? "" : ": " + detail), e.code());
}

Error sys(const char* call) {
    return Error::from_errno(call, "");
}

std::string fd_path(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

// Opens `path` (absolute, inside the new root) relative to `root`, resolving every symlink as if
// `root` were "/": a symlink placed in the sandbox can never lead a later step onto the host.
Result<UniqueFd> open_in_root(int root, const std::string& path, std::uint64_t flags) {
    open_how how{};
    how.flags = flags | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    const std::string rel = path.size() > 1 ? path.substr(1) : ".";
    UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, root, rel.c_str(), &how, sizeof how)));
    if (!fd) return Error::from_errno("openat2", path);
    return fd;
}

// mkdir -p inside the new root; returns an O_PATH fd of the directory.
Result<UniqueFd> make_dirs(int root, const std::string& path, unsigned mode = 0755) {
    UniqueFd dir(::fcntl(root, F_DUPFD_CLOEXEC, 3));
    if (!dir) return sys("fcntl");
    std::string prefix;
    std::size_t i = 1;
    while (i < path.size()) {
        const std::size_t end = std::min(path.find('/', i), path.size());
        const std::string name = path.substr(i, end - i);
        prefix += "/" + name;
        i = end + 1;
        auto next = open_in_root(root, prefix, O_PATH | O_DIRECTORY);
        if (!next && next.error().code() == ENOENT) {
            if (::mkdirat(dir.get(), name.c_str(), mode) != 0)
                return Error::from_errno("mkdir", prefix);
            // Just created in a tmpfs only this process can reach: no symlink can be there.
            next = open_at(dir.get(), name, O_PATH | O_DIRECTORY | O_NOFOLLOW);
        }
        if (!next) return next.error();
        dir = std::move(*next);
    }
    return dir;
}

std::pair<std::string, std::string> split_parent(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// An empty file or directory to mount over, matching what is mounted there.
Result<UniqueFd> make_mountpoint(int root, const std::string& dest, bool dir) {
    if (dir) return make_dirs(root, dest);
    const auto [parent_path, name] = split_parent(dest);
    NESTBOX_TRY_ASSIGN(UniqueFd parent, make_dirs(root, parent_path));
    // Something already there (a file of the default root, itself perhaps a read-only bind) is
    // mounted over as it is, resolved in the root; only a missing one is created.
    UniqueFd existing(::openat(parent.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (existing) return open_in_root(root, dest, O_PATH);
    if (errno != ENOENT) return Error::from_errno("open", dest);
    UniqueFd file(::openat(parent.get(), name.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!file) return Error::from_errno("create", dest);
    return file;
}

// A detached copy of a host mount tree, taken now, before the staging root hides anything.
Result<UniqueFd> clone_tree(const std::string& path) {
    UniqueFd fd(static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, path.c_str(),
                                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)));
    if (!fd) return Error::from_errno("open_tree", "");
    return fd;
}

// Sets mount flags on a whole detached tree (recursively: every submount of /usr becomes
// read-only too, which mount(2)'s MS_REMOUNT cannot do in one call), then attaches it.
Result<void> attach(const UniqueFd& tree, int target, std::uint64_t attr_set) {
    mount_attr attr{};
    attr.attr_set = attr_set;
    if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                  sizeof attr) != 0) {
        return sys("mount_setattr");
    }
    if (::syscall(SYS_move_mount, tree.get(), "", target, "",
                  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
        return sys("move_mount");
    }
    return {};
}

// Mounts a new filesystem on the directory `target` refers to, through its /proc/self/fd magic
// link: the kernel mounts on exactly that directory, whatever its path would resolve to now.
Result<void> mount_fs(int target, const char* type, unsigned long flags, const std::string& data) {
    if (::mount(type, fd_path(target).c_str(), type, flags,
                data.empty() ? nullptr : data.c_str()) != 0) {
        return sys("mount");
    }
    return {};
}

// What a step needs from the host.
struct Source {
    UniqueFd tree;
    bool is_dir = false;
    bool missing = false;     // an optional source that does not exist
    std::string link_target;  // a system directory the host has as a symlink (merged /usr)
    std::vector<std::pair<const char*, UniqueFd>> dev_nodes;
};

Result<Source> resolve_source(const MountStep& s, const SandboxUser& user) {
    Source src;
    switch (s.kind) {
        case Kind::SystemDir: {
            struct stat st {};
            if (::lstat(s.source.c_str(), &st) != 0) {
                if (errno == ENOENT) {
                    src.missing = true;
                    return src;
                }
                return Error::from_errno("lstat", "");
            }
            if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                const ssize_t n = ::readlink(s.source.c_str(), target, sizeof target - 1);
                if (n < 0) return Error::from_errno("readlink", "");
                src.link_target.assign(target, static_cast<std::size_t>(n));
                return src;
            }
            [[fallthrough]];
        }
        case Kind::Bind:
        case Kind::RoBind: {
            auto tree = clone_tree(s.source);
            if (!tree) {
                if (tree.error().code() == ENOENT && (s.optional || s.kind == Kind::SystemDir)) {
                    src.missing = true;
                    return src;
                }
                return tree.error();
            }
            struct stat st {};
            if (::fstat(tree->get(), &st) != 0) return sys("fstat");
            src.is_dir = S_ISDIR(st.st_mode);
            src.tree = std::move(*tree);
            return src;
        }
        case Kind::Dev:
            // Root mode creates the nodes with mknod(2); a user namespace may not, so rootless
            // mode binds the host's nodes instead, as bubblewrap does.
            if (!user.rootless) return src;
            for (const DevNode& node : kDevNodes) {
                NESTBOX_TRY_ASSIGN(UniqueFd tree, clone_tree(std::string("/dev/") + node.name));
                src.dev_nodes.emplace_back(node.name, std::move(tree));
            }
            return src;
        case Kind::Tmpfs:
        case Kind::Dir:
        case Kind::Symlink:
        case Kind::Proc:
        case Kind::File:
            return src;
    }
    return src;
}

Result<void> make_symlink(int root, const std::string& target, const std::string& dest) {
    const auto [parent_path, name] = split_parent(dest);
    NESTBOX_TRY_ASSIGN(UniqueFd parent, make_dirs(root, parent_path));
    if (::symlinkat(target.c_str(), parent.get(), name.c_str()) == 0) return {};
    if (errno != EEXIST) return sys("symlink");
    // An identical existing link is fine (bubblewrap allows repeating --symlink).
    char existing[PATH_MAX];
    const ssize_t n = ::readlinkat(parent.get(), name.c_str(), existing, sizeof existing - 1);
    if (n >= 0 && std::string(existing, static_cast<std::size_t>(n)) == target) return {};
    return Error("symlink", "something else already exists there", EEXIST);
}

Result<void> write_file(int root, const std::string& dest, const std::string& content) {
    const auto [parent_path, name] = split_parent(dest);
    NESTBOX_TRY_ASSIGN(UniqueFd parent, make_dirs(root, parent_path));
    UniqueFd fd(::openat(parent.get(), name.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd) return sys("create");
    return write_all(fd.get(), content);
}

std::string tmpfs_options(unsigned mode, std::uint64_t size, const SandboxUser* owner) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "mode=%o,size=%llu", mode,
                  static_cast<unsigned long long>(size));
    std::string out = buf;
    // Rootless, init already runs as the sandbox user, so the tmpfs is its own; in root mode the
    // owner must be named (in ids of the mounting namespace).
    if (owner != nullptr && !owner->rootless) {
        out += ",uid=" + std::to_string(owner->uid) + ",gid=" + std::to_string(owner->gid);
    }
    return out;
}

Result<void> make_dev(int root, const MountStep& s, Source& src, const SandboxUser& user) {
    NESTBOX_TRY_ASSIGN(UniqueFd under, make_dirs(root, s.dest));
    // Device nodes made with mknod(2) only work on a filesystem mounted without nodev; the
    // command cannot make any of its own (it has no CAP_MKNOD).
    const unsigned long nodev = user.rootless ? MS_NODEV : 0;
    NESTBOX_TRY(mount_fs(under.get(), "tmpfs", MS_NOSUID | MS_NOEXEC | nodev,
                         tmpfs_options(0755, kDevSize, nullptr)));
    // The fd from before the mount names the directory underneath; reopen to get the tmpfs.
    NESTBOX_TRY_ASSIGN(UniqueFd dev, open_in_root(root, s.dest, O_PATH | O_DIRECTORY));
    if (!user.rootless) {
        for (const DevNode& node : kDevNodes) {
            if (::mknodat(dev.get(), node.name, S_IFCHR | 0666, makedev(node.major, node.minor)) !=
                0) {
                return Error::from_errno("mknod", s.dest + "/" + node.name);
            }
        }
    }
    for (auto& [name, tree] : src.dev_nodes) {
        UniqueFd node(::openat(dev.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        if (!node) return Error::from_errno("create", s.dest + "/" + name);
        // The bind keeps the host node's device access; nosuid and noexec still apply.
        NESTBOX_TRY(attach(tree, node.get(), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC));
    }
    if (::mkdirat(dev.get(), "pts", 0755) != 0) return Error::from_errno("mkdir", s.dest + "/pts");
    NESTBOX_TRY_ASSIGN(UniqueFd pts, open_at(dev.get(), "pts", O_PATH | O_DIRECTORY | O_NOFOLLOW));
    // A private devpts instance: the sandbox's terminals, and only those.
    std::string pts_options = "newinstance,ptmxmode=0666,mode=620";
    if (!user.rootless) pts_options += ",gid=" + std::to_string(kTtyGid);
    NESTBOX_TRY(mount_fs(pts.get(), "devpts", MS_NOSUID | MS_NOEXEC, pts_options));
    if (::mkdirat(dev.get(), "shm", 01777) != 0) return Error::from_errno("mkdir", s.dest + "/shm");
    for (const auto& link : kDevLinks) {
        if (::symlinkat(link[1], dev.get(), link[0]) != 0) {
            return Error::from_errno("symlink", s.dest + "/" + link[0]);
        }
    }
    return {};
}

Result<void> apply(int root, const MountStep& s, Source& src, const SandboxUser& user) {
    if (src.missing) return {};
    switch (s.kind) {
        case Kind::SystemDir:
            if (!src.link_target.empty()) return make_symlink(root, src.link_target, s.dest);
            [[fallthrough]];
        case Kind::RoBind:
        case Kind::Bind: {
            NESTBOX_TRY_ASSIGN(UniqueFd target, make_mountpoint(root, s.dest, src.is_dir));
            std::uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            if (s.kind != Kind::Bind) attrs |= MOUNT_ATTR_RDONLY;
            return attach(src.tree, target.get(), attrs);
        }
        case Kind::Tmpfs: {
            NESTBOX_TRY_ASSIGN(UniqueFd dir, make_dirs(root, s.dest));
            return mount_fs(
                dir.get(), "tmpfs", MS_NOSUID | MS_NODEV,
                tmpfs_options(s.mode, s.size, s.owned_by_sandbox_user ? &user : nullptr));
        }
        case Kind::Dir: {
            NESTBOX_TRY_ASSIGN(UniqueFd dir, make_dirs(root, s.dest, s.mode));
            return {};
        }
        case Kind::Symlink:
            return make_symlink(root, s.source, s.dest);
        case Kind::Proc: {
            NESTBOX_TRY_ASSIGN(UniqueFd dir, make_dirs(root, s.dest));
            return mount_fs(dir.get(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "");
        }
        case Kind::Dev:
            return make_dev(root, s, src, user);
        case Kind::File:
            return write_file(root, s.dest, s.content);
    }
    return {};
}

// Modes in the plan are meant literally (/tmp is 1777), not filtered by the caller's umask.
class ZeroUmask {
  public:
    ZeroUmask() : saved_(::umask(0)) {}
    ~ZeroUmask() { ::umask(saved_); }
    ZeroUmask(const ZeroUmask&) = delete;
    ZeroUmask& operator=(const ZeroUmask&) = delete;

  private:
    mode_t saved_;
};

}  // namespace

Result<UniqueFd> build_root(const std::vector<MountStep>& steps, const SandboxUser& user) {
    const ZeroUmask literal_modes;
    // The namespace's mounts are copies of the host's and may share propagation with them: make
    // them private first, or the staging mount below would appear on the host's /tmp.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        return Error::from_errno("mounts", "making the mount namespace private");
    }
    std::vector<Source> sources;
    sources.reserve(steps.size());
    for (const MountStep& s : steps) {
        auto src = resolve_source(s, user);
        if (!src) return in_step(s, src.error());
        sources.push_back(std::move(*src));
    }
    if (::mount("tmpfs", kStaging, "tmpfs", MS_NOSUID | MS_NODEV, kStagingOptions) != 0) {
        return Error::from_errno("mounts", std::string("tmpfs root on ") + kStaging);
    }
    NESTBOX_TRY_ASSIGN(UniqueFd root, open_at(AT_FDCWD, kStaging, O_PATH | O_DIRECTORY));
    for (std::size_t i = 0; i < steps.size(); ++i) {
        if (auto r = apply(root.get(), steps[i], sources[i], user); !r) {
            return in_step(steps[i], r.error());
        }
        sources[i] = Source{};  // detached trees are released as soon as they are attached
    }
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    if (::syscall(SYS_mount_setattr, root.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
        return Error::from_errno("mounts", "making the root read-only");
    }
    return root;
}

}  // namespace nestbox::launcher
