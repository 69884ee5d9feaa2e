// The agent registry: agent ID -> Linux UID, and the agent's workspace directory.
//
// UID = 10000 + FNV-1a-32(agent_id) mod 60000, probing upward on collision (and past UIDs the
// host's passwd database already names). Assignments are persisted in <state-dir>/agents.json,
// written atomically under an exclusive lock on <state-dir>/agents.lock, and re-read under that
// lock before every new assignment, so every server sharing the workspace root agrees and a
// restart changes nothing. No host /etc/passwd entry is created.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "src/core/error.hpp"

namespace nestbox::server {

struct Agent {
    std::string id;
    uid_t uid = 0;
    gid_t gid = 0;
    std::string workspace;  // <workspace-root>/<id>
};

inline constexpr uid_t kFirstAgentUid = 10000;
inline constexpr uid_t kAgentUidRange = 60000;

std::uint32_t fnv1a32(std::string_view s);

class AgentRegistry {
  public:
    // Loads the registry; a corrupt file is an error, never silently replaced.
    static Result<std::unique_ptr<AgentRegistry>> open(std::string workspace_root,
                                                       std::string state_dir);

    // The agent, assigned a UID and given a workspace (mode 0700, owned by that UID) on first use.
    Result<Agent> get_or_create(const std::string& id);
    std::size_t size() const;

    const std::string& workspace_root() const { return root_; }

  private:
    AgentRegistry(std::string root, std::string state_dir)
        : root_(std::move(root)), state_dir_(std::move(state_dir)) {}
    Result<void> load_locked();
    Result<void> save_locked() const;
    uid_t pick_uid(const std::string& id) const;
    Result<void> ensure_workspace(const Agent& a) const;
    Agent make(const std::string& id, uid_t uid) const;

    std::string root_;
    std::string state_dir_;
    mutable std::shared_mutex mu_;
    std::map<std::string, uid_t> uids_;
    std::set<uid_t> used_;
};

}  // namespace nestbox::server
