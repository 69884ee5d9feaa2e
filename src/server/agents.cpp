#include "src/server/agents.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <cerrno>
#include <mutex>

#include "src/core/atomic_file.hpp"
#include "src/core/files.hpp"
#include "src/core/json_writer.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox::server {

namespace {

constexpr const char* kFile = "agents.json";
constexpr const char* kLock = "agents.lock";

// Holds an exclusive flock: other servers sharing the state dir wait for us.
class FileLock {
  public:
    static Result<FileLock> acquire(const std::string& path) {
        FileLock l;
        l.fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
        if (!l.fd_) return Error::from_errno("agents", "open " + path);
        while (::flock(l.fd_.get(), LOCK_EX) != 0) {
            if (errno != EINTR) return Error::from_errno("agents", "flock " + path);
        }
        return l;
    }

  private:
    UniqueFd fd_;  // closing it releases the lock
};

bool host_has_uid(uid_t uid) {
    passwd pw{};
    passwd* found = nullptr;
    char buf[4096];
    return ::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr;
}

}  // namespace

std::uint32_t fnv1a32(std::string_view s) {
    std::uint32_t h = 2166136261U;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 16777619U;
    }
    return h;
}

Result<std::unique_ptr<AgentRegistry>> AgentRegistry::open(std::string workspace_root,
                                                           std::string state_dir) {
    std::unique_ptr<AgentRegistry> r(
        new AgentRegistry(std::move(workspace_root), std::move(state_dir)));
    for (const auto& [dir, mode] : {std::pair{r->root_, 0711}, std::pair{r->state_dir_, 0700}}) {
        if (::mkdir(dir.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
            return Error::from_errno("agents", "mkdir " + dir);
        }
    }
    NESTBOX_TRY_ASSIGN(FileLock lock, FileLock::acquire(r->state_dir_ + "/" + kLock));
    NESTBOX_TRY(r->load_locked());
    return r;
}

Result<void> AgentRegistry::load_locked() {
    const std::string path = state_dir_ + "/" + kFile;
    auto text = read_file(AT_FDCWD, path, 64 << 20);
    if (!text) {
        if (text.error().code() == ENOENT) return {};
        return Error("agents", path, text.error().code());
    }
    simdjson::padded_string padded(*text);
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc;
    simdjson::ondemand::object agents;
    auto corrupt = [&path](const char* why) {
        return Error("agents", path + " is corrupt (" + why + "); refusing to reassign UIDs",
                     EINVAL);
    };
    if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
        doc["agents"].get_object().get(agents) != simdjson::SUCCESS) {
        return corrupt("not the registry's JSON");
    }
    std::map<std::string, uid_t> uids;
    std::set<uid_t> used;
    for (auto entry : agents) {
        std::string_view id;
        std::uint64_t uid = 0;
        if (entry.unescaped_key().get(id) != simdjson::SUCCESS ||
            entry.value().get_uint64().get(uid) != simdjson::SUCCESS || uid < kFirstAgentUid ||
            uid >= kFirstAgentUid + kAgentUidRange) {
            return corrupt("bad entry");
        }
        uids.emplace(std::string(id), static_cast<uid_t>(uid));
        used.insert(static_cast<uid_t>(uid));
    }
    uids_ = std::move(uids);
    used_ = std::move(used);
    return {};
}

Result<void> AgentRegistry::save_locked() const {
    JsonWriter w;
    w.begin_object().field("version", 1).key("agents").begin_object();
    for (const auto& [id, uid] : uids_)
        w.field(id, static_cast<std::uint64_t>(uid));
    w.end_object().end_object();
    return write_file_atomically(state_dir_ + "/" + kFile, w.str() + "\n", 0600);
}

uid_t AgentRegistry::pick_uid(const std::string& id) const {
    const uid_t start = fnv1a32(id) % kAgentUidRange;
    for (uid_t i = 0; i < kAgentUidRange; ++i) {
        const uid_t uid = kFirstAgentUid + (start + i) % kAgentUidRange;
        if (!used_.contains(uid) && !host_has_uid(uid)) return uid;
    }
    return 0;  // 60000 agents: the range is exhausted
}

Agent AgentRegistry::make(const std::string& id, uid_t uid) const {
    return Agent{id, uid, uid, root_ + "/" + id};
}

Result<void> AgentRegistry::ensure_workspace(const Agent& a) const {
    if (::mkdir(a.workspace.c_str(), 0700) != 0 && errno != EEXIST) {
        return Error::from_errno("agents", "mkdir " + a.workspace);
    }
    // O_NOFOLLOW: the workspace itself must be a directory, not a link planted in the root.
    UniqueFd dir(::open(a.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return Error::from_errno("agents", a.workspace + " is not a directory");
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) return Error::from_errno("agents", "stat " + a.workspace);
    if (st.st_uid != a.uid || st.st_gid != a.gid || (st.st_mode & 07777) != 0700) {
        if (::fchown(dir.get(), a.uid, a.gid) != 0 || ::fchmod(dir.get(), 0700) != 0) {
            return Error::from_errno("agents", "chown " + a.workspace);
        }
    }
    return {};
}

Result<Agent> AgentRegistry::get_or_create(const std::string& id) {
    {
        std::shared_lock read(mu_);
        if (auto it = uids_.find(id); it != uids_.end()) {
            Agent a = make(id, it->second);
            read.unlock();
            NESTBOX_TRY(ensure_workspace(a));
            return a;
        }
    }
    std::unique_lock write(mu_);
    NESTBOX_TRY_ASSIGN(FileLock lock, FileLock::acquire(state_dir_ + "/" + kLock));
    // Another server may have assigned it meanwhile: the file under the lock is the truth.
    NESTBOX_TRY(load_locked());
    auto it = uids_.find(id);
    if (it == uids_.end()) {
        const uid_t uid = pick_uid(id);
        if (uid == 0) return Error("agents", "no free UID left for " + id, ENOSPC);
        uids_.emplace(id, uid);
        used_.insert(uid);
        if (auto saved = save_locked(); !saved) {
            uids_.erase(id);
            used_.erase(uid);
            return saved.error();
        }
        it = uids_.find(id);
    }
    Agent a = make(id, it->second);
    NESTBOX_TRY(ensure_workspace(a));
    return a;
}

std::size_t AgentRegistry::size() const {
    std::shared_lock read(mu_);
    return uids_.size();
}

}  // namespace nestbox::server
