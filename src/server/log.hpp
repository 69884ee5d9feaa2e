// Logging: spdlog to stderr, as text or one JSON object per line. Every request gets one line
// (method, path, status, duration, agent) and every exec an audit line (agent, uid, command,
// exit, duration). Secret values never reach a log: commands are logged after redaction.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace nestbox::server {

void setup_logging(const std::string& level, const std::string& format);

struct RequestLog {
    std::string method;
    std::string path;
    unsigned status = 0;
    double ms = 0;
    std::string agent;
};
void log_request(const RequestLog& r);

struct AuditLog {
    std::string agent;
    unsigned uid = 0;
    std::string command;  // redacted
    int exit_code = 0;
    bool timed_out = false;
    bool oom_killed = false;
    double ms = 0;
    bool client_left = false;  // the client disconnected, so the sandbox was ended early
};
void log_audit(const AuditLog& a);

// A plain event with a message ("server listening", "launcher self-test failed").
void log_event(spdlog::level::level_enum level, const std::string& event,
               const std::string& message);

}  // namespace nestbox::server
