// The sandbox's cgroup: memory, CPU and process limits, the OOM and usage report, and (on v2) a
// kill switch for the whole tree. Created by the launcher before the sandbox exists, removed when
// it is destroyed. cgroup v2 first; v1 (memory, cpu, pids hierarchies) on hosts that still have
// their controllers there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"
#include "src/core/cgroup_fs.hpp"
#include "src/core/error.hpp"

namespace nestbox::launcher {

struct CgroupUsage {
    std::optional<std::uint64_t> cpu_usec;
    std::optional<std::uint64_t> memory_peak_bytes;
};

class Cgroup {
  public:
    Cgroup() = default;
    Cgroup(const Cgroup&) = delete;
    Cgroup& operator=(const Cgroup&) = delete;
    // Removes the group. Its processes are gone by then: they all live in the sandbox's PID
    // namespace, which dies with its init before the launcher lets go of the group.
    virtual ~Cgroup() = default;

    virtual std::string_view version() const = 0;  // "v2" or "v1"
    virtual const std::string& path() const = 0;   // for messages and tests
    // v2: a directory fd to clone the sandbox into, so it is born inside. -1 on v1.
    virtual int clone_fd() const { return -1; }
    // v1: makes the groups and writes the limits. The launcher calls it right after clone, so it
    // runs on the other core while the sandbox's init builds the root (v2 groups must exist
    // before clone and are made by create_cgroup).
    virtual Result<void> finish() { return {}; }
    // v1: called by the sandbox's init, after finish() and before it enters the new root, to
    // move itself in. Nothing of the command runs before.
    virtual Result<void> join() const { return {}; }
    // v2: kills every process in the group at once (cgroup.kill).
    virtual void kill() {}
    virtual CgroupUsage usage() const = 0;
    virtual bool oom_killed() const = 0;
};

struct CgroupSetup {
    std::unique_ptr<Cgroup> group;      // null when no limit was asked for
    std::vector<std::string> warnings;  // limits dropped under --limits=best-effort
};

Result<CgroupSetup> create_cgroup(const policy::Limits& limits, bool best_effort,
                                  const CgroupLayout& layout = CgroupLayout::detect());

// Implementations, one file each.
Result<std::unique_ptr<Cgroup>> create_cgroup_v2(const policy::Limits& limits,
                                                 const std::string& root);
// Only decides the paths; finish() makes the groups.
Result<std::unique_ptr<Cgroup>> create_cgroup_v1(const policy::Limits& limits,
                                                 const CgroupLayout& layout);

}  // namespace nestbox::launcher
