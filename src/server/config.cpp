#include "src/server/config.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "nestbox_config.hpp"
#include "policy/policy.hpp"
#include "src/core/files.hpp"
#include "src/server/server_build_config.hpp"

namespace nestbox::server {

namespace {

Error config_error(const std::string& what) {
    return Error("config", what);
}

std::string trim(std::string s) {
    while (!s.empty() &&
           (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
        s.pop_back();
    return s;
}

// The launcher next to our own binary (installed layout), else the one this build made.
std::string default_launcher() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto sibling = self.parent_path() / "nestbox";
        if (std::filesystem::exists(sibling, ec)) return sibling;
    }
    return NESTBOX_BUILD_LAUNCHER;
}

// Sizes and durations use the launcher's own parsers, so every spelling means the same everywhere.
std::function<void(const std::string&)> size_into(std::uint64_t& out, const std::string& name,
                                                  std::uint64_t unit = 1) {
    return [&out, name, unit](const std::string& text) {
        auto n = policy::parse_size(text);
        if (!n) throw CLI::ValidationError(name, n.error().what());
        out = *n / unit;
    };
}

}  // namespace

bool Listen::loopback() const {
    if (unix_socket) return true;
    if (host == "localhost") return true;
    in6_addr v6{};
    if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
    in_addr v4{};
    return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::string Listen::to_string() const {
    if (unix_socket) return "unix:" + path;
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
           std::to_string(port);
}

Result<Listen> parse_listen(const std::string& text) {
    Listen l;
    if (text.starts_with("unix:")) {
        l.unix_socket = true;
        l.path = text.substr(5);
        if (l.path.empty()) return config_error("--listen: 'unix:' needs a socket path");
        return l;
    }
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos)
        return config_error("--listen: '" + text + "' is not HOST:PORT or unix:PATH");
    l.host = text.substr(0, colon);
    if (l.host.size() >= 2 && l.host.front() == '[' && l.host.back() == ']')
        l.host = l.host.substr(1, l.host.size() - 2);
    if (l.host.empty()) l.host = "0.0.0.0";
    char* end = nullptr;
    const unsigned long port = std::strtoul(text.c_str() + colon + 1, &end, 10);
    if (colon + 1 == text.size() || *end != '\0' || port == 0 || port > 65535) {
        return config_error("--listen: bad port in '" + text + "'");
    }
    l.port = static_cast<std::uint16_t>(port);
    return l;
}

Result<std::map<std::string, std::string>> parse_shared_dirs(const std::string& text) {
    std::map<std::string, std::string> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t end = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        const std::size_t colon = item.find(':');
        const std::string name = item.substr(0, colon);
        if (colon == std::string::npos || name.empty() || name.find('/') != std::string::npos ||
            name == "." || name == ".." || item.size() == colon + 1 || item[colon + 1] != '/') {
            return config_error("--shared-dirs: '" + item + "' is not NAME:/absolute/path");
        }
        out[name] = item.substr(colon + 1);
    }
    return out;
}

Result<ParsedConfig> parse_config(int argc, const char* const* argv) {
    ParsedConfig parsed;
    Config& c = parsed.config;
    CLI::App app("nestboxd: runs agents' commands in nestbox sandboxes over HTTP (nestboxd(8)).",
                 "nestboxd");
    std::string listen = "127.0.0.1:9090";
    std::string shared;
    std::string token_file;
    std::string redact_file;
    std::uint64_t memory_default = c.memory_mb.fallback, memory_max = c.memory_mb.max;
    bool version = false;
    // Like most daemons: a flag given twice (say, in a unit file and again by hand) takes the last.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    app.add_option("--listen", listen, "HOST:PORT or unix:PATH")
        ->envname("NESTBOX_LISTEN")
        ->capture_default_str();
    app.add_option("--workspace-root", c.workspace_root,
                   "Directory holding one workspace per agent")
        ->envname("NESTBOX_WORKSPACE_ROOT")
        ->capture_default_str();
    app.add_option("--state-dir", c.state_dir,
                   "Registry directory (default: <workspace-root>/.nestbox)")
        ->envname("NESTBOX_STATE_DIR");
    app.add_option("--shared-dirs", shared, "Read-only dirs: NAME:/path,... (env SHARED_DIRS too)")
        ->envname("NESTBOX_SHARED_DIRS");
    app.add_option("--toolchain-path", c.toolchain_path,
                   "Put first on PATH in sandboxes (env TOOLCHAIN_PATH too)")
        ->envname("NESTBOX_TOOLCHAIN_PATH");
    app.add_option("--shell", c.shell, "Shell for `command` (run as SHELL -c COMMAND)")
        ->envname("NESTBOX_SHELL")
        ->capture_default_str();
    app.add_option("--launcher", c.launcher, "The nestbox binary")->envname("NESTBOX_LAUNCHER");
    app.add_option("--seccomp", c.seccomp, "Seccomp profile for sandboxes: default, none or FILE")
        ->envname("NESTBOX_SECCOMP")
        ->capture_default_str();
    app.add_option("--token-file", token_file, "File holding the bearer token clients must send")
        ->envname("NESTBOX_TOKEN_FILE");
    app.add_flag("--insecure-no-auth", c.insecure_no_auth,
                 "Allow a non-loopback listener without a token")
        ->envname("NESTBOX_INSECURE_NO_AUTH");
    app.add_option("--default-timeout", c.timeout_sec.fallback, "Seconds")
        ->envname("NESTBOX_DEFAULT_TIMEOUT")
        ->capture_default_str();
    app.add_option("--max-timeout", c.timeout_sec.max, "Seconds")
        ->envname("NESTBOX_MAX_TIMEOUT")
        ->capture_default_str();
    app.add_option_function<std::string>("--default-output",
                                         size_into(c.output_bytes.fallback, "--default-output"),
                                         "Bytes per stream (default 128K)")
        ->envname("NESTBOX_DEFAULT_OUTPUT");
    app.add_option_function<std::string>("--max-output",
                                         size_into(c.output_bytes.max, "--max-output"),
                                         "Bytes per stream (default 16M)")
        ->envname("NESTBOX_MAX_OUTPUT");
    app.add_option_function<std::string>("--default-memory",
                                         size_into(memory_default, "--default-memory", 1 << 20),
                                         "Memory per sandbox (default 512M)")
        ->envname("NESTBOX_DEFAULT_MEMORY");
    app.add_option_function<std::string>("--max-memory",
                                         size_into(memory_max, "--max-memory", 1 << 20),
                                         "Memory per sandbox (default 16G)")
        ->envname("NESTBOX_MAX_MEMORY");
    app.add_option("--default-cpu", c.cpu_percent.fallback, "Percent of a core")
        ->envname("NESTBOX_DEFAULT_CPU")
        ->capture_default_str();
    app.add_option("--max-cpu", c.cpu_percent.max, "Percent of a core")
        ->envname("NESTBOX_MAX_CPU")
        ->capture_default_str();
    app.add_option("--default-pids", c.pids.fallback, "Processes per sandbox")
        ->envname("NESTBOX_DEFAULT_PIDS")
        ->capture_default_str();
    app.add_option("--max-pids", c.pids.max, "Processes per sandbox")
        ->envname("NESTBOX_MAX_PIDS")
        ->capture_default_str();
    app.add_option_function<std::string>(
           "--limits", [&c](const std::string& m) { c.best_effort_limits = m == "best-effort"; },
           "strict (default) or best-effort, as for nestbox --limits")
        ->check(CLI::IsMember({"strict", "best-effort"}))
        ->envname("NESTBOX_LIMITS");
    app.add_flag("--allow-network", c.allow_network, "Honour \"network\": true (the host network)")
        ->envname("NESTBOX_ALLOW_NETWORK");
    app.add_option("--max-concurrent", c.max_concurrent, "Sandboxes at once; more get 429")
        ->envname("NESTBOX_MAX_CONCURRENT")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 16));
    app.add_option_function<std::string>("--max-body", size_into(c.max_body_bytes, "--max-body"),
                                         "Largest request body (default 64M)")
        ->envname("NESTBOX_MAX_BODY");
    app.add_option_function<unsigned>(
           "--header-timeout", [&c](unsigned s) { c.header_timeout = std::chrono::seconds(s); },
           "Seconds to receive request headers (default 10)")
        ->envname("NESTBOX_HEADER_TIMEOUT");
    app.add_option_function<unsigned>(
           "--body-timeout", [&c](unsigned s) { c.body_timeout = std::chrono::seconds(s); },
           "Seconds to receive a request body (default 60)")
        ->envname("NESTBOX_BODY_TIMEOUT");
    app.add_option_function<unsigned>(
           "--shutdown-grace", [&c](unsigned s) { c.shutdown_grace = std::chrono::seconds(s); },
           "Seconds running sandboxes get on SIGTERM (default 10)")
        ->envname("NESTBOX_SHUTDOWN_GRACE");
    app.add_option("--redact", redact_file,
                   "File of values to redact from all output, one per line")
        ->envname("NESTBOX_REDACT");
    app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error")
        ->envname("NESTBOX_LOG_LEVEL")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
        ->capture_default_str();
    app.add_option("--log-format", c.log_format, "text or json")
        ->envname("NESTBOX_LOG_FORMAT")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    app.add_option("--default-agent", c.default_agent,
                   "Agent of compatibility-surface requests without X-Agent-Id")
        ->envname("NESTBOX_DEFAULT_AGENT")
        ->capture_default_str();
    app.add_option("--threads", c.threads, "Worker threads (default: one per core, at least 2)")
        ->envname("NESTBOX_THREADS");
    app.add_flag("--version", version, "Print the version and exit");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        parsed.print = app.help();
        return parsed;
    } catch (const CLI::ParseError& e) {
        return config_error(e.what());
    }
    if (version) {
        parsed.print = std::string("nestboxd ") + NESTBOX_VERSION + "\n";
        return parsed;
    }

    NESTBOX_TRY_ASSIGN(c.listen, parse_listen(listen));
    if (shared.empty()) {
        if (const char* env = std::getenv("SHARED_DIRS")) shared = env;
    }
    NESTBOX_TRY_ASSIGN(c.shared_dirs, parse_shared_dirs(shared));
    // Checked now: a missing one would otherwise fail every command's mount, one by one.
    for (const auto& [name, dir] : c.shared_dirs) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) {
            std::string what = "--shared-dirs ";
            what.append(name).append(":").append(dir).append(" is not a directory");
            return Error("config", std::move(what), ec ? ec.value() : ENOTDIR);
        }
    }
    if (c.toolchain_path.empty()) {
        if (const char* env = std::getenv("TOOLCHAIN_PATH")) c.toolchain_path = env;
    }
    c.memory_mb = {memory_default, memory_max};
    if (c.state_dir.empty()) c.state_dir = c.workspace_root + "/.nestbox";
    if (c.launcher.empty()) c.launcher = default_launcher();
    if (c.threads == 0) c.threads = std::max(2U, std::thread::hardware_concurrency());

    if (!token_file.empty()) {
        auto token = read_file(AT_FDCWD, token_file, 4096);
        if (!token) return Error("config", "--token-file " + token_file, token.error().code());
        c.token = trim(*token);
        if (c.token->empty()) return config_error("--token-file " + token_file + " is empty");
    }
    if (!redact_file.empty()) {
        auto text = read_file(AT_FDCWD, redact_file, 1 << 20);
        if (!text) return Error("config", "--redact " + redact_file, text.error().code());
        std::size_t pos = 0;
        while (pos < text->size()) {
            const std::size_t end = std::min(text->find('\n', pos), text->size());
            std::string line = trim(text->substr(pos, end - pos));
            if (!line.empty()) c.redact.push_back(std::move(line));
            pos = end + 1;
        }
    }
    if (!c.listen.loopback() && !c.token && !c.insecure_no_auth) {
        return config_error("refusing to listen on " + c.listen.to_string() +
                            " without a token: anyone who can reach it could run commands; pass "
                            "--token-file (or --insecure-no-auth if the network is trusted)");
    }
    auto check = [](bool ok, const std::string& what) {
        return ok ? Result<void>{} : Result<void>(config_error(what));
    };
    NESTBOX_TRY(check(c.timeout_sec.fallback > 0 && c.timeout_sec.fallback <= c.timeout_sec.max,
                      "--default-timeout must be > 0 and <= --max-timeout"));
    NESTBOX_TRY(check(c.output_bytes.fallback > 0 && c.output_bytes.fallback <= c.output_bytes.max,
                      "--default-output must be > 0 and <= --max-output"));
    NESTBOX_TRY(check(c.memory_mb.fallback > 0 && c.memory_mb.fallback <= c.memory_mb.max,
                      "--default-memory must be > 0 and <= --max-memory"));
    NESTBOX_TRY(check(c.cpu_percent.fallback > 0 && c.cpu_percent.fallback <= c.cpu_percent.max,
                      "--default-cpu must be > 0 and <= --max-cpu"));
    NESTBOX_TRY(check(c.pids.fallback >= 2 && c.pids.fallback <= c.pids.max,
                      "--default-pids must be >= 2 and <= --max-pids"));
    NESTBOX_TRY(check(c.shell.starts_with("/"), "--shell must be an absolute path"));
    return parsed;
}

}  // namespace nestbox::server
