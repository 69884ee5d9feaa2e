#include "src/core/cgroup_fs.hpp"

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
#include <cstdlib>
#include <thread>

#include "src/core/files.hpp"

namespace nestbox {

namespace {

bool is_fs(const std::string& path, long magic) {
    struct statfs st {};
    return ::statfs(path.c_str(), &st) == 0 && st.f_type == magic;
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

namespace cgroupfs {

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

std::optional<int> leaf_owner(std::string_view name) {
    if (!name.starts_with("nbx-")) return std::nullopt;
    const std::size_t dash = name.find('-', 4);
    if (dash == std::string_view::npos) return std::nullopt;
    const int pid = std::atoi(std::string(name.substr(4, dash - 4)).c_str());
    return pid > 0 ? std::optional<int>(pid) : std::nullopt;
}

// Makes `wanted` available to the children of `path`, enabling them in each ancestor's
// subtree_control on the way down from the highest one that lacks them.
Result<void> enable_controllers(const std::string& root, const std::string& path,
                                const std::vector<std::string>& wanted) {
    if (wanted.empty()) return {};
    const std::string control = path + "/cgroup.subtree_control";
    auto text = read_file(AT_FDCWD, control);
    if (!text) return Error("cgroup", control, text.error().code());
    const std::vector<std::string> enabled = split_words(*text);
    std::vector<std::string> missing;
    for (const std::string& c : wanted) {
        if (std::find(enabled.begin(), enabled.end(), c) == enabled.end()) missing.push_back(c);
    }
    if (missing.empty()) return {};
    if (path != root) NESTBOX_TRY(enable_controllers(root, parent_dir(path), missing));
    std::string request;
    for (const std::string& c : missing)
        request += (request.empty() ? "+" : " +") + c;
    if (auto r = write_existing(AT_FDCWD, control, request); !r) {
        std::string why = control + " <- " + request;
        if (r.error().code() == EBUSY) {
            why +=
                " (the group has processes of its own, and cgroup v2 lets only groups without "
                "processes hand controllers to children; pass --cgroup-parent naming a group "
                "that has none)";
        }
        return Error("cgroup", why, r.error().code());
    }
    return {};
}

}  // namespace cgroupfs
}  // namespace nestbox
