// cgroup v1: a leaf group per sandbox in each hierarchy a limit needs (memory, cpu, pids). v1 has
// no cgroup.kill and no clone-into-group, so the sandbox's init is attached before it is released,
// and killing init (and with it the PID namespace) stands in for cgroup.kill.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/cgroup.hpp"
#include "src/core/files.hpp"

namespace nestbox::launcher {

namespace {

using namespace cgroup_detail;

constexpr std::uint64_t kCpuPeriodUsec = 100000;

struct Leaf {
    std::string controller;
    std::string path;
};

class CgroupV1 final : public Cgroup {
  public:
    ~CgroupV1() override {
        for (const Leaf& leaf : leaves_)
            remove_dir(leaf.path);
    }

    std::string_view version() const override { return "v1"; }
    const std::string& path() const override { return leaves_.front().path; }
    Result<void> attach(pid_t pid) override {
        for (const Leaf& leaf : leaves_) {
            if (auto r = write_existing(AT_FDCWD, leaf.path + "/cgroup.procs", std::to_string(pid));
                !r) {
                return Error("cgroup", "attaching the sandbox to " + leaf.path, r.error().code());
            }
        }
        return {};
    }
    CgroupUsage usage() const override {
        // CPU time comes from the launcher's rusage: v1 keeps it in cpuacct, often a separate
        // hierarchy we would otherwise have to create a group in just to read it.
        CgroupUsage u;
        if (const Leaf* memory = find("memory")) {
            u.memory_peak_bytes = read_number(memory->path + "/memory.max_usage_in_bytes");
        }
        return u;
    }
    bool oom_killed() const override {
        const Leaf* memory = find("memory");
        return memory != nullptr &&
               read_keyed(memory->path + "/memory.oom_control", "oom_kill").value_or(0) > 0;
    }

    // Creates the leaf in one hierarchy; on failure the destructor removes those made so far.
    Result<std::string> add(const std::string& controller, const std::string& hierarchy,
                            const std::optional<std::string>& parent_override,
                            const std::string& name) {
        std::string parent;
        if (parent_override) {
            parent = hierarchy + *parent_override;
        } else {
            // Inside our own group: v1 has no no-internal-processes rule, and staying inside keeps
            // the sandbox within whatever limits the caller itself runs under.
            NESTBOX_TRY_ASSIGN(const std::string own, own_cgroup(controller));
            parent = hierarchy + (own == "/" ? "" : own) + "/nestbox";
        }
        NESTBOX_TRY(make_dirs(parent));
        std::string path = parent + "/" + name;
        if (::mkdir(path.c_str(), 0755) != 0) return Error::from_errno("cgroup", "mkdir " + path);
        leaves_.push_back({controller, path});
        return path;
    }

  private:
    const Leaf* find(std::string_view controller) const {
        for (const Leaf& leaf : leaves_) {
            if (leaf.controller == controller) return &leaf;
        }
        return nullptr;
    }

    std::vector<Leaf> leaves_;
};

Result<void> set(const std::string& dir, const char* file, const std::string& value) {
    if (auto r = write_existing(AT_FDCWD, dir + "/" + file, value); !r) {
        return Error("cgroup", dir + "/" + file + " <- " + value, r.error().code());
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<Cgroup>> create_cgroup_v1(const policy::Limits& l,
                                                 const CgroupLayout& layout) {
    auto group = std::make_unique<CgroupV1>();
    const std::string name = leaf_name();
    if (l.memory_bytes) {
        NESTBOX_TRY_ASSIGN(const std::string dir,
                           group->add("memory", layout.v1_memory, l.cgroup_parent, name));
        NESTBOX_TRY(set(dir, "memory.limit_in_bytes", std::to_string(*l.memory_bytes)));
        // With swap accounting the memory+swap limit must be set too, or swap is unbounded.
        if (::access((dir + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0) {
            NESTBOX_TRY(set(dir, "memory.memsw.limit_in_bytes", std::to_string(*l.memory_bytes)));
        }
    }
    if (l.cpu_percent) {
        NESTBOX_TRY_ASSIGN(const std::string dir,
                           group->add("cpu", layout.v1_cpu, l.cgroup_parent, name));
        NESTBOX_TRY(set(dir, "cpu.cfs_period_us", std::to_string(kCpuPeriodUsec)));
        NESTBOX_TRY(
            set(dir, "cpu.cfs_quota_us", std::to_string(*l.cpu_percent * kCpuPeriodUsec / 100)));
    }
    if (l.pids) {
        NESTBOX_TRY_ASSIGN(const std::string dir,
                           group->add("pids", layout.v1_pids, l.cgroup_parent, name));
        NESTBOX_TRY(set(dir, "pids.max", std::to_string(*l.pids)));
    }
    if (!l.any_cgroup_limit()) {
        // Only --cgroup-parent was given: account the sandbox in the memory hierarchy.
        NESTBOX_TRY(group->add("memory", layout.v1_memory, l.cgroup_parent, name));
    }
    return std::unique_ptr<Cgroup>(std::move(group));
}

}  // namespace nestbox::launcher
