// cgroup v1: a leaf group per sandbox in each hierarchy a limit needs (memory, cpu, pids).
//
// v1 has no clone-into-group, and moving another process into a group takes the
// cgroup_threadgroup_rwsem write lock and with it an RCU grace period (6-20 ms measured here). So
// the groups are made after clone, while the sandbox's init builds its root, and init moves itself
// in by writing "0" to each group's `tasks` file, which skips that lock (0.01 ms). v1 has no
// cgroup.kill either: killing init, and with it the whole PID namespace, stands in for it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/cgroup.hpp"
#include "src/core/files.hpp"

namespace nestbox::launcher {

namespace {

using namespace cgroupfs;

constexpr std::uint64_t kCpuPeriodUsec = 100000;

struct Leaf {
    std::string controller;
    std::string path;
    std::vector<std::pair<const char*, std::string>> settings;  // file, value
    bool made = false;
};

Result<void> set(const std::string& dir, const char* file, const std::string& value) {
    if (auto r = write_existing(AT_FDCWD, dir + "/" + file, value); !r) {
        return Error("cgroup", dir + "/" + file + " <- " + value, r.error().code());
    }
    return {};
}

class CgroupV1 final : public Cgroup {
  public:
    explicit CgroupV1(std::vector<Leaf> leaves) : leaves_(std::move(leaves)) {}
    ~CgroupV1() override {
        for (const Leaf& leaf : leaves_) {
            if (leaf.made) remove_dir(leaf.path);
        }
    }

    std::string_view version() const override { return "v1"; }
    const std::string& path() const override { return leaves_.front().path; }

    Result<void> finish() override {
        for (Leaf& leaf : leaves_) {
            NESTBOX_TRY(make_dirs(parent_dir(leaf.path)));
            if (::mkdir(leaf.path.c_str(), 0755) != 0)
                return Error::from_errno("cgroup", "mkdir " + leaf.path);
            leaf.made = true;
            for (const auto& [file, value] : leaf.settings) {
                // With swap accounting the memory+swap limit must be set too, or swap is
                // unbounded; without it the file does not exist.
                if (std::string_view(file) == "memory.memsw.limit_in_bytes" &&
                    ::access((leaf.path + "/" + file).c_str(), F_OK) != 0) {
                    continue;
                }
                NESTBOX_TRY(set(leaf.path, file, value));
            }
        }
        return {};
    }

    Result<void> join() const override {
        for (const Leaf& leaf : leaves_) {
            NESTBOX_TRY_ASSIGN(UniqueFd tasks, open_at(AT_FDCWD, leaf.path + "/tasks", O_WRONLY));
            if (::write(tasks.get(), "0", 1) != 1)
                return Error::from_errno("cgroup", "joining " + leaf.path);
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

  private:
    const Leaf* find(std::string_view controller) const {
        for (const Leaf& leaf : leaves_) {
            if (leaf.controller == controller) return &leaf;
        }
        return nullptr;
    }

    std::vector<Leaf> leaves_;
};

}  // namespace

Result<std::unique_ptr<Cgroup>> create_cgroup_v1(const policy::Limits& l,
                                                 const CgroupLayout& layout) {
    NESTBOX_TRY_ASSIGN(const std::string self, read_proc_self_cgroup());
    const std::string name = leaf_name();
    std::vector<Leaf> leaves;
    leaves.reserve(3);  // the pointers handed out below stay valid
    auto leaf = [&](const char* controller, const std::string& hierarchy) -> Result<Leaf*> {
        std::string parent;
        if (l.cgroup_parent) {
            parent = hierarchy + *l.cgroup_parent;
        } else {
            // Inside our own group: v1 has no no-internal-processes rule, and staying inside keeps
            // the sandbox within whatever limits the caller itself runs under.
            NESTBOX_TRY_ASSIGN(const std::string own, own_cgroup(self, controller));
            parent = hierarchy + (own == "/" ? "" : own) + "/nestbox";
        }
        leaves.push_back({controller, parent + "/" + name, {}, false});
        return &leaves.back();
    };
    if (l.memory_bytes || !l.any_cgroup_limit()) {
        // Without limits (only --cgroup-parent) the memory group still accounts the sandbox.
        NESTBOX_TRY_ASSIGN(Leaf * memory, leaf("memory", layout.v1_memory));
        if (l.memory_bytes) {
            const std::string bytes = std::to_string(*l.memory_bytes);
            memory->settings = {{"memory.limit_in_bytes", bytes},
                                {"memory.memsw.limit_in_bytes", bytes}};
        }
    }
    if (l.cpu_percent) {
        NESTBOX_TRY_ASSIGN(Leaf * cpu, leaf("cpu", layout.v1_cpu));
        cpu->settings = {
            {"cpu.cfs_period_us", std::to_string(kCpuPeriodUsec)},
            {"cpu.cfs_quota_us", std::to_string(*l.cpu_percent * kCpuPeriodUsec / 100)}};
    }
    if (l.pids) {
        NESTBOX_TRY_ASSIGN(Leaf * pids, leaf("pids", layout.v1_pids));
        pids->settings = {{"pids.max", std::to_string(*l.pids)}};
    }
    return std::unique_ptr<Cgroup>(std::make_unique<CgroupV1>(std::move(leaves)));
}

}  // namespace nestbox::launcher
