#include "src/server/artifacts.hpp"

#include <fcntl.h>
#include <magic.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <memory>

#include "src/core/files.hpp"
#include "src/core/unique_fd.hpp"
#include "src/server/workspace.hpp"

namespace nestbox::server {

namespace {

constexpr std::size_t kMaxWalk = 20000;

// libmagic handles are not thread-safe: one per thread, loaded on first use.
std::string mime_type_of(int fd) {
    struct MagicDeleter {
        void operator()(magic_t m) const { magic_close(m); }
    };
    thread_local std::unique_ptr<std::remove_pointer_t<magic_t>, MagicDeleter> cookie = [] {
        magic_t m = magic_open(MAGIC_MIME_TYPE | MAGIC_ERROR);
        if (m != nullptr && magic_load(m, nullptr) != 0) {
            magic_close(m);
            m = nullptr;
        }
        return std::unique_ptr<std::remove_pointer_t<magic_t>, MagicDeleter>(m);
    }();
    if (!cookie) return "application/octet-stream";
    // magic_descriptor may move the file offset; the fd is ours alone.
    const char* type = magic_descriptor(cookie.get(), fd);
    return type != nullptr ? type : "application/octet-stream";
}

}  // namespace

ArtifactSnapshot ArtifactSnapshot::take(const Agent& agent, const std::string& dir) {
    ArtifactSnapshot snap;
    snap.dir_ = dir;
    UniqueFd root = open_workspace(agent);
    const FsIdentity as_agent(agent.uid, agent.gid);
    UniqueFd top = root ? open_beneath(root.get(), dir, O_RDONLY | O_DIRECTORY) : UniqueFd();
    if (!top) return snap;  // no such directory yet: everything in it later is new
    std::function<void(int, const std::string&, int)> walk =
        [&](int dirfd, const std::string& prefix, int depth) {
            auto names = list_names(dirfd);
            if (!names) return;
            for (const std::string& name : *names) {
                if (snap.files_.size() >= kMaxWalk) break;
                struct stat st {};
                if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
                const std::string rel = join_path(prefix, name);
                if (S_ISREG(st.st_mode)) {
                    snap.files_[rel] = {static_cast<std::uint64_t>(st.st_size),
                                        st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                                        st.st_ino};
                } else if (S_ISDIR(st.st_mode) && depth < 32) {
                    UniqueFd child(::openat(dirfd, name.c_str(),
                                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                    if (child) walk(child.get(), rel, depth + 1);
                }
            }
        };
    walk(top.get(), "", 0);
    return snap;
}

std::vector<Artifact> ArtifactSnapshot::changed_since(const ArtifactSnapshot& before,
                                                      const Agent& agent) const {
    std::vector<Artifact> out;
    UniqueFd root = open_workspace(agent);
    const FsIdentity as_agent(agent.uid, agent.gid);
    UniqueFd top = root ? open_beneath(root.get(), dir_, O_RDONLY | O_DIRECTORY) : UniqueFd();
    for (const auto& [rel, stamp] : files_) {
        if (out.size() >= kMaxArtifacts) break;
        if (auto it = before.files_.find(rel); it != before.files_.end() && it->second == stamp)
            continue;
        Artifact a;
        a.path = "/workspace/" + (dir_.empty() ? rel : dir_ + "/" + rel);
        a.size = stamp.size;
        a.mime_type = "application/octet-stream";
        if (top) {
            UniqueFd f = open_beneath(top.get(), rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
            if (f) a.mime_type = mime_type_of(f.get());
        }
        out.push_back(std::move(a));
    }
    return out;
}

}  // namespace nestbox::server
