// nestboxd's configuration: command-line flags, each with a NESTBOX_* environment fallback (and
// the toolbox-server names SHARED_DIRS and TOOLCHAIN_PATH), checked before anything starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/core/error.hpp"

namespace nestbox::server {

struct Listen {
    bool unix_socket = false;
    std::string host;  // TCP
    std::uint16_t port = 0;
    std::string path;  // unix socket
    bool loopback() const;
    std::string to_string() const;
};

// A default and a maximum for one per-request setting.
template <class T>
struct Bounded {
    T fallback;
    T max;
    T clamp(std::optional<T> asked) const {
        return asked ? (*asked < max ? *asked : max) : fallback;
    }
};

struct Config {
    Listen listen;
    std::string workspace_root = "workspaces";
    std::string state_dir;                           // default: <workspace-root>/.nestbox
    std::map<std::string, std::string> shared_dirs;  // name -> host path
    std::string toolchain_path;
    std::string shell = "/bin/sh";
    std::string launcher;  // the nestbox binary
    std::string seccomp = "default";
    std::optional<std::string> token;  // from --token-file
    bool insecure_no_auth = false;
    Bounded<double> timeout_sec{120, 3600};
    Bounded<std::uint64_t> output_bytes{128 << 10, 16 << 20};
    Bounded<std::uint64_t> memory_mb{512, 16384};
    Bounded<std::uint32_t> cpu_percent{100, 100 * 64};
    Bounded<std::uint32_t> pids{256, 4096};
    bool best_effort_limits = false;
    bool allow_network = false;
    std::size_t max_concurrent = 32;
    std::uint64_t max_body_bytes = 64 << 20;
    std::chrono::seconds header_timeout{10};
    std::chrono::seconds body_timeout{60};
    std::chrono::seconds shutdown_grace{10};
    std::vector<std::string> redact;  // extra secret values to redact from every output
    std::string log_level = "info";
    std::string log_format = "text";
    std::string default_agent = "default";  // compatibility surface, when no X-Agent-Id
    unsigned threads = 0;                   // 0: one per core, at least 2
};

struct ParsedConfig {
    std::optional<std::string> print;  // --help / --version
    Config config;
};

// Parses flags (then environment), reads the token file, validates. Refuses a non-loopback listen
// address without a token unless --insecure-no-auth.
Result<ParsedConfig> parse_config(int argc, const char* const* argv);

Result<Listen> parse_listen(const std::string& text);
Result<std::map<std::string, std::string>> parse_shared_dirs(const std::string& text);

}  // namespace nestbox::server
