// Request bodies: JSON parsed with simdjson into typed structs, or a 400 naming the field.
// Unknown fields are ignored (the contract lets clients send extras); wrong types, missing
// required fields and out-of-range values are errors.
#pragma once

#include <boost/system/result.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/server/errors.hpp"

namespace nestbox::server {

template <class T>
using Parsed = boost::system::result<T, ApiError>;

using StringPairs = std::vector<std::pair<std::string, std::string>>;

struct CgroupRequest {
    std::optional<std::uint64_t> memory_mb;
    std::optional<std::uint32_t> cpu_percent;
    std::optional<std::uint32_t> max_pids;
};

struct ExecRequest {
    std::string agent_id;
    std::optional<std::string> command;  // run by the configured shell
    std::vector<std::string> argv;       // or run as given
    std::string cwd;                     // relative to the workspace; "" is its root
    std::optional<std::string> stdin_data;
    StringPairs files;  // path -> content, written before the command runs
    StringPairs env;
    StringPairs secret_env;  // like env, and redacted from the output
    std::optional<double> timeout_sec;
    std::optional<std::uint64_t> max_output_bytes;
    CgroupRequest cgroup;
    bool network = false;
    std::optional<std::string> artifact_dir;
};

enum class Encoding { Utf8, Base64 };

struct ReadRequest {
    std::string agent_id;
    std::string path;
    std::optional<Encoding> encoding;  // absent: utf8 when the file is valid UTF-8, else base64
};

struct WriteRequest {
    std::string agent_id;
    std::string path;
    std::string content;  // decoded bytes
    unsigned mode = 0644;
};

struct ListRequest {
    std::string agent_id;
    std::string path;
    bool recursive = false;
};

struct DeleteRequest {
    std::string agent_id;
    std::string path;
    bool recursive = false;
};

Parsed<ExecRequest> parse_exec_request(std::string& body);
Parsed<ReadRequest> parse_read_request(std::string& body);
Parsed<WriteRequest> parse_write_request(std::string& body);
Parsed<ListRequest> parse_list_request(std::string& body);
Parsed<DeleteRequest> parse_delete_request(std::string& body);

// The contract's rule for agent IDs: 1-128 of [A-Za-z0-9._-], not "." or "..", no leading ".".
bool valid_agent_id(std::string_view id);

}  // namespace nestbox::server
