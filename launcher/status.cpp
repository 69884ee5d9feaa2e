#include "launcher/status.hpp"

#include <string.h>

#include "src/core/files.hpp"
#include "src/core/json_writer.hpp"

namespace nestbox::launcher {

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev != nullptr ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

void StatusFd::write_line(std::string line) const {
    if (fd_ < 0) return;
    line += '\n';
    // A reader that went away must not take the launcher down (SIGPIPE is ignored).
    (void)write_all(fd_, line);
}

void StatusFd::started(pid_t pid) const {
    if (fd_ < 0) return;
    JsonWriter w;
    w.begin_object()
        .field("event", "started")
        .field("pid", static_cast<std::int64_t>(pid))
        .end_object();
    write_line(w.take());
}

void StatusFd::exited(const Outcome& o) const {
    if (fd_ < 0) return;
    JsonWriter w;
    w.begin_object().field("event", "exited").field("exit_code", o.exit_code);
    if (o.signal) {
        w.field("signal", signal_name(*o.signal));
    } else {
        w.key("signal").null();
    }
    w.field("timed_out", o.timed_out).field("oom_killed", o.oom_killed);
    w.key("usage").begin_object();
    w.field("cpu_ms", o.cpu_ms).field("memory_peak_bytes", o.memory_peak_bytes).end_object();
    if (o.cgroup.empty()) {
        w.key("cgroup").null();
    } else {
        w.field("cgroup", o.cgroup);
    }
    w.key("warnings").begin_array();
    for (const std::string& warning : o.warnings)
        w.value(warning);
    w.end_array().end_object();
    write_line(w.take());
}

void StatusFd::error(const Error& e) const {
    if (fd_ < 0) return;
    JsonWriter w;
    w.begin_object()
        .field("event", "error")
        .field("step", e.step())
        .field("message", e.message())
        .field("errno", e.code())
        .end_object();
    write_line(w.take());
}

}  // namespace nestbox::launcher
