#include "src/server/cgroups.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>

#include "src/core/files.hpp"
#include "src/server/log.hpp"

namespace nestbox::server {

namespace {

using namespace cgroupfs;

const std::vector<std::string> kControllers = {"memory", "cpu", "pids"};

bool offers_all(const std::string& group) {
    auto text = read_file(AT_FDCWD, group + "/cgroup.controllers");
    if (!text) return false;
    const std::vector<std::string> have = split_words(*text);
    return std::all_of(kControllers.begin(), kControllers.end(), [&](const std::string& c) {
        return std::find(have.begin(), have.end(), c) != have.end();
    });
}

// A launcher is still using its groups while its process lives.
bool launcher_alive(int pid) {
    auto comm = read_file(AT_FDCWD, "/proc/" + std::to_string(pid) + "/comm");
    return comm && comm->rfind("nestbox", 0) == 0;
}

}  // namespace

ServerCgroups ServerCgroups::setup(const CgroupLayout& layout, std::vector<std::string>& warnings) {
    ServerCgroups c;
    auto self = read_proc_self_cgroup();
    if (!self) return c;
    if (!layout.v2_root.empty() && offers_all(layout.v2_root)) {
        auto own = own_cgroup(*self, "");
        if (!own) return c;
        const std::string base = *own == "/" ? "" : *own;
        const std::string dir = layout.v2_root + base;
        auto enabled = enable_controllers(layout.v2_root, dir, kControllers);
        if (!enabled && enabled.error().code() == EBUSY) {
            // Our own process is what keeps the group from handing out controllers: move into a
            // leaf of our own and try again.
            const std::string leaf = dir + "/server";
            if (auto made = make_dirs(leaf); made) {
                if (auto moved = write_existing(AT_FDCWD, leaf + "/cgroup.procs",
                                                std::to_string(::getpid()));
                    moved) {
                    log_event(spdlog::level::info, "cgroup",
                              "moved into " + leaf + " to delegate controllers");
                    enabled = enable_controllers(layout.v2_root, dir, kControllers);
                }
            }
        }
        if (!enabled) {
            warnings.push_back("cgroup v2: cannot give sandboxes memory, cpu and pids below " +
                               dir + ": " + enabled.error().message() +
                               " (docs/cgroup-delegation.md)");
            return c;
        }
        c.v2_base_ = base + "/sandboxes";
        c.trees_ = {layout.v2_root + *c.v2_base_};
        if (auto made = make_dirs(c.trees_.front()); !made)
            warnings.push_back(made.error().message());
        return c;
    }
    // cgroup v1: the launcher's default parent, <own>/nestbox in each hierarchy.
    for (const auto& [hierarchy, controller] :
         {std::pair{layout.v1_memory, "memory"}, std::pair{layout.v1_cpu, "cpu"},
          std::pair{layout.v1_pids, "pids"}}) {
        if (hierarchy.empty()) continue;
        if (auto own = own_cgroup(*self, controller))
            c.trees_.push_back(hierarchy + (*own == "/" ? "" : *own) + "/nestbox");
    }
    return c;
}

std::optional<std::string> ServerCgroups::parent_for(const std::string& agent_id) const {
    if (!v2_base_) return std::nullopt;
    return agent_id.empty() ? *v2_base_ : *v2_base_ + "/" + agent_id;
}

std::size_t ServerCgroups::remove_stale(std::optional<int> pid) const {
    std::size_t removed = 0;
    // Sandbox leaves sit directly in a tree, or one level down in an agent's group.
    std::function<void(const std::string&, int)> sweep = [&](const std::string& dir, int depth) {
        auto names = list_names(AT_FDCWD, dir);
        if (!names) return;
        for (const std::string& name : *names) {
            std::string path = dir;
            path.append("/").append(name);
            struct stat st {};
            if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
            const std::optional<int> owner = leaf_owner(name);
            if (!owner) {
                if (depth == 0) sweep(path, 1);
                continue;
            }
            if (pid ? *owner != *pid : launcher_alive(*owner)) continue;
            if (::rmdir(path.c_str()) == 0) ++removed;
        }
    };
    for (const std::string& tree : trees_)
        sweep(tree, 0);
    return removed;
}

}  // namespace nestbox::server
