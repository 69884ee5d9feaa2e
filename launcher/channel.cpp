#include "launcher/channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace nestbox::launcher {

namespace {

Result<void> make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno("channel", "pipe2");
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    return {};
}

}  // namespace

Result<Channel> Channel::create() {
    Channel c;
    NESTBOX_TRY(make_pipe(c.release_read_, c.release_write_));
    NESTBOX_TRY(make_pipe(c.report_read_, c.report_write_));
    return c;
}

void Channel::close_init_ends() {
    release_read_.reset();
    report_write_.reset();
}

void Channel::close_launcher_ends() {
    release_write_.reset();
    report_read_.reset();
}

Result<void> Channel::release(Release how) {
    const char byte = static_cast<char>(how);
    if (TEMP_FAILURE_RETRY(::write(release_write_.get(), &byte, 1)) != 1) {
        return Error::from_errno("channel", "releasing the sandbox");
    }
    release_write_.reset();
    return {};
}

std::optional<Release> Channel::wait_for_release() {
    char byte = 0;
    const bool released = TEMP_FAILURE_RETRY(::read(release_read_.get(), &byte, 1)) == 1;
    release_read_.reset();
    if (!released) return std::nullopt;
    return static_cast<Release>(byte);
}

std::optional<Report> Channel::read_report() {
    Report r;
    const ssize_t n = TEMP_FAILURE_RETRY(::read(report_read_.get(), &r, sizeof r));
    if (n != static_cast<ssize_t>(sizeof r)) return std::nullopt;
    r.step[sizeof r.step - 1] = '\0';
    r.message[sizeof r.message - 1] = '\0';
    return r;
}

void Channel::send(const Report& r) const {
    // If the launcher is gone there is nobody to tell; init's parent-death signal ends us anyway.
    (void)TEMP_FAILURE_RETRY(::write(report_write_.get(), &r, sizeof r));
}

bool Channel::launcher_alive() const {
    // A pipe whose reader has closed polls as POLLERR for its writer.
    pollfd pfd{report_write_.get(), 0, 0};
    return ::poll(&pfd, 1, 0) == 0;
}

void Channel::send_error(const Error& e) const {
    Report r;
    r.kind = Report::Kind::SetupFailed;
    r.error_code = e.code();
    std::strncpy(r.step, e.step().c_str(), sizeof r.step - 1);
    std::strncpy(r.message, e.what().c_str(), sizeof r.message - 1);
    send(r);
}

}  // namespace nestbox::launcher
