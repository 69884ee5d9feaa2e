// What the VM's test programs share: the cgroup v2 files they read and write, and putting a
// process where a container runtime puts a container's init.
#pragma once

#include <string>
#include <vector>

namespace nestbox::test {

inline const std::string kCgroupRoot = "/sys/fs/cgroup";

std::string read_text(const std::string& path);
bool write_text(const std::string& path, const std::string& value);

// rmdir, retried while the kernel finishes releasing the group's last exited process.
void remove_group(const std::string& path);
// `path` and every group below it, children first (rmdir of a group refuses while it has any).
void remove_tree(const std::string& path);

// Every nbx-* group below `under`: the launcher's leaves, whoever made them.
std::vector<std::string> sandbox_groups(const std::string& under = kCgroupRoot);

// For a child about to become a container's process: joins `group` (a host path), then enters
// new cgroup and mount namespaces, so that `group` is its cgroup namespace's root; with `remount`
// cgroup2 is mounted again at /sys/fs/cgroup, which then shows that root, as runtimes do. Says on
// stderr which step failed, and returns false, if one did.
bool enter_container(const std::string& group, bool remount);

}  // namespace nestbox::test
