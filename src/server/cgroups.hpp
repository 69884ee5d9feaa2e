// Where nestboxd's sandboxes go in the cgroup tree, settled once at start-up.
//
// cgroup v2 lets only a group without processes hand controllers to children (the
// no-internal-processes rule). A server that is PID 1 of a container sits in the root of its
// cgroup namespace, and a systemd service in its unit's group: either way it first moves itself
// into a leaf, <own>/server, then enables memory, cpu and pids in <own>, and runs each agent's
// sandboxes under <own>/sandboxes/<agent>/ (the launcher makes each sandbox's own leaf there), so
// an agent's sandboxes are also accounted together. On cgroup v1 the launcher's default (a
// `nestbox` group inside the server's own group, in each hierarchy) needs no preparation.
// docs/cgroup-delegation.md says what the operator must grant.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/core/cgroup_fs.hpp"

namespace nestbox::server {

class ServerCgroups {
  public:
    // Never fails: what cannot be prepared is a warning, and the launcher's own checks (strict
    // limits) then refuse to run sandboxes without the limits they were asked for.
    static ServerCgroups setup(const CgroupLayout& layout, std::vector<std::string>& warnings);

    // The launcher's --cgroup-parent for an agent's sandbox ("" for the self-test), or nullopt
    // for the launcher's default.
    std::optional<std::string> parent_for(const std::string& agent_id) const;

    // Removes empty sandbox groups whose launcher is gone (a crash, a SIGKILL): all of them, or
    // only those of the launcher `pid`. Groups with processes are busy and stay.
    std::size_t remove_stale(std::optional<int> pid = std::nullopt) const;

    // Where sandbox groups are made, as host paths (for cleanup and for tests).
    const std::vector<std::string>& sandbox_trees() const { return trees_; }

  private:
    std::optional<std::string> v2_base_;  // "/sandboxes" or "<own>/sandboxes", below the v2 mount
    std::vector<std::string> trees_;
};

}  // namespace nestbox::server
