// Stage 2: clone. The sandbox's init is born with all of its namespaces at once and, on cgroup v2,
// directly inside its cgroup (CLONE_INTO_CGROUP), so there is no moment in which it runs
// unconfined or unaccounted.
#pragma once

#include <sys/types.h>

#include "src/core/error.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox::launcher {

struct Clone {
    pid_t pid = 0;  // 0 in the child
    PidFd pidfd;    // parent only
    bool in_child() const { return pid == 0; }
};

// `cgroup_fd` is a cgroup v2 directory to start in, or -1.
Result<Clone> clone_sandbox(unsigned long namespaces, int cgroup_fd);

}  // namespace nestbox::launcher
