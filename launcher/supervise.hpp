// Stage 12 (launcher side): supervise. Waits for the sandbox to end while enforcing the timeout
// and honouring termination requests, then works out what happened.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <optional>

#include "launcher/cgroup.hpp"
#include "launcher/channel.hpp"
#include "launcher/status.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox::launcher {

struct Ending {
    std::optional<int> command_status;  // wait status, when init reported it
    std::optional<Error> setup_error;   // init could not build the sandbox
    int init_status = 0;
    rusage usage{};  // init and every process it reaped
    bool timed_out = false;
    std::optional<int> stop_signal;  // a signal asked the launcher to stop
};

// Returns once init has been reaped: by then no process of the sandbox is left.
Ending supervise(const PidFd& init, Channel& channel, Cgroup* cgroup,
                 std::optional<std::chrono::milliseconds> timeout, int signal_fd,
                 const StatusFd& status);

// The launcher's exit code and the exited event, from how the sandbox ended.
Outcome summarize(const Ending& ending, const Cgroup* cgroup);

}  // namespace nestbox::launcher
