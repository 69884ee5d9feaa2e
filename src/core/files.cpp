#include "src/core/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace nestbox {

Result<UniqueFd> open_at(int dirfd, const std::string& path, int flags, unsigned mode) {
    UniqueFd fd(::openat(dirfd, path.c_str(), flags | O_CLOEXEC, mode));
    if (!fd) return Error::from_errno("open", path);
    return fd;
}

Result<std::vector<std::string>> list_names(int dirfd, const std::string& path) {
    // A fresh fd of its own: fdopendir takes ownership, and the caller's fd keeps its offset.
    UniqueFd fd(::openat(dirfd, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return Error::from_errno("list", path);
    const std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd.get()), ::closedir);
    if (!dir) return Error::from_errno("list", path);
    (void)fd.release();
    std::vector<std::string> names;
    for (;;) {
        errno = 0;  // readdir's only way to tell the end from an error
        const dirent* e = ::readdir(dir.get());
        if (e == nullptr) break;
        const std::string_view name = e->d_name;
        if (name != "." && name != "..") names.emplace_back(name);
    }
    if (errno != 0) return Error::from_errno("list", path);
    return names;
}

Result<std::string> read_fd(int fd, std::size_t limit) {
    std::string out;
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return Error::from_errno("read", "fd " + std::to_string(fd));
        }
        if (n == 0) return out;
        if (out.size() + static_cast<std::size_t>(n) > limit) {
            return Error(
                "read",
                "fd " + std::to_string(fd) + " is larger than " + std::to_string(limit) + " bytes",
                EFBIG);
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
}

Result<std::string> read_file(int dirfd, const std::string& path, std::size_t limit) {
    NESTBOX_TRY_ASSIGN(UniqueFd fd, open_at(dirfd, path, O_RDONLY | O_NOCTTY));
    auto content = read_fd(fd.get(), limit);
    if (!content) return Error("read", path, content.error().code());
    return content;
}

Result<void> write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return Error::from_errno("write", "fd " + std::to_string(fd));
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return {};
}

Result<void> write_existing(int dirfd, const std::string& path, std::string_view data) {
    NESTBOX_TRY_ASSIGN(UniqueFd fd, open_at(dirfd, path, O_WRONLY | O_NOCTTY));
    // Control files take the value in one write(); a short write means it was refused.
    const ssize_t n = ::write(fd.get(), data.data(), data.size());
    if (n < 0) return Error::from_errno("write", path + " <- " + std::string(data));
    if (static_cast<std::size_t>(n) != data.size()) {
        return Error("write", path + " <- " + std::string(data) + ": short write", EIO);
    }
    return {};
}

}  // namespace nestbox
