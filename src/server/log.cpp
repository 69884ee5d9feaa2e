#include "src/server/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

#include "src/core/json_writer.hpp"

namespace nestbox::server {

namespace {

bool json_format = false;

void emit(spdlog::level::level_enum level, const std::string& event, JsonWriter& fields,
          const std::string& text) {
    if (json_format) {
        // JsonWriter escapes every value: a client-chosen path cannot forge log fields.
        fields.end_object();
        spdlog::log(level, "{}", fields.str());
    } else {
        spdlog::log(level, "{} {}", event, text);
    }
}

JsonWriter start(const std::string& event) {
    JsonWriter w;
    w.begin_object().field("event", event);
    return w;
}

// For text logs: quotes a client-chosen value so it cannot break the line or fake a field.
std::string quoted(const std::string& s) {
    std::string out;
    append_json_string(out, s);
    return out;
}

}  // namespace

void setup_logging(const std::string& level, const std::string& format) {
    json_format = format == "json";
    auto logger = spdlog::stderr_logger_mt("nestboxd");
    logger->set_pattern(json_format ? R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","log":%v})"
                                    : "%Y-%m-%dT%H:%M:%S.%e%z %l %v");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(level));
    spdlog::flush_on(spdlog::level::info);
}

void log_request(const RequestLog& r) {
    JsonWriter w = start("request");
    w.field("method", r.method)
        .field("path", r.path)
        .field("status", r.status)
        .field("ms", r.ms)
        .field("agent", r.agent);
    emit(spdlog::level::info, "request", w,
         r.method + " " + quoted(r.path) + " status=" + std::to_string(r.status) +
             " ms=" + std::to_string(static_cast<long>(r.ms)) +
             (r.agent.empty() ? "" : " agent=" + r.agent));
}

void log_audit(const AuditLog& a) {
    JsonWriter w = start("exec");
    w.field("agent", a.agent)
        .field("uid", a.uid)
        .field("command", a.command)
        .field("exit_code", a.exit_code);
    w.field("timed_out", a.timed_out).field("oom_killed", a.oom_killed).field("ms", a.ms);
    w.field("client_left", a.client_left);
    emit(spdlog::level::info, "exec", w,
         "agent=" + a.agent + " uid=" + std::to_string(a.uid) +
             " exit=" + std::to_string(a.exit_code) + (a.timed_out ? " timed_out" : "") +
             (a.oom_killed ? " oom_killed" : "") + (a.client_left ? " client_left" : "") +
             " ms=" + std::to_string(static_cast<long>(a.ms)) + " command=" + quoted(a.command));
}

void log_event(spdlog::level::level_enum level, const std::string& event,
               const std::string& message) {
    JsonWriter w = start(event);
    w.field("message", message);
    emit(level, event, w, message);
}

}  // namespace nestbox::server
