// cgroup v2: one leaf group per sandbox under a parent that has the needed controllers enabled.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "launcher/cgroup.hpp"
#include "src/core/files.hpp"

namespace nestbox::launcher {

namespace {

using namespace cgroupfs;

constexpr std::uint64_t kCpuPeriodUsec = 100000;

class CgroupV2 final : public Cgroup {
  public:
    CgroupV2(std::string path, UniqueFd dir) : path_(std::move(path)), dir_(std::move(dir)) {}
    ~CgroupV2() override {
        dir_.reset();
        remove_dir(path_);
    }

    std::string_view version() const override { return "v2"; }
    const std::string& path() const override { return path_; }
    int clone_fd() const override { return dir_.get(); }
    void kill() override {
        // Best effort by design: the launcher also kills the sandbox's init, which takes the
        // whole PID namespace with it; cgroup.kill (Linux 5.14) does it in one step.
        (void)write_existing(AT_FDCWD, path_ + "/cgroup.kill", "1");
    }
    CgroupUsage usage() const override {
        CgroupUsage u;
        u.cpu_usec = read_keyed(path_ + "/cpu.stat", "usage_usec");
        u.memory_peak_bytes = read_number(path_ + "/memory.peak");  // Linux 5.19
        return u;
    }
    bool oom_killed() const override {
        return read_keyed(path_ + "/memory.events", "oom_kill").value_or(0) > 0;
    }

  private:
    std::string path_;
    UniqueFd dir_;
};

std::vector<std::string> controllers_for(const policy::Limits& l) {
    std::vector<std::string> out;
    if (l.memory_bytes) out.emplace_back("memory");
    if (l.cpu_percent) out.emplace_back("cpu");
    if (l.pids) out.emplace_back("pids");
    return out;
}

// The paths in /proc/self/cgroup are relative to this process's cgroup namespace, but the
// cgroup2 mount need not show that namespace's root: a container with a private cgroup namespace
// and the host's hierarchy bind-mounted in sees more. Then root + own names another group (the
// host's), and a default parent beside it would put the sandbox outside the caller's group and
// its limits, or fail later with a bare ENOENT from clone3. Checking that the group really holds
// this process catches that before anything is made.
Result<void> expect_self_in(const std::string& root, const std::string& own) {
    const std::string dir = root + (own == "/" ? "" : own);
    const std::string self = std::to_string(::getpid());
    if (auto procs = read_file(AT_FDCWD, dir + "/cgroup.procs")) {
        const std::vector<std::string> pids = split_words(*procs);
        if (std::find(pids.begin(), pids.end(), self) != pids.end()) return {};
    }
    return Error("cgroup", "/proc/self/cgroup names " + own + ", but " + dir +
                               " does not hold this process: the cgroup2 mount at " + root +
                               " is not the root of this process's cgroup namespace (mount "
                               "cgroup2 inside the namespace, or pass --cgroup-parent)");
}

}  // namespace

Result<std::unique_ptr<Cgroup>> create_cgroup_v2(const policy::Limits& l, const std::string& root) {
    std::string parent;
    if (l.cgroup_parent) {
        parent = root + *l.cgroup_parent;
    } else {
        // Beside our own group, not inside it: a group with processes (ours) cannot also have
        // child groups with controllers (the no-internal-processes rule).
        NESTBOX_TRY_ASSIGN(const std::string self, read_proc_self_cgroup());
        NESTBOX_TRY_ASSIGN(const std::string own, own_cgroup(self, ""));
        NESTBOX_TRY(expect_self_in(root, own));
        const std::string up = parent_dir(own);
        parent = root + (up == "/" ? "" : up) + "/nestbox";
    }
    NESTBOX_TRY(make_dirs(parent));
    NESTBOX_TRY(enable_controllers(root, parent, controllers_for(l)));

    const std::string path = parent + "/" + leaf_name();
    if (::mkdir(path.c_str(), 0755) != 0) return Error::from_errno("cgroup", "mkdir " + path);
    auto dir = open_at(AT_FDCWD, path, O_PATH | O_DIRECTORY);
    if (!dir) {
        remove_dir(path);
        return Error("cgroup", path, dir.error().code());
    }
    auto group = std::make_unique<CgroupV2>(path, std::move(*dir));
    auto set = [&path](const char* file, const std::string& value) -> Result<void> {
        if (auto r = write_existing(AT_FDCWD, path + "/" + file, value); !r) {
            return Error("cgroup", path + "/" + file + " <- " + value, r.error().code());
        }
        return {};
    };
    if (l.memory_bytes) {
        NESTBOX_TRY(set("memory.max", std::to_string(*l.memory_bytes)));
        // Without this the limit only bounds RAM: the group could keep growing into swap.
        if (::access((path + "/memory.swap.max").c_str(), F_OK) == 0)
            NESTBOX_TRY(set("memory.swap.max", "0"));
    }
    if (l.cpu_percent) {
        NESTBOX_TRY(set("cpu.max", std::to_string(*l.cpu_percent * kCpuPeriodUsec / 100) + " " +
                                       std::to_string(kCpuPeriodUsec)));
    }
    if (l.pids) NESTBOX_TRY(set("pids.max", std::to_string(*l.pids)));
    return std::unique_ptr<Cgroup>(std::move(group));
}

}  // namespace nestbox::launcher
