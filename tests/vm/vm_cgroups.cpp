#include "tests/vm/vm_cgroups.hpp"

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace nestbox::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool write_text(const std::string& path, const std::string& value) {
    std::ofstream out(path);
    out << value;
    out.flush();
    return static_cast<bool>(out);
}

void remove_group(const std::string& path) {
    for (int i = 0; i < 100 && ::rmdir(path.c_str()) != 0 && errno == EBUSY; ++i)
        std::this_thread::sleep_for(10ms);
}

void remove_tree(const std::string& path) {
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it->is_directory(ec)) dirs.push_back(it->path());
    }
    std::sort(dirs.rbegin(), dirs.rend());
    for (const auto& d : dirs)
        remove_group(d);
    remove_group(path);
}

std::vector<std::string> sandbox_groups(const std::string& under) {
    // Groups come and go while this runs: a walk that lost a directory under it starts over, so
    // that an answer is never a partial one.
    for (int attempt = 0; attempt < 20; ++attempt) {
        std::vector<std::string> out;
        std::error_code ec;
        for (auto it = fs::recursive_directory_iterator(under, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            if (it->is_directory() && it->path().filename().string().starts_with("nbx-"))
                out.push_back(it->path());
        }
        if (!ec) return out;
    }
    throw std::runtime_error("cannot list the groups below " + under);
}

bool enter_container(const std::string& group, bool remount) {
    auto failed = [](const char* step) {
        std::fprintf(stderr, "entering the container: %s: %s\n", step, strerrordesc_np(errno));
        return false;
    };
    if (!write_text(group + "/cgroup.procs", "0")) return failed("joining the group");
    if (::unshare(CLONE_NEWCGROUP | CLONE_NEWNS) != 0) return failed("unshare");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return failed("making mounts private");
    // The old mount goes first: the kernel refuses to stack a superblock on itself.
    if (remount && (::umount2("/sys/fs/cgroup", MNT_DETACH) != 0 ||
                    ::mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, nullptr) != 0)) {
        return failed("mounting cgroup2");
    }
    return true;
}

}  // namespace nestbox::test
