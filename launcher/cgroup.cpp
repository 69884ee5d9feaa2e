#include "launcher/cgroup.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "src/core/files.hpp"

namespace nestbox::launcher {

namespace {

// One requested controller and where this host offers it.
struct Need {
    const char* name;
    bool asked;
    bool in_v2;
    bool in_v1;
};

std::vector<Need> needs(const policy::Limits& l, const CgroupLayout& layout) {
    std::vector<std::string> v2;
    if (!layout.v2_root.empty()) {
        if (auto text = read_file(AT_FDCWD, layout.v2_root + "/cgroup.controllers")) {
            v2 = cgroupfs::split_words(*text);
        }
    }
    auto in_v2 = [&v2](const char* name) {
        return std::find(v2.begin(), v2.end(), name) != v2.end();
    };
    return {{"memory", l.memory_bytes.has_value(), in_v2("memory"), !layout.v1_memory.empty()},
            {"cpu", l.cpu_percent.has_value(), in_v2("cpu"), !layout.v1_cpu.empty()},
            {"pids", l.pids.has_value(), in_v2("pids"), !layout.v1_pids.empty()}};
}

void drop_limit(policy::Limits& l, std::string_view controller) {
    if (controller == "memory") l.memory_bytes.reset();
    if (controller == "cpu") l.cpu_percent.reset();
    if (controller == "pids") l.pids.reset();
}

}  // namespace

Result<CgroupSetup> create_cgroup(const policy::Limits& requested, bool best_effort,
                                  const CgroupLayout& layout) {
    CgroupSetup setup;
    if (!requested.any_cgroup_limit() && !requested.cgroup_parent) return setup;

    // cgroup v2 first; v1 where v2 lacks a requested controller and v1 has them all.
    const std::vector<Need> wanted = needs(requested, layout);
    std::size_t by_v2 = 0, by_v1 = 0, asked = 0;
    for (const Need& n : wanted) {
        asked += n.asked ? 1 : 0;
        by_v2 += n.asked && n.in_v2 ? 1 : 0;
        by_v1 += n.asked && n.in_v1 ? 1 : 0;
    }
    const bool have_v2 = !layout.v2_root.empty();
    const bool use_v2 = have_v2 && (by_v2 == asked || by_v2 >= by_v1);

    policy::Limits limits = requested;
    std::string unenforceable;
    for (const Need& n : wanted) {
        if (n.asked && !(use_v2 ? n.in_v2 : n.in_v1)) {
            unenforceable += std::string(unenforceable.empty() ? "" : ", ") + n.name;
            drop_limit(limits, n.name);
        }
    }
    if (!unenforceable.empty()) {
        const std::string what = "no " + unenforceable + " controller on this host (cgroup v2: " +
                                 (have_v2 ? layout.v2_root + " does not offer it" : "not mounted") +
                                 "; cgroup v1: no hierarchy for it)";
        if (!best_effort) {
            return Error("cgroup", what + "; use --limits=best-effort to run without it", ENOTSUP);
        }
        setup.warnings.push_back(what + ": that limit is not enforced");
        if (!limits.any_cgroup_limit() && !limits.cgroup_parent) return setup;
    }

    auto group =
        use_v2 ? create_cgroup_v2(limits, layout.v2_root) : create_cgroup_v1(limits, layout);
    if (!group) {
        if (!best_effort) return group.error();
        setup.warnings.push_back(group.error().message() + ": no limit is enforced");
        return setup;
    }
    setup.group = std::move(*group);
    return setup;
}

}  // namespace nestbox::launcher
