#include "src/server/requests.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/base64.hpp"

namespace nestbox::server {

namespace od = simdjson::ondemand;

namespace {

// One parser per thread: simdjson parsers keep their buffers between documents.
od::parser& thread_parser() {
    thread_local od::parser parser;
    return parser;
}

ApiError field_error(std::string_view field, const std::string& problem) {
    return ApiError::invalid_field(std::string(field), problem);
}

Parsed<std::string> get_string(od::value& v, std::string_view field) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return field_error(field, "expected a string");
    return std::string(s);
}

Parsed<bool> get_bool(od::value& v, std::string_view field) {
    bool b = false;
    if (v.get_bool().get(b) != simdjson::SUCCESS)
        return field_error(field, "expected true or false");
    return b;
}

// A positive whole number no larger than `max`.
Parsed<std::uint64_t> get_positive(od::value& v, std::string_view field,
                                   std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    std::uint64_t n = 0;
    if (v.get_uint64().get(n) != simdjson::SUCCESS) {
        return field_error(field, "expected a positive whole number");
    }
    if (n == 0) return field_error(field, "must be greater than 0");
    if (n > max) return field_error(field, "must be at most " + std::to_string(max));
    return n;
}

Parsed<StringPairs> get_string_map(od::value& v, std::string_view field) {
    od::object obj;
    if (v.get_object().get(obj) != simdjson::SUCCESS) {
        return field_error(field, "expected an object of strings");
    }
    StringPairs out;
    for (auto entry : obj) {
        std::string_view key;
        if (entry.unescaped_key().get(key) != simdjson::SUCCESS)
            return field_error(field, "bad key");
        od::value value;
        std::string_view s;
        if (entry.value().get(value) != simdjson::SUCCESS ||
            value.get_string().get(s) != simdjson::SUCCESS) {
            return field_error(std::string(field) + "." + std::string(key), "expected a string");
        }
        out.emplace_back(std::string(key), std::string(s));
    }
    return out;
}

Parsed<std::vector<std::string>> get_string_array(od::value& v, std::string_view field) {
    od::array arr;
    if (v.get_array().get(arr) != simdjson::SUCCESS)
        return field_error(field, "expected an array of strings");
    std::vector<std::string> out;
    for (auto item : arr) {
        std::string_view s;
        if (item.get_string().get(s) != simdjson::SUCCESS) {
            return field_error(field, "expected an array of strings");
        }
        out.emplace_back(s);
    }
    return out;
}

// Walks the top-level object, handing each known field to `on_field`; unknown fields are skipped.
template <class OnField>
Parsed<void> for_each_field(std::string& body, OnField&& on_field) {
    // simdjson reads a little past the end of its input; reserve that padding in place.
    body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
    simdjson::padded_string_view view(body.data(), body.size(), body.capacity());
    od::document doc;
    if (thread_parser().iterate(view).get(doc) != simdjson::SUCCESS) {
        return ApiError::bad_request("invalid_json", "the body is not valid JSON");
    }
    od::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS) {
        return ApiError::bad_request("invalid_json", "the body must be a JSON object");
    }
    for (auto entry : obj) {
        std::string_view key;
        od::value value;
        if (entry.unescaped_key().get(key) != simdjson::SUCCESS ||
            entry.value().get(value) != simdjson::SUCCESS) {
            return ApiError::bad_request("invalid_json", "the body is not valid JSON");
        }
        if (auto r = on_field(key, value); !r) return r.error();
    }
    // Trailing garbage after the object ("{}x") is malformed too: only the end may follow.
    const char* rest = nullptr;
    if (doc.current_location().get(rest) == simdjson::SUCCESS) {
        return ApiError::bad_request("invalid_json", "unexpected data after the JSON object");
    }
    return {};
}

Parsed<void> require_agent(const std::string& agent_id) {
    if (agent_id.empty()) return field_error("agent_id", "missing");
    if (!valid_agent_id(agent_id)) {
        return field_error("agent_id",
                           "must be 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
    }
    return {};
}

Parsed<Encoding> parse_encoding(od::value& v) {
    auto s = get_string(v, "encoding");
    if (!s) return s.error();
    if (*s == "utf8" || *s == "utf-8") return Encoding::Utf8;
    if (*s == "base64") return Encoding::Base64;
    return field_error("encoding", R"(expected "utf8" or "base64")");
}

// Fields shared by the workspace requests: agent_id and path.
template <class Req>
Parsed<bool> common_field(Req& r, std::string_view key, od::value& v) {
    if (key == "agent_id") {
        auto s = get_string(v, key);
        if (!s) return s.error();
        r.agent_id = std::move(*s);
        return true;
    }
    if (key == "path") {
        auto s = get_string(v, key);
        if (!s) return s.error();
        r.path = std::move(*s);
        return true;
    }
    return false;
}

}  // namespace

bool valid_agent_id(std::string_view id) {
    if (id.empty() || id.size() > 128 || id.front() == '.') return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

Parsed<ExecRequest> parse_exec_request(std::string& body) {
    ExecRequest r;
    bool has_argv = false;
    auto on_field = [&](std::string_view key, od::value& v) -> Parsed<void> {
        auto assign = [](auto& out, auto parsed) -> Parsed<void> {
            if (!parsed) return parsed.error();
            out = std::move(*parsed);
            return {};
        };
        if (key == "agent_id") return assign(r.agent_id, get_string(v, key));
        if (key == "command") return assign(r.command, get_string(v, key));
        if (key == "argv") {
            has_argv = true;
            return assign(r.argv, get_string_array(v, key));
        }
        if (key == "cwd") return assign(r.cwd, get_string(v, key));
        if (key == "stdin") return assign(r.stdin_data, get_string(v, key));
        if (key == "files") return assign(r.files, get_string_map(v, key));
        if (key == "env") return assign(r.env, get_string_map(v, key));
        if (key == "secret_env") return assign(r.secret_env, get_string_map(v, key));
        if (key == "network") return assign(r.network, get_bool(v, key));
        if (key == "artifact_dir") return assign(r.artifact_dir, get_string(v, key));
        if (key == "max_output_bytes") return assign(r.max_output_bytes, get_positive(v, key));
        if (key == "timeout_sec") {
            double t = 0;
            if (v.get_double().get(t) != simdjson::SUCCESS || !std::isfinite(t)) {
                return field_error(key, "expected a number of seconds");
            }
            if (t <= 0) return field_error(key, "must be greater than 0");
            r.timeout_sec = t;
            return {};
        }
        if (key == "cgroup") {
            od::object obj;
            if (v.get_object().get(obj) != simdjson::SUCCESS)
                return field_error(key, "expected an object");
            for (auto entry : obj) {
                std::string_view k;
                od::value cv;
                if (entry.unescaped_key().get(k) != simdjson::SUCCESS ||
                    entry.value().get(cv) != simdjson::SUCCESS) {
                    return field_error(key, "bad entry");
                }
                const std::string name = "cgroup." + std::string(k);
                constexpr std::uint64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
                if (k == "memory_mb") {
                    if (auto m = assign(r.cgroup.memory_mb,
                                        get_positive(cv, name, std::uint64_t{1} << 32));
                        !m)
                        return m;
                } else if (k == "cpu_percent") {
                    auto n = get_positive(cv, name, kMaxU32);
                    if (!n) return n.error();
                    r.cgroup.cpu_percent = static_cast<std::uint32_t>(*n);
                } else if (k == "max_pids") {
                    auto n = get_positive(cv, name, kMaxU32);
                    if (!n) return n.error();
                    r.cgroup.max_pids = static_cast<std::uint32_t>(*n);
                }
            }
            return {};
        }
        return {};
    };
    if (auto parsed = for_each_field(body, on_field); !parsed) return parsed.error();

    // toolbox-server compatibility: the agent may come in env.AGENT_ID.
    if (r.agent_id.empty()) {
        for (const auto& [k, v] : r.env) {
            if (k == "AGENT_ID") r.agent_id = v;
        }
    }
    if (auto ok = require_agent(r.agent_id); !ok) return ok.error();
    if (r.command.has_value() == has_argv) {
        return ApiError::bad_request("invalid_field",
                                     "exactly one of command and argv is required");
    }
    if (has_argv && r.argv.empty()) return field_error("argv", "must not be empty");
    if (r.command && r.command->empty()) return field_error("command", "must not be empty");
    auto no_nul = [](const std::string& s) { return s.find('\0') == std::string::npos; };
    if (r.command && !no_nul(*r.command)) return field_error("command", "contains a NUL byte");
    for (const auto& a : r.argv) {
        if (!no_nul(a)) return field_error("argv", "contains a NUL byte");
    }
    for (const StringPairs* vars : {&r.env, &r.secret_env}) {
        const char* field = vars == &r.env ? "env" : "secret_env";
        for (const auto& [k, v] : *vars) {
            if (k.empty() || k.find('=') != std::string::npos || !no_nul(k)) {
                return field_error(field, "invalid variable name '" + k + "'");
            }
            if (!no_nul(v)) return field_error(std::string(field) + "." + k, "contains a NUL byte");
        }
    }
    return r;
}

Parsed<ReadRequest> parse_read_request(std::string& body) {
    ReadRequest r;
    auto on_field = [&](std::string_view key, od::value& v) -> Parsed<void> {
        auto common = common_field(r, key, v);
        if (!common) return common.error();
        if (*common) return {};
        if (key == "encoding") {
            auto e = parse_encoding(v);
            if (!e) return e.error();
            r.encoding = *e;
        }
        return {};
    };
    if (auto parsed = for_each_field(body, on_field); !parsed) return parsed.error();
    if (auto ok = require_agent(r.agent_id); !ok) return ok.error();
    return r;
}

Parsed<WriteRequest> parse_write_request(std::string& body) {
    WriteRequest r;
    std::optional<std::string> content;
    Encoding encoding = Encoding::Utf8;
    auto on_field = [&](std::string_view key, od::value& v) -> Parsed<void> {
        auto common = common_field(r, key, v);
        if (!common) return common.error();
        if (*common) return {};
        if (key == "content") {
            auto s = get_string(v, key);
            if (!s) return s.error();
            content = std::move(*s);
        } else if (key == "encoding") {
            auto e = parse_encoding(v);
            if (!e) return e.error();
            encoding = *e;
        } else if (key == "mode") {
            auto s = get_string(v, key);
            if (!s) return s.error();
            // Permission bits only: no setuid, setgid or sticky bit from a request.
            char* end = nullptr;
            const unsigned long mode = std::strtoul(s->c_str(), &end, 8);
            if (s->empty() || *end != '\0' || mode > 0777) {
                return field_error(key, "expected an octal mode such as \"0644\" (at most 0777)");
            }
            r.mode = static_cast<unsigned>(mode);
        }
        return {};
    };
    if (auto parsed = for_each_field(body, on_field); !parsed) return parsed.error();
    if (auto ok = require_agent(r.agent_id); !ok) return ok.error();
    if (!content) return field_error("content", "missing");
    if (encoding == Encoding::Base64) {
        auto decoded = base64_decode(*content);
        if (!decoded) return field_error("content", "not valid base64");
        r.content = std::move(*decoded);
    } else {
        r.content = std::move(*content);
    }
    return r;
}

namespace {

template <class Req>
Parsed<Req> parse_path_request(std::string& body) {
    Req r;
    auto on_field = [&](std::string_view key, od::value& v) -> Parsed<void> {
        auto common = common_field(r, key, v);
        if (!common) return common.error();
        if (*common) return {};
        if (key == "recursive") {
            auto b = get_bool(v, key);
            if (!b) return b.error();
            r.recursive = *b;
        }
        return {};
    };
    if (auto parsed = for_each_field(body, on_field); !parsed) return parsed.error();
    if (auto ok = require_agent(r.agent_id); !ok) return ok.error();
    return r;
}

}  // namespace

Parsed<ListRequest> parse_list_request(std::string& body) {
    return parse_path_request<ListRequest>(body);
}
Parsed<DeleteRequest> parse_delete_request(std::string& body) {
    return parse_path_request<DeleteRequest>(body);
}

}  // namespace nestbox::server
