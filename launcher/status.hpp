// --status-fd: JSON lines for whoever runs the launcher (nestboxd does).
//   {"event":"started","pid":1234}
//   {"event":"exited","exit_code":137,"signal":"SIGKILL","timed_out":true,"oom_killed":false,
//    "usage":{"cpu_ms":12,"memory_peak_bytes":1048576},"cgroup":"v1","warnings":[]}
//   {"event":"error","step":"mounts","message":"mounts: bind /nope -> /x: No such file or
//   directory"}
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/core/error.hpp"

namespace nestbox::launcher {

struct Outcome {
    int exit_code = 0;
    std::optional<int> signal;  // the signal that ended the command
    bool timed_out = false;
    bool oom_killed = false;
    std::optional<std::uint64_t> cpu_ms;
    std::optional<std::uint64_t> memory_peak_bytes;
    std::string cgroup;  // "v2", "v1" or "" (no cgroup was needed)
    std::vector<std::string> warnings;
};

class StatusFd {
  public:
    explicit StatusFd(std::optional<int> fd) : fd_(fd.value_or(-1)) {}

    void started(pid_t pid) const;
    void exited(const Outcome& o) const;
    void error(const Error& e) const;

  private:
    void write_line(std::string line) const;
    int fd_;
};

// "SIGKILL" for 9.
std::string signal_name(int sig);

}  // namespace nestbox::launcher
