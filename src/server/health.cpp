#include "src/server/health.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nestbox_config.hpp"
#include "policy/policy.hpp"
#include "src/core/files.hpp"
#include "src/core/json_writer.hpp"
#include "src/server/child.hpp"
#include "src/server/exec.hpp"
#include "src/server/log.hpp"

namespace nestbox::server {

namespace {

struct SelfTest {
    bool ok = false;
    std::string cgroup = "none";
    std::vector<std::string> launcher_warnings;
    std::string error;
};

// Runs `true` in a sandbox with the server's default limits, synchronously, before serving.
SelfTest run_self_test(const Config& config, const ServerCgroups& cgroups) {
    SelfTest t;
    policy::Policy p;
    p.limits.cgroup_parent = cgroups.parent_for("");
    p.limits.memory_bytes = config.memory_mb.fallback << 20;
    p.limits.cpu_percent = config.cpu_percent.fallback;
    p.limits.pids = config.pids.fallback;
    p.limits.timeout = std::chrono::seconds(30);
    p.limits.mode =
        config.best_effort_limits ? policy::LimitMode::BestEffort : policy::LimitMode::Strict;
    p.seccomp = config.seccomp;
    auto child =
        spawn_launcher({config.launcher, "--policy", "/dev/fd/" + std::to_string(kPolicyFd),
                        "--status-fd", std::to_string(kStatusFd), "--", "/bin/true"},
                       policy::to_json(p), false);
    if (!child) {
        t.error = child.error().message();
        return t;
    }
    child->stdout_r.reset();
    // stderr stays open: a launcher that fails before it can use its status fd (an option or a
    // policy file it cannot read) says why there alone, and with the pipe closed it was killed by
    // SIGPIPE saying it, leaving "ended with status 13". It writes a line or two there at most.
    auto events = read_fd(child->status_r.get(), 1 << 20);
    auto said = read_fd(child->stderr_r.get(), 64 << 10);
    child->stderr_r.reset();
    const int status = Reaper::instance().collect(child->pidfd);
    if (!events) {
        t.error = "reading the launcher's status: " + events.error().message();
        return t;
    }
    LauncherReport report;
    for (std::size_t pos = 0; pos < events->size();) {
        const std::size_t end = std::min(events->find('\n', pos), events->size());
        parse_status_line(std::string_view(*events).substr(pos, end - pos), report);
        pos = end + 1;
    }
    t.error = report.error.value_or("");
    if (report.exited) {
        t.cgroup = report.cgroup.value_or("none");
        t.launcher_warnings = report.warnings;
        t.ok = report.exited->exit_code == 0;
        if (!t.ok && t.error.empty())
            t.error = "the self-test command exited " + std::to_string(report.exited->exit_code);
    }
    if (t.error.empty() && !t.ok) {
        t.error = "the launcher " + config.launcher + " ended with " +
                  describe_wait_status(status) + " and no report";
        if (said && !said->empty())
            t.error += ": " + said->substr(0, said->find_last_not_of('\n') + 1);
    }
    return t;
}

bool user_namespaces_available() {
    auto text = read_file(AT_FDCWD, "/proc/sys/user/max_user_namespaces");
    return text && std::atol(text->c_str()) > 0;
}

}  // namespace

Health::Health(const Config& config, const ServerCgroups& cgroups,
               std::vector<std::string> warnings)
    : warnings_(std::move(warnings)) {
    const SelfTest t = run_self_test(config, cgroups);
    self_test_ok_ = t.ok;
    cgroup_ = t.cgroup;
    seccomp_ = t.ok && config.seccomp != "none";
    user_namespace_ = user_namespaces_available();
    namespaces_ = {"mount", "pid", "net", "ipc", "uts", "cgroup"};
    if (::geteuid() != 0) namespaces_.emplace_back("user");
    if (!t.ok) {
        warnings_.emplace_back("sandboxes cannot be started on this host: " + t.error);
        log_event(spdlog::level::err, "self_test_failed", warnings_.back());
    }
    for (const auto& w : t.launcher_warnings)
        warnings_.emplace_back(w);
    if (t.ok && cgroup_ == "none")
        warnings_.emplace_back(
            "no cgroup controllers: memory, CPU and process limits are not enforced");
    if (config.best_effort_limits)
        warnings_.emplace_back(
            "--limits=best-effort: a limit the host cannot enforce is dropped, not refused");
    if (config.seccomp == "none") warnings_.emplace_back("seccomp is off (--seccomp none)");
    if (!config.toolchain_path.empty() && ::access(config.toolchain_path.c_str(), X_OK) != 0)
        warnings_.emplace_back("--toolchain-path " + config.toolchain_path +
                               " is not there: sandboxes run without it");
    if (config.allow_network)
        warnings_.emplace_back(
            "--allow-network: requests may give their sandbox the host's network");
    if (!config.token) {
        warnings_.emplace_back(config.insecure_no_auth && !config.listen.loopback()
                                   ? "no token and listening beyond loopback (--insecure-no-auth): "
                                     "anyone who can reach " +
                                         config.listen.to_string() + " can run commands"
                                   : "no token: any local process that can reach " +
                                         config.listen.to_string() + " can run commands");
    }
    if (::geteuid() != 0) {
        warnings_.emplace_back(
            "not running as root: every agent runs as the server's own UID, so agents are not "
            "separated from each other by UID");
    }
    for (const auto& w : warnings_) {
        if (w.rfind("sandboxes cannot", 0) != 0) log_event(spdlog::level::warn, "warning", w);
    }
}

std::string Health::render(bool shutting_down) const {
    JsonWriter w;
    w.begin_object().field(
        "status", shutting_down ? "shutting_down" : (self_test_ok_ ? "ok" : "unavailable"));
    w.field("version", NESTBOX_VERSION);
    w.key("isolation").begin_object();
    w.key("namespaces").begin_array();
    for (const auto& n : namespaces_)
        w.value(n);
    w.end_array();
    w.field("cgroup", cgroup_)
        .field("seccomp", seccomp_)
        .field("user_namespace", user_namespace_)
        .end_object();
    w.key("warnings").begin_array();
    for (const auto& warning : warnings_)
        w.value(warning);
    w.end_array().end_object();
    return w.take();
}

}  // namespace nestbox::server
