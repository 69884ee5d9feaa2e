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

bool is_fs(const std::string& path, long magic) {
    struct statfs st {};
    return ::statfs(path.c_str(), &st) == 0 && st.f_type == magic;
}

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
            v2 = cgroup_detail::split_words(*text);
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

CgroupLayout CgroupLayout::detect() {
    CgroupLayout layout;
    const std::string base = "/sys/fs/cgroup";
    if (is_fs(base, CGROUP2_SUPER_MAGIC)) {
        layout.v2_root = base;
        return layout;  // a unified host has no v1 controllers
    }
    if (is_fs(base + "/unified", CGROUP2_SUPER_MAGIC)) layout.v2_root = base + "/unified";
    auto v1 = [&](const char* name) {
        const std::string path = base + "/" + name;
        return is_fs(path, CGROUP_SUPER_MAGIC) ? path : std::string();
    };
    layout.v1_memory = v1("memory");
    layout.v1_cpu = v1("cpu");
    layout.v1_pids = v1("pids");
    return layout;
}

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

namespace cgroup_detail {

Result<std::string> read_proc_self_cgroup() {
    return read_file(AT_FDCWD, "/proc/self/cgroup");
}

Result<std::string> own_cgroup(std::string_view text, std::string_view controller) {
    // Lines are "id:controllers:path"; v2's is "0::path".
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t end = std::min(text.find('\n', pos), text.size());
        const std::string_view line(text.data() + pos, end - pos);
        pos = end + 1;
        const std::size_t a = line.find(':');
        const std::size_t b = line.find(':', a + 1);
        if (a == std::string_view::npos || b == std::string_view::npos) continue;
        const std::string_view controllers = line.substr(a + 1, b - a - 1);
        const std::string_view path = line.substr(b + 1);
        if (controller.empty()) {
            if (controllers.empty()) return std::string(path);
            continue;
        }
        std::size_t c = 0;
        while (c <= controllers.size()) {
            const std::size_t comma = std::min(controllers.find(',', c), controllers.size());
            if (controllers.substr(c, comma - c) == controller) return std::string(path);
            c = comma + 1;
        }
    }
    return Error(
        "cgroup",
        "no " + std::string(controller.empty() ? "v2" : controller) + " entry in /proc/self/cgroup",
        ENOENT);
}

std::string leaf_name() {
    unsigned random = 0;
    if (::getrandom(&random, sizeof random, GRND_NONBLOCK) != sizeof random) {
        random = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, "nbx-%d-%08x", static_cast<int>(::getpid()), random);
    return buf;
}

std::string parent_dir(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

Result<void> make_dirs(const std::string& path) {
    if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return {};
    if (errno != ENOENT) return Error::from_errno("cgroup", "mkdir " + path);
    NESTBOX_TRY(make_dirs(parent_dir(path)));
    if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return {};
    return Error::from_errno("cgroup", "mkdir " + path);
}

void remove_dir(const std::string& path) {
    using namespace std::chrono_literals;
    // By the time this runs every task is dead, but the kernel may still be unlinking the last
    // of them from the group: a busy group empties within milliseconds.
    for (int attempt = 0; attempt < 200; ++attempt) {
        if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return;
        if (errno != EBUSY) break;
        std::this_thread::sleep_for(attempt < 20 ? 1ms : 10ms);
    }
    std::fprintf(stderr, "nestbox: warning: cgroup: could not remove %s: %s\n", path.c_str(),
                 strerrordesc_np(errno));
}

std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t start = text.find_first_not_of(" \n\t", pos);
        if (start == std::string_view::npos) break;
        const std::size_t end = std::min(text.find_first_of(" \n\t", start), text.size());
        out.emplace_back(text.substr(start, end - start));
        pos = end;
    }
    return out;
}

std::optional<std::uint64_t> read_keyed(const std::string& file, std::string_view key) {
    auto text = read_file(AT_FDCWD, file);
    if (!text) return std::nullopt;
    const std::string needle = std::string(key) + " ";
    std::size_t pos = 0;
    while (pos < text->size()) {
        if (text->compare(pos, needle.size(), needle) == 0) {
            return std::strtoull(text->c_str() + pos + needle.size(), nullptr, 10);
        }
        pos = text->find('\n', pos);
        if (pos == std::string::npos) break;
        ++pos;
    }
    return std::nullopt;
}

std::optional<std::uint64_t> read_number(const std::string& file) {
    auto text = read_file(AT_FDCWD, file);
    if (!text || text->empty() || (*text)[0] < '0' || (*text)[0] > '9') return std::nullopt;
    return std::strtoull(text->c_str(), nullptr, 10);
}

}  // namespace cgroup_detail

}  // namespace nestbox::launcher
