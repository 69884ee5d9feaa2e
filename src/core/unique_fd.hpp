// Owning file descriptors: every fd the project opens lands in one of these on the same line.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

namespace nestbox {

class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    ~UniqueFd() { reset(); }

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept {
        // close() errors are not actionable here; the fd is gone either way on Linux.
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

  private:
    int fd_ = -1;
};

// A process handle that cannot be confused with a recycled PID: signals sent through it reach
// the process it was opened for or nothing.
class PidFd {
  public:
    PidFd() = default;
    PidFd(UniqueFd fd, pid_t pid) noexcept : fd_(std::move(fd)), pid_(pid) {}

    int get() const noexcept { return fd_.get(); }
    pid_t pid() const noexcept { return pid_; }
    explicit operator bool() const noexcept { return static_cast<bool>(fd_); }

    // 0 on success, -1 with errno set (ESRCH once the process has been reaped).
    int send_signal(int sig) const noexcept {
        return static_cast<int>(::syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0));
    }

  private:
    UniqueFd fd_;
    pid_t pid_ = -1;
};

}  // namespace nestbox
