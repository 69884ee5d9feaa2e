// /exec and /exec-stream: one nestbox launcher per request.
//
// Order of work, each step only after the ones before succeeded: validate everything in the
// request (nothing is written for a bad one); take a concurrency slot (429 if none); write the
// request's files as the agent; spawn the launcher with the request's policy; pump stdout, stderr
// and the launcher's status events as they come while a watchdog and the client connection are
// watched; report.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/json_writer.hpp"
#include "src/server/agents.hpp"
#include "src/server/artifacts.hpp"
#include "src/server/cgroups.hpp"
#include "src/server/config.hpp"
#include "src/server/http.hpp"
#include "src/server/metrics.hpp"
#include "src/server/requests.hpp"
#include "src/server/workspace.hpp"

namespace nestbox::server {

enum class StreamId { Stdout, Stderr };

struct ExecResult {
    int exit_code = 0;
    std::optional<std::string> signal;  // "SIGKILL"
    bool timed_out = false;
    bool oom_killed = false;
    bool stdout_truncated = false;
    bool stderr_truncated = false;
    std::uint64_t duration_ms = 0;
    std::optional<std::uint64_t> cpu_ms;
    std::optional<std::uint64_t> memory_peak_bytes;
    std::vector<Artifact> artifacts;

    // The fields shared by the /exec response and the stream's exit event.
    void write_fields(JsonWriter& w) const;
};

// What the launcher said on its status fd (`--status-fd`, one JSON event per line).
struct LauncherReport {
    bool started = false;
    std::optional<ExecResult> exited;
    std::optional<std::string> error;
    std::optional<std::string> cgroup;  // from the exit event: "v1", "v2", or none
    std::vector<std::string> warnings;  // from the exit event
};

// Adds one status event to `report`; a line that is not an event is ignored.
void parse_status_line(std::string_view line, LauncherReport& report);

// Where a running exec delivers what happens, as it happens.
class ExecSink {
  public:
    virtual ~ExecSink() = default;
    virtual asio::awaitable<bool> started(pid_t pid) = 0;
    virtual asio::awaitable<bool> output(StreamId which, std::string data) = 0;
};

class Executor {
  public:
    Executor(const Config& config, AgentRegistry& agents, const Workspaces& workspaces,
             const ServerCgroups& cgroups, Metrics& metrics)
        : config_(config),
          agents_(agents),
          workspaces_(workspaces),
          cgroups_(cgroups),
          metrics_(metrics) {}

    // `streaming` selects line-grouped output with a short flush delay for partial lines.
    asio::awaitable<Parsed<ExecResult>> run(ExecRequest req, ExecSink& client_sink,
                                            Responder& client, bool streaming);

    // Shutdown: asks every running launcher to end its sandbox (SIGTERM; they clean up).
    void terminate_all();
    std::size_t running() const;

  private:
    class Slot;

    const Config& config_;
    AgentRegistry& agents_;
    const Workspaces& workspaces_;
    const ServerCgroups& cgroups_;
    Metrics& metrics_;
    std::atomic<std::size_t> in_use_{0};
    mutable std::mutex mu_;
    std::set<int> pidfds_;  // of running launchers
};

}  // namespace nestbox::server
