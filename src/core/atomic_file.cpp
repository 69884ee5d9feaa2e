#include "src/core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "src/core/files.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox {

namespace {

std::string temp_name() {
    unsigned long long r = 0;
    if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
        r = static_cast<unsigned long long>(::getpid());
    char buf[40];
    std::snprintf(buf, sizeof buf, ".nestbox-%016llx.tmp", r);
    return buf;
}

}  // namespace

Result<void> write_atomically_at(int dirfd, const std::string& name, std::string_view content,
                                 mode_t mode) {
    // O_TMPFILE: the data has no name until it is complete, so a crash mid-write leaves nothing.
    UniqueFd file(::openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode));
    std::string tmp;
    if (!file) {
        if (errno != EOPNOTSUPP && errno != EISDIR) return Error::from_errno("write", name);
        // A filesystem without O_TMPFILE: a named temporary file instead.
        tmp = temp_name();
        file.reset(::openat(dirfd, tmp.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
        if (!file) return Error::from_errno("write", name);
    }
    auto fail = [&](const Error& e) -> Result<void> {
        if (!tmp.empty()) ::unlinkat(dirfd, tmp.c_str(), 0);
        return e;
    };
    if (auto w = write_all(file.get(), content); !w)
        return fail(Error("write", name, w.error().code()));
    // The umask may have narrowed the mode given to open.
    if (::fchmod(file.get(), mode) != 0) return fail(Error::from_errno("write", "chmod " + name));
    if (::fsync(file.get()) != 0) return fail(Error::from_errno("write", "fsync " + name));
    if (tmp.empty()) {
        tmp = temp_name();
        // linkat through /proc gives the O_TMPFILE a name without CAP_DAC_READ_SEARCH.
        const std::string proc = "/proc/self/fd/" + std::to_string(file.get());
        if (::linkat(AT_FDCWD, proc.c_str(), dirfd, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
            return Error::from_errno("write", "link " + name);
        }
    }
    if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
        return fail(Error::from_errno("write", "rename onto " + name));
    }
    if (::fsync(dirfd) != 0) return Error::from_errno("write", "fsync of the directory of " + name);
    return {};
}

Result<void> write_file_atomically(const std::string& path, std::string_view content, mode_t mode) {
    const std::size_t slash = path.rfind('/');
    const std::string dir =
        slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    NESTBOX_TRY_ASSIGN(UniqueFd dirfd, open_at(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY));
    return write_atomically_at(dirfd.get(), name, content, mode);
}

}  // namespace nestbox
