// The cgroup filesystems as both programs see them: where the hierarchies are mounted, which group
// a process is in, and the small file operations every cgroup change is made of.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/error.hpp"

namespace nestbox {

// Where the cgroup filesystems are. Detected from /sys/fs/cgroup; overridable for tests.
struct CgroupLayout {
    std::string v2_root;                     // empty: no cgroup v2 mount
    std::string v1_memory, v1_cpu, v1_pids;  // empty: no such v1 hierarchy

    static CgroupLayout detect();
};

namespace cgroupfs {

// This process's cgroup in a hierarchy, as listed in /proc/self/cgroup (`text`): "" names v2's.
Result<std::string> own_cgroup(std::string_view text, std::string_view controller);
Result<std::string> read_proc_self_cgroup();
// "nbx-<pid>-<random>": unique per launch, recognizable to cleanup tools.
std::string leaf_name();
// The launcher pid in a leaf name, or nullopt for any other name.
std::optional<int> leaf_owner(std::string_view name);
Result<void> make_dirs(const std::string& path);
// rmdir, retried briefly while the kernel finishes tearing down the last tasks.
void remove_dir(const std::string& path);
// The number after `key` in a "key value" file such as cpu.stat or memory.events.
std::optional<std::uint64_t> read_keyed(const std::string& file, std::string_view key);
std::optional<std::uint64_t> read_number(const std::string& file);
std::string parent_dir(const std::string& path);
std::vector<std::string> split_words(std::string_view text);
// cgroup v2: makes `wanted` ("memory", "cpu", "pids") available to the children of `path`,
// enabling them in each ancestor's subtree_control from the highest one that lacks them.
Result<void> enable_controllers(const std::string& root, const std::string& path,
                                const std::vector<std::string>& wanted);

}  // namespace cgroupfs
}  // namespace nestbox
