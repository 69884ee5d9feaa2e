// The agent-sandbox Python runtime's contract, byte for byte where its clients look: bodies are
// compact JSON with the runtime's key order, errors are {"message": ...}, and a command that fails
// is still a 200 (its clients retry POSTs on 5xx, which would run the command twice). Every command
// runs in the agent's sandbox; the agent is X-Agent-Id, else --default-agent.
#include "src/server/compat.hpp"

#include <simdjson.h>
#include <boost/url.hpp>

#include "src/core/json_writer.hpp"
#include "src/server/auth.hpp"
#include "src/server/multipart.hpp"
#include "src/server/stream.hpp"

namespace nestbox::server {

namespace {

std::string message(std::string_view text) {
    JsonWriter w;
    w.begin_object().field("message", text).end_object();
    return w.take();
}

asio::awaitable<bool> respond_message(Exchange& ex, http::status status, std::string_view text) {
    co_return co_await ex.respond(status, message(text));
}

// The path after `prefix` in the raw target, percent-decoded ("%2F" is "/", "%2E" is "."), or
// nullopt if the target is not under `prefix` or is malformed.
std::optional<std::string> decoded_tail(const boost::urls::url_view& url, std::string_view prefix) {
    const std::string_view encoded = url.encoded_path();
    if (!encoded.starts_with(prefix)) return std::nullopt;
    auto tail = boost::urls::make_pct_string_view(encoded.substr(prefix.size()));
    if (!tail) return std::nullopt;
    return tail->decode();
}

// The runtime resolves the decoded path below its root after stripping one leading '/'; the
// empty path and "." are the root itself.
std::string workspace_relative(const std::string& decoded) {
    std::string rel = decoded.starts_with('/') ? decoded.substr(1) : decoded;
    return rel == "." ? "" : rel;
}

bool outside(const ApiError& e) {
    return e.status == http::status::forbidden;
}

// Marks GET / in the route table; answered before any agent is looked up.
asio::awaitable<void> health(App& /*app*/, Exchange& /*ex*/, const Agent& /*agent*/) {
    co_return;
}

asio::awaitable<void> execute(App& app, Exchange& ex, const Agent& agent) {
    std::string& body = ex.req.body();
    body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc;
    std::string_view command;
    if (parser.iterate(simdjson::padded_string_view(body.data(), body.size(), body.capacity()))
                .get(doc) != simdjson::SUCCESS ||
        doc["command"].get_string().get(command) != simdjson::SUCCESS) {
        // FastAPI's validation error, which the runtime's clients know.
        co_return (void) co_await ex.respond(
            http::status::unprocessable_entity,
            R"({"detail":[{"type":"missing","loc":["body","command"],"msg":"Field required"}]})");
    }
    ExecRequest req;
    req.agent_id = agent.id;
    req.command = std::string(command);
    CollectingSink sink;
    auto result = co_await app.executor.run(std::move(req), sink, ex.out, false);
    JsonWriter w;
    if (!result) {
        if (result.error().status == http::status::too_many_requests)
            co_return (void) co_await ex.fail(result.error());
        w.begin_object()
            .field("stdout", "")
            .field("stderr", "Failed to execute command: " + result.error().message);
        w.field("exit_code", 1).end_object();
        co_return (void) co_await ex.respond(http::status::ok, w.take());
    }
    std::string stderr_text = sink.stderr_text();
    if (result->timed_out) stderr_text += "\ncommand timed out and was killed";
    w.begin_object().field("stdout", sink.stdout_text()).field("stderr", stderr_text);
    w.field("exit_code", result->exit_code).end_object();
    co_await ex.respond(http::status::ok, w.take());
}

asio::awaitable<void> upload(App& app, Exchange& ex, const Agent& agent) {
    auto boundary = multipart_boundary(ex.req[http::field::content_type]);
    auto parts = boundary ? parse_multipart(ex.req.body(), *boundary) : std::nullopt;
    const FormPart* file = nullptr;
    if (parts) {
        for (const FormPart& p : *parts) {
            if (p.name == "file" && p.filename) file = &p;
        }
    }
    if (file == nullptr) {
        co_return (void) co_await ex.respond(
            http::status::unprocessable_entity,
            R"({"detail":[{"type":"missing","loc":["body","file"],"msg":"Field required"}]})");
    }
    auto written = app.workspaces.write(agent, *file->filename, std::string(file->data), 0644);
    if (!written) {
        if (outside(written.error()))
            co_return (void) co_await respond_message(ex, http::status::forbidden, "Access denied");
        co_return (void) co_await respond_message(ex, http::status::internal_server_error,
                                                  "File upload failed: " + written.error().message);
    }
    co_await respond_message(ex, http::status::ok,
                             "File '" + *file->filename + "' uploaded successfully.");
}

// Content-Disposition as Starlette writes it: a quoted ASCII name, or RFC 5987 for anything else.
std::string attachment(const std::string& name) {
    const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
        return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
    });
    if (plain) return "attachment; filename=\"" + name + "\"";
    return "attachment; filename*=utf-8''" +
           boost::urls::encode(name, boost::urls::unreserved_chars);
}

asio::awaitable<void> download(App& app, Exchange& ex, const Agent& agent,
                               const std::string& decoded) {
    auto data = app.workspaces.read_bytes(agent, workspace_relative(decoded));
    if (!data) {
        if (outside(data.error()))
            co_return (void) co_await respond_message(ex, http::status::forbidden, "Access denied");
        // Files are served from memory, so one past the size bound is refused, not "not found".
        if (data.error().status == http::status::payload_too_large) {
            co_return (void) co_await respond_message(ex, http::status::payload_too_large,
                                                      data.error().message);
        }
        co_return (void) co_await respond_message(ex, http::status::not_found, "File not found");
    }
    Response res{http::status::ok, ex.req.version()};
    res.set(http::field::content_type, "application/octet-stream");
    res.set(http::field::content_disposition, attachment(decoded));
    res.keep_alive(ex.req.keep_alive());
    res.body() = std::move(*data);
    ex.status = 200;
    co_await ex.out.send(std::move(res));
}

asio::awaitable<void> list(App& app, Exchange& ex, const Agent& agent, const std::string& decoded) {
    auto listing = app.workspaces.list(agent, workspace_relative(decoded), false);
    if (!listing) {
        if (outside(listing.error()))
            co_return (void) co_await respond_message(ex, http::status::forbidden, "Access denied");
        co_return (void) co_await respond_message(ex, http::status::not_found,
                                                  "Path is not a directory");
    }
    JsonWriter w;
    w.begin_array();
    for (const DirEntry& e : listing->entries) {
        w.begin_object().field("name", e.name).field("size", e.size);
        w.field("type", e.type == "directory" ? "directory" : "file")
            .field("mod_time", e.mtime)
            .end_object();
    }
    w.end_array();
    co_await ex.respond(http::status::ok, w.take());
}

asio::awaitable<void> exists(App& app, Exchange& ex, const Agent& agent,
                             const std::string& decoded) {
    auto found = app.workspaces.exists(agent, workspace_relative(decoded));
    if (!found) {
        if (outside(found.error()))
            co_return (void) co_await respond_message(ex, http::status::forbidden, "Access denied");
        found = false;
    }
    JsonWriter w;
    w.begin_object().field("path", decoded).field("exists", *found).end_object();
    co_await ex.respond(http::status::ok, w.take());
}

}  // namespace

asio::awaitable<bool> route_compat(App& app, Exchange& ex) {
    auto url = boost::urls::parse_origin_form(ex.req.target());
    if (!url) co_return false;
    const std::string_view path = url->encoded_path();
    const auto method = ex.req.method();
    using PathHandler =
        asio::awaitable<void> (*)(App&, Exchange&, const Agent&, const std::string&);
    struct Prefixed {
        std::string_view prefix;
        PathHandler handler;
    };
    static constexpr Prefixed kPrefixed[] = {
        {"/download/", download}, {"/list/", list}, {"/exists/", exists}};

    // Which route, and whether the method fits it, before anything else.
    asio::awaitable<void> (*plain)(App&, Exchange&, const Agent&) = nullptr;
    PathHandler prefixed = nullptr;
    std::optional<std::string> decoded;
    http::verb wanted = http::verb::get;
    if (path == "/") {
        plain = health;
    } else if (path == "/execute") {
        plain = execute;
        wanted = http::verb::post;
    } else if (path == "/upload") {
        plain = upload;
        wanted = http::verb::post;
    } else {
        for (const Prefixed& p : kPrefixed) {
            if (!path.starts_with(p.prefix)) continue;
            prefixed = p.handler;
            decoded = decoded_tail(*url, p.prefix);
            if (!decoded) {
                co_await respond_message(ex, http::status::bad_request, "Malformed path");
                co_return true;
            }
        }
        if (prefixed == nullptr) co_return false;
    }
    ex.route = path.size() > 1 && prefixed != nullptr
                   ? std::string(path.substr(0, path.find('/', 1) + 1)) + "*"
                   : std::string(path);
    if (method != wanted) {
        co_await respond_message(ex, http::status::method_not_allowed, "Method Not Allowed");
        co_return true;
    }
    if (plain == health) {  // no agent, no token: a readiness probe must not create workspaces
        co_await ex.respond(http::status::ok,
                            R"({"status":"ok","message":"Sandbox Runtime is active."})");
        co_return true;
    }
    // GET / is the runtime's readiness probe and answers without a token, like /healthz. The
    // agent-sandbox router strips Authorization, so X-Nestbox-Token is accepted too.
    if (!authorized(app.config.token, ex.req[http::field::authorization],
                    ex.req["X-Nestbox-Token"])) {
        co_await respond_message(ex, http::status::unauthorized, "A valid token is required");
        co_return true;
    }
    if (app.shutting_down.load()) {
        co_await respond_message(ex, http::status::service_unavailable,
                                 "The server is shutting down");
        co_return true;
    }
    const std::string agent_id =
        ex.req["X-Agent-Id"].empty() ? app.config.default_agent : std::string(ex.req["X-Agent-Id"]);
    if (!valid_agent_id(agent_id)) {
        co_await respond_message(
            ex, http::status::bad_request,
            "X-Agent-Id must be 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
        co_return true;
    }
    ex.agent = agent_id;
    auto agent = app.agents->get_or_create(agent_id);
    if (!agent) {
        co_await respond_message(ex, http::status::internal_server_error, agent.error().message());
        co_return true;
    }
    if (plain != nullptr) {
        co_await plain(app, ex, *agent);
    } else {
        co_await prefixed(app, ex, *agent, *decoded);
    }
    co_return true;
}

}  // namespace nestbox::server
