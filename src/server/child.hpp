// The launcher process behind one exec: spawned with posix_spawn (vfork semantics, never a bare
// fork of the threaded server), its policy passed through a memfd on fd 3 (so secrets in the
// environment never appear in argv or on disk), its status events on fd 4.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/core/error.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox::server {

inline constexpr int kPolicyFd = 3;
inline constexpr int kStatusFd = 4;

struct Child {
    PidFd pidfd;
    UniqueFd stdin_w;  // invalid when there was no stdin to give
    UniqueFd stdout_r;
    UniqueFd stderr_r;
    UniqueFd status_r;
};

// Starts `argv` (argv[0] is the launcher) with the policy on fd 3 and status pipe on fd 4.
Result<Child> spawn_launcher(const std::vector<std::string>& argv, const std::string& policy_json,
                             bool with_stdin);

// "exit status 125", "signal SIGPIPE": a wait status for a message.
std::string describe_wait_status(int status);

// Reaps exited children. Normally each exec reaps its own launcher through its pidfd. When the
// server is PID 1 (a container's init) it must also reap orphans that the kernel reparents to it;
// then a SIGCHLD handler reaps everything, and statuses of children an exec is waiting for are
// kept here for it. The mutex makes "reap it myself or find it reaped" atomic.
class Reaper {
  public:
    static Reaper& instance();
    // The exit status of `pid` once its pidfd has signalled exit.
    int collect(const PidFd& child);
    // SIGCHLD as PID 1: reap every zombie.
    void reap_all();
    void track(pid_t pid);

  private:
    std::mutex mu_;
    std::unordered_map<pid_t, std::optional<int>> statuses_;
};

}  // namespace nestbox::server
