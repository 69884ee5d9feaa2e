#include "src/server/exec.hpp"

#include <signal.h>

#include <simdjson.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "policy/policy.hpp"
#include "src/server/child.hpp"
#include "src/server/log.hpp"
#include "src/server/output.hpp"

namespace nestbox::server {

namespace {

using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using asio::use_awaitable;
using Descriptor = asio::posix::stream_descriptor;

constexpr auto kPartialLineDelay = 50ms;        // a progress bar without newlines still streams
constexpr std::size_t kMaxHeldLine = 64 << 10;  // a very long line is sent in pieces
constexpr auto kWatchdogGrace = 5s;             // beyond the launcher's own timeout

std::string shell_quote_for_log(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) {
        if (!out.empty()) out += ' ';
        out += a;
    }
    return out;
}

}  // namespace

void parse_status_line(std::string_view line, LauncherReport& report) {
    simdjson::padded_string padded(line);
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc;
    std::string_view event;
    if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
        doc["event"].get_string().get(event) != simdjson::SUCCESS) {
        return;
    }
    if (event == "started") {
        report.started = true;
    } else if (event == "error") {
        std::string_view message;
        if (doc["message"].get_string().get(message) == simdjson::SUCCESS)
            report.error = std::string(message);
    } else if (event == "exited") {
        ExecResult r;
        std::int64_t code = 0;
        std::string_view signal;
        if (doc["exit_code"].get_int64().get(code) == simdjson::SUCCESS)
            r.exit_code = static_cast<int>(code);
        if (doc["signal"].get_string().get(signal) == simdjson::SUCCESS)
            r.signal = std::string(signal);
        // Absent or malformed fields keep their defaults (false).
        if (doc["timed_out"].get_bool().get(r.timed_out) != simdjson::SUCCESS) r.timed_out = false;
        if (doc["oom_killed"].get_bool().get(r.oom_killed) != simdjson::SUCCESS)
            r.oom_killed = false;
        simdjson::ondemand::object usage;
        if (doc["usage"].get_object().get(usage) == simdjson::SUCCESS) {
            std::uint64_t n = 0;
            if (usage["cpu_ms"].get_uint64().get(n) == simdjson::SUCCESS) r.cpu_ms = n;
            if (usage["memory_peak_bytes"].get_uint64().get(n) == simdjson::SUCCESS)
                r.memory_peak_bytes = n;
        }
        report.exited = r;
        std::string_view cgroup;
        if (doc["cgroup"].get_string().get(cgroup) == simdjson::SUCCESS)
            report.cgroup = std::string(cgroup);
        simdjson::ondemand::array warnings;
        if (doc["warnings"].get_array().get(warnings) == simdjson::SUCCESS) {
            for (auto w : warnings) {
                std::string_view text;
                if (w.get_string().get(text) == simdjson::SUCCESS)
                    report.warnings.emplace_back(text);
            }
        }
    }
}

namespace {

// Reads one output pipe to its end, passing what may be released to the sink. In streaming mode
// output goes out a line at a time, and a partial line once nothing more came for a moment.
asio::awaitable<void> pump(Descriptor& pipe, OutputStream& stream, StreamId id, ExecSink& sink,
                           bool streaming) {
    std::vector<char> buf(64 << 10);
    std::string held;
    asio::steady_timer flush(pipe.get_executor());
    bool client_gone = false;
    auto deliver = [&](std::string data) -> asio::awaitable<void> {
        // After the client is gone the pipe is still drained, so the command never blocks on it.
        if (!client_gone && !data.empty())
            client_gone = !(co_await sink.output(id, std::move(data)));
    };
    for (;;) {
        if (streaming && !held.empty()) {
            flush.expires_after(kPartialLineDelay);
            auto first = co_await (pipe.async_wait(Descriptor::wait_read, use_awaitable) ||
                                   flush.async_wait(use_awaitable));
            if (first.index() == 1) {
                co_await deliver(std::exchange(held, {}));
                continue;
            }
        }
        auto [ec, n] =
            co_await pipe.async_read_some(asio::buffer(buf), asio::as_tuple(use_awaitable));
        if (ec) break;  // end of file once every process holding the pipe has exited
        std::string ready = stream.feed(std::string_view(buf.data(), n));
        if (!streaming) {
            co_await deliver(std::move(ready));
            continue;
        }
        held += ready;
        const std::size_t newline = held.rfind('\n');
        if (newline != std::string::npos) {
            std::string lines = held.substr(0, newline + 1);
            held.erase(0, newline + 1);
            co_await deliver(std::move(lines));
        }
        if (held.size() >= kMaxHeldLine) co_await deliver(std::exchange(held, {}));
    }
    held += stream.finish();
    co_await deliver(std::move(held));
}

asio::awaitable<void> read_status(Descriptor& pipe, LauncherReport& report, ExecSink& sink,
                                  pid_t pid) {
    std::string pending;
    std::vector<char> buf(4096);
    for (;;) {
        auto [ec, n] =
            co_await pipe.async_read_some(asio::buffer(buf), asio::as_tuple(use_awaitable));
        if (ec) co_return;
        pending.append(buf.data(), n);
        std::size_t newline = 0;
        while ((newline = pending.find('\n')) != std::string::npos) {
            const bool was_started = report.started;
            parse_status_line(std::string_view(pending).substr(0, newline), report);
            pending.erase(0, newline + 1);
            if (report.started && !was_started) (void)co_await sink.started(pid);
        }
    }
}

asio::awaitable<void> feed_stdin(Descriptor* pipe, const std::string& data) {
    if (pipe == nullptr) co_return;
    // A command that never reads its input ends with the pipe closed under us: EPIPE, not an error.
    (void)co_await asio::async_write(*pipe, asio::buffer(data), asio::as_tuple(use_awaitable));
    pipe->close();
}

// What the launcher wrote on stderr before the sandbox started: all it says when it fails before
// it can use its status fd (an option or a policy file it cannot read). Passed on unchanged.
class LauncherWords final : public ExecSink {
  public:
    explicit LauncherWords(ExecSink& inner) : inner_(inner) {}
    asio::awaitable<bool> started(pid_t pid) override {
        started_ = true;
        co_return co_await inner_.started(pid);
    }
    asio::awaitable<bool> output(StreamId which, std::string data) override {
        if (!started_ && which == StreamId::Stderr && words_.size() < kKept)
            words_ += data.substr(0, kKept - words_.size());
        co_return co_await inner_.output(which, std::move(data));
    }
    std::string words() const { return words_.substr(0, words_.find_last_not_of('\n') + 1); }

  private:
    static constexpr std::size_t kKept = 4096;
    ExecSink& inner_;
    bool started_ = false;
    std::string words_;
};

}  // namespace

void ExecResult::write_fields(JsonWriter& w) const {
    w.field("exit_code", exit_code)
        .field("signal", signal)
        .field("timed_out", timed_out)
        .field("oom_killed", oom_killed);
    w.field("stdout_truncated", stdout_truncated).field("stderr_truncated", stderr_truncated);
    w.field("duration_ms", duration_ms);
    w.key("usage")
        .begin_object()
        .field("cpu_ms", cpu_ms)
        .field("memory_peak_bytes", memory_peak_bytes)
        .end_object();
    w.key("artifacts").begin_array();
    for (const Artifact& a : artifacts) {
        w.begin_object()
            .field("path", a.path)
            .field("size", a.size)
            .field("mime_type", a.mime_type)
            .end_object();
    }
    w.end_array();
}

// A concurrency slot, held for the life of one sandbox.
class Executor::Slot {
  public:
    explicit Slot(Executor& e) : e_(e) {}
    ~Slot() {
        if (held_) --e_.in_use_;
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    bool acquire() {
        std::size_t n = e_.in_use_.load();
        while (n < e_.config_.max_concurrent) {
            if (e_.in_use_.compare_exchange_weak(n, n + 1)) return held_ = true;
        }
        return false;
    }

  private:
    Executor& e_;
    bool held_ = false;
};

std::size_t Executor::running() const {
    return in_use_.load();
}

void Executor::terminate_all() {
    std::lock_guard lock(mu_);
    for (int fd : pidfds_)
        (void)PidFd(UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 3)), 0).send_signal(SIGTERM);
}

asio::awaitable<Parsed<ExecResult>> Executor::run(ExecRequest req, ExecSink& client_sink,
                                                  Responder& client, bool streaming) {
    // 1. Validate everything before anything is written or started: a refused request does not
    //    even register its agent.
    if (auto c = Workspaces::check_path(req.cwd, true); !c) {
        ApiError e = c.error();
        e.message = "cwd: " + e.message;
        co_return e;
    }
    std::optional<std::string> artifact_dir;
    if (req.artifact_dir) {
        auto dir = Workspaces::check_path(*req.artifact_dir, true);
        if (!dir) co_return dir.error();
        artifact_dir = *dir;
    }
    for (const auto& [path, content] : req.files) {
        if (auto p = Workspaces::check_path(path, false); !p) co_return p.error();
    }
    if (req.cgroup.max_pids && *req.cgroup.max_pids < 2) {
        co_return ApiError::invalid_field(
            "cgroup.max_pids", "must be at least 2 (the sandbox's init and the command)");
    }
    auto agent = agents_.get_or_create(req.agent_id);
    if (!agent) co_return ApiError::internal(agent.error().message());
    auto cwd = workspaces_.dir_or_absent(*agent, "cwd", req.cwd);
    if (!cwd) co_return cwd.error();

    // 2. A slot, or 429.
    Slot slot(*this);
    if (!slot.acquire()) {
        metrics_.rejected_busy();
        co_return ApiError{http::status::too_many_requests, "too_many_sandboxes",
                           "all " + std::to_string(config_.max_concurrent) +
                               " sandbox slots are in use; retry later"};
    }

    // 3. The request's files, as the agent: all checked before any is written.
    for (const auto& [path, content] : req.files) {
        if (auto c = workspaces_.check_write(*agent, path); !c) co_return c.error();
    }
    for (const auto& [path, content] : req.files) {
        if (auto w = workspaces_.write(*agent, path, content, 0644); !w) co_return w.error();
    }
    if (auto made = workspaces_.make_dir(*agent, *cwd); !made) co_return made.error();
    std::optional<ArtifactSnapshot> before;
    if (artifact_dir) before = ArtifactSnapshot::take(*agent, *artifact_dir);

    // 4. The sandbox's policy, given to the launcher on fd 3.
    policy::Policy p;
    p.workspace = agent->workspace;
    p.chdir = cwd->empty() ? "/workspace" : "/workspace/" + *cwd;
    p.uid = agent->uid;
    p.gid = agent->gid;
    p.share_net = req.network && config_.allow_network;
    p.limits.memory_bytes = config_.memory_mb.clamp(req.cgroup.memory_mb) << 20;
    p.limits.cpu_percent = config_.cpu_percent.clamp(req.cgroup.cpu_percent);
    p.limits.pids = config_.pids.clamp(req.cgroup.max_pids);
    const double timeout = config_.timeout_sec.clamp(req.timeout_sec);
    p.limits.timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(timeout * 1000)));
    p.limits.mode =
        config_.best_effort_limits ? policy::LimitMode::BestEffort : policy::LimitMode::Strict;
    p.limits.cgroup_parent = cgroups_.parent_for(agent->id);
    p.seccomp = config_.seccomp;
    for (const auto& [name, dir] : config_.shared_dirs) {
        p.mounts.push_back(
            {policy::MountType::RoBind, dir, "/mnt/shared/" + name, false, std::nullopt});
    }
    if (!config_.toolchain_path.empty()) {
        p.mounts.push_back({policy::MountType::RoBind, config_.toolchain_path,
                            config_.toolchain_path, true, std::nullopt});
    }
    const std::string path_var =
        (config_.toolchain_path.empty() ? "" : config_.toolchain_path + ":") +
        "/usr/local/bin:/usr/bin:/bin";
    p.setenv = {
        {"PATH", path_var}, {"HOME", "/workspace"}, {"TMPDIR", "/tmp"}, {"LANG", "C.UTF-8"}};
    p.setenv.insert(p.setenv.end(), req.env.begin(), req.env.end());
    p.setenv.insert(p.setenv.end(), req.secret_env.begin(), req.secret_env.end());
    p.setenv.emplace_back("AGENT_ID", agent->id);

    std::vector<std::string> secrets = config_.redact;
    for (const auto& [k, v] : req.secret_env)
        secrets.push_back(v);
    std::vector<std::string> argv = {config_.launcher,
                                     "--policy",
                                     "/dev/fd/" + std::to_string(kPolicyFd),
                                     "--status-fd",
                                     std::to_string(kStatusFd),
                                     "--"};
    std::vector<std::string> command =
        req.command ? std::vector<std::string>{config_.shell, "-c", *req.command} : req.argv;
    argv.insert(argv.end(), command.begin(), command.end());

    // 5. Run.
    const auto started_at = std::chrono::steady_clock::now();
    auto spawned = spawn_launcher(argv, policy::to_json(p), req.stdin_data.has_value());
    if (!spawned) co_return ApiError::internal(spawned.error().message());
    Child& child = *spawned;
    metrics_.sandbox_started();
    {
        std::lock_guard lock(mu_);
        pidfds_.insert(child.pidfd.get());
    }

    const auto ex = co_await asio::this_coro::executor;
    LauncherWords sink(client_sink);
    Descriptor out(ex, child.stdout_r.release()), err(ex, child.stderr_r.release());
    Descriptor status(ex, child.status_r.release()),
        exited(ex, ::fcntl(child.pidfd.get(), F_DUPFD_CLOEXEC, 3));
    std::optional<Descriptor> in;
    if (child.stdin_w) in.emplace(ex, child.stdin_w.release());
    const std::uint64_t cap = config_.output_bytes.clamp(req.max_output_bytes);
    OutputStream out_stream(secrets, cap, streaming), err_stream(secrets, cap, streaming);
    LauncherReport report;
    asio::steady_timer watchdog(ex);
    bool watchdog_fired = false;

    auto wait_exit = [&]() -> asio::awaitable<void> {
        (void)co_await exited.async_wait(Descriptor::wait_read, asio::as_tuple(use_awaitable));
        watchdog.cancel();
    };
    // The launcher enforces the timeout itself; this only catches a launcher that did not.
    auto guard = [&]() -> asio::awaitable<void> {
        watchdog.expires_after(
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(*p.limits.timeout) +
            kWatchdogGrace);
        auto [ec] = co_await watchdog.async_wait(asio::as_tuple(use_awaitable));
        if (ec) co_return;
        watchdog_fired = true;
        (void)child.pidfd.send_signal(SIGTERM);
        watchdog.expires_after(kWatchdogGrace);
        auto [ec2] = co_await watchdog.async_wait(asio::as_tuple(use_awaitable));
        if (!ec2) (void)child.pidfd.send_signal(SIGKILL);
    };
    auto work = [&]() -> asio::awaitable<void> {
        co_await (pump(out, out_stream, StreamId::Stdout, sink, streaming) &&
                  pump(err, err_stream, StreamId::Stderr, sink, streaming) &&
                  read_status(status, report, sink, child.pidfd.pid()) &&
                  feed_stdin(in ? &*in : nullptr, req.stdin_data.value_or("")) && wait_exit() &&
                  guard());
    };
    // A client that leaves ends its sandbox: the launcher kills it and cleans up. The launcher's
    // report is still read to the end, so the command is counted and audited like any other.
    // This never completes by itself; it is cancelled once the work is done.
    bool client_left = false;
    auto end_if_client_leaves = [&]() -> asio::awaitable<void> {
        const bool left = co_await client.until_disconnected();
        if (!left) co_return;
        client_left = true;
        (void)child.pidfd.send_signal(SIGTERM);
        asio::steady_timer grace(ex, kWatchdogGrace);
        auto [ec] = co_await grace.async_wait(asio::as_tuple(use_awaitable));
        if (ec) co_return;
        (void)child.pidfd.send_signal(SIGKILL);
        grace.expires_at(asio::steady_timer::time_point::max());
        (void)co_await grace.async_wait(asio::as_tuple(use_awaitable));
    };
    (void)co_await (work() || end_if_client_leaves());
    const int launcher_status = Reaper::instance().collect(child.pidfd);
    // A launcher that was killed before it could clean up leaves its (empty) groups behind.
    if (!report.exited) cgroups_.remove_stale(child.pidfd.pid());
    {
        std::lock_guard lock(mu_);
        pidfds_.erase(child.pidfd.get());
    }
    metrics_.sandbox_ended();
    const auto elapsed = std::chrono::steady_clock::now() - started_at;

    auto sandbox_failed = [&](const std::string& why) {
        ApiError e(http::status::internal_server_error, "sandbox_failed", why);
        log_event(spdlog::level::err, "sandbox_failed", agent->id + ": " + why);
        return e;
    };
    ExecResult result;
    if (report.error && !report.started) {
        // The launcher refused or could not build the sandbox: the server's fault, not the
        // command's, so not a 200 with exit code 125.
        co_return sandbox_failed("the sandbox could not be set up: " + *report.error);
    }
    if (report.exited) {
        result = *report.exited;
    } else if (watchdog_fired) {
        // The launcher missed its own deadline and was killed: report the timeout it was for.
        result.exit_code = 128 + SIGKILL;
        result.signal = "SIGKILL";
        result.timed_out = true;
    } else {
        // No report at all: whatever ran, it was not a sandbox we can vouch for. Fail closed.
        std::string why =
            "the launcher ended with " + describe_wait_status(launcher_status) + " and no report";
        if (!report.started && !sink.words().empty()) why += ": " + sink.words();
        co_return sandbox_failed(report.error.value_or(why));
    }
    result.stdout_truncated = out_stream.truncated();
    result.stderr_truncated = err_stream.truncated();
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count());
    if (before)
        result.artifacts =
            ArtifactSnapshot::take(*agent, *artifact_dir).changed_since(*before, *agent);
    metrics_.exec_finished(std::chrono::duration<double>(elapsed).count(), result.timed_out,
                           result.oom_killed, result.stdout_truncated || result.stderr_truncated);
    log_audit({agent->id, agent->uid, Redactor(secrets).redact(shell_quote_for_log(command)),
               result.exit_code, result.timed_out, result.oom_killed,
               std::chrono::duration<double, std::milli>(elapsed).count(), client_left});
    co_return result;
}

}  // namespace nestbox::server
