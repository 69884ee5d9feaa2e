// The native API's routes and their handlers: parse (400 naming the field), act, answer.
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <string_view>

#include "src/core/base64.hpp"
#include "src/core/json_writer.hpp"
#include "src/server/app.hpp"
#include "src/server/auth.hpp"
#include "src/server/compat.hpp"
#include "src/server/stream.hpp"

namespace nestbox::server {

asio::awaitable<bool> Exchange::respond(http::status s, std::string body,
                                        std::string_view content_type, Header extra) {
    Response res{s, req.version()};
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-store");
    if (extra.field != http::field::unknown) res.set(extra.field, extra.value);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    status = static_cast<unsigned>(s);
    co_return co_await out.send(std::move(res));
}

asio::awaitable<bool> Exchange::fail(const ApiError& e, Header extra) {
    co_return co_await respond(e.status, e.body(), "application/json", extra);
}

namespace {

using Handler = asio::awaitable<void> (*)(App&, Exchange&);

struct Route {
    std::string_view path;
    http::verb method;
    Handler handler;
    bool public_route = false;  // /healthz answers without a token
};

asio::awaitable<void> healthz(App& app, Exchange& ex) {
    const bool down = app.shutting_down.load();
    const bool ok = app.health->ready() && !down;
    co_await ex.respond(ok ? http::status::ok : http::status::service_unavailable,
                        app.health->render(down));
}

asio::awaitable<void> metrics(App& app, Exchange& ex) {
    co_await ex.respond(http::status::ok, app.metrics.render(), "text/plain; version=0.0.4");
}

asio::awaitable<void> exec(App& app, Exchange& ex) {
    auto req = parse_exec_request(ex.req.body());
    if (!req) co_return (void) co_await ex.fail(req.error());
    ex.agent = req->agent_id;
    CollectingSink sink;
    auto result = co_await app.executor.run(std::move(*req), sink, ex.out, false);
    if (!result) co_return (void) co_await ex.fail(result.error());
    co_await ex.respond(http::status::ok, sink.response_body(*result));
}

asio::awaitable<void> exec_stream(App& app, Exchange& ex) {
    auto req = parse_exec_request(ex.req.body());
    if (!req) co_return (void) co_await ex.fail(req.error());
    ex.agent = req->agent_id;
    NdjsonSink sink(ex, req->agent_id, co_await asio::this_coro::executor);
    auto result = co_await app.executor.run(std::move(*req), sink, ex.out, true);
    if (!result) {
        // Most errors come before the command starts, while the status can still say so.
        if (sink.committed()) {
            co_await sink.fail(result.error());
        } else {
            (void)co_await ex.fail(result.error());
        }
    } else {
        co_await sink.finish(*result);
    }
}

// The workspace endpoints share their first steps: parse, check the path as text, then find (or
// make) the agent, so a refused request does not register one.
template <class Req>
asio::awaitable<std::optional<std::pair<Req, Agent>>> begin_workspace_request(
    App& app, Exchange& ex, Parsed<Req> (*parse)(std::string&), bool root_allowed = false) {
    auto req = parse(ex.req.body());
    if (req) {
        ex.agent = req->agent_id;
        if (auto p = Workspaces::check_path(req->path, root_allowed); !p) req = p.error();
    }
    if (!req) {
        co_await ex.fail(req.error());
        co_return std::nullopt;
    }
    auto agent = app.agents->get_or_create(req->agent_id);
    if (!agent) {
        co_await ex.fail(ApiError::internal(agent.error().message()));
        co_return std::nullopt;
    }
    co_return std::pair(std::move(*req), std::move(*agent));
}

asio::awaitable<void> workspace_read(App& app, Exchange& ex) {
    auto r = co_await begin_workspace_request(app, ex, parse_read_request);
    if (!r) co_return;
    auto content = app.workspaces.read(r->second, r->first.path, r->first.encoding);
    if (!content) co_return (void) co_await ex.fail(content.error());
    JsonWriter w;
    w.begin_object().field("content", content->data).field("size", content->size);
    w.field("encoding", content->encoding == Encoding::Utf8 ? "utf8" : "base64").end_object();
    co_await ex.respond(http::status::ok, w.take());
}

asio::awaitable<void> workspace_write(App& app, Exchange& ex) {
    auto r = co_await begin_workspace_request(app, ex, parse_write_request);
    if (!r) co_return;
    auto written = app.workspaces.write(r->second, r->first.path, r->first.content, r->first.mode);
    if (!written) co_return (void) co_await ex.fail(written.error());
    JsonWriter w;
    w.begin_object().field("bytes_written", *written).end_object();
    co_await ex.respond(http::status::ok, w.take());
}

asio::awaitable<void> workspace_list(App& app, Exchange& ex) {
    auto r = co_await begin_workspace_request(app, ex, parse_list_request, true);
    if (!r) co_return;
    auto listing = app.workspaces.list(r->second, r->first.path, r->first.recursive);
    if (!listing) co_return (void) co_await ex.fail(listing.error());
    JsonWriter w;
    w.begin_object().key("entries").begin_array();
    for (const DirEntry& e : listing->entries) {
        w.begin_object().field("name", e.name).field("path", e.path).field("type", e.type);
        w.field("size", e.size).field("mtime", e.mtime).end_object();
    }
    w.end_array().field("truncated", listing->truncated).end_object();
    co_await ex.respond(http::status::ok, w.take());
}

asio::awaitable<void> workspace_delete(App& app, Exchange& ex) {
    auto r = co_await begin_workspace_request(app, ex, parse_delete_request);
    if (!r) co_return;
    if (auto done = app.workspaces.remove(r->second, r->first.path, r->first.recursive); !done) {
        co_return (void) co_await ex.fail(done.error());
    }
    co_await ex.respond(http::status::ok, R"({"deleted":true})");
}

constexpr Route kRoutes[] = {
    {"/healthz", http::verb::get, healthz, true},
    {"/metrics", http::verb::get, metrics},
    {"/exec", http::verb::post, exec},
    {"/exec-stream", http::verb::post, exec_stream},
    {"/workspace/read", http::verb::post, workspace_read},
    {"/workspace/write", http::verb::post, workspace_write},
    {"/workspace/list", http::verb::post, workspace_list},
    {"/workspace/delete", http::verb::post, workspace_delete},
};

}  // namespace

asio::awaitable<void> route(App& app, Exchange& ex) {
    const std::string_view target = ex.req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    const Route* found = nullptr;
    std::string allowed;
    for (const Route& r : kRoutes) {
        if (r.path != path) continue;
        allowed +=
            std::string(allowed.empty() ? "" : ", ") + std::string(http::to_string(r.method));
        if (r.method == ex.req.method()) found = &r;
    }
    if (found == nullptr && allowed.empty()) {
        // Not a native route: perhaps the agent-sandbox compatibility surface.
        if (co_await route_compat(app, ex)) co_return;
        ex.route = "unknown";
        co_return (void) co_await ex.fail(
            ApiError::not_found("not_found", "no endpoint " + std::string(path)));
    }
    ex.route = std::string(path);
    if (found == nullptr) {
        const ApiError e(http::status::method_not_allowed, "method_not_allowed",
                         std::string(path) + " accepts " + allowed);
        co_return (void) co_await ex.fail(e, Header(http::field::allow, allowed));
    }
    if (!found->public_route) {
        if (!authorized(app.config.token, ex.req[http::field::authorization],
                        ex.req["X-Nestbox-Token"])) {
            const ApiError e(http::status::unauthorized, "unauthorized",
                             "a valid bearer token is required");
            co_return (void) co_await ex.fail(e, Header(http::field::www_authenticate, "Bearer"));
        }
        if (app.shutting_down.load()) {
            co_return (void) co_await ex.fail({http::status::service_unavailable, "shutting_down",
                                               "the server is shutting down"});
        }
    }
    co_await found->handler(app, ex);
}

}  // namespace nestbox::server
