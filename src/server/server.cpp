#include "src/server/server.hpp"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "src/server/app.hpp"
#include "src/server/child.hpp"
#include "src/server/listener.hpp"
#include "src/server/log.hpp"

namespace nestbox::server {

namespace {

using asio::use_awaitable;
using namespace std::chrono_literals;

asio::awaitable<void> wait_until_idle(App& app, std::chrono::steady_clock::duration limit) {
    asio::steady_timer tick(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (app.executor.running() > 0 && std::chrono::steady_clock::now() < deadline) {
        tick.expires_after(50ms);
        (void)co_await tick.async_wait(asio::as_tuple(use_awaitable));
    }
}

asio::awaitable<void> shutdown_on_signal(App& app, Listener& listener, asio::io_context& ioc,
                                         asio::signal_set& signals) {
    auto [ec, sig] = co_await signals.async_wait(asio::as_tuple(use_awaitable));
    log_event(spdlog::level::info, "shutdown",
              "signal " + std::to_string(sig) + ": no new requests; " +
                  std::to_string(app.executor.running()) + " sandbox(es) running");
    app.shutting_down = true;
    listener.close();
    co_await wait_until_idle(app, app.config.shutdown_grace);
    if (app.executor.running() > 0) {
        log_event(spdlog::level::warn, "shutdown",
                  "grace period over: ending the remaining sandboxes");
        app.executor.terminate_all();
        co_await wait_until_idle(app, 5s);
    }
    ioc.stop();
}

asio::awaitable<void> reap_orphans(asio::signal_set& sigchld) {
    for (;;) {
        auto [ec, sig] = co_await sigchld.async_wait(asio::as_tuple(use_awaitable));
        if (ec) co_return;
        Reaper::instance().reap_all();
    }
}

}  // namespace

int run_server(Config config) {
    // Writes to a closed pipe or socket must fail with EPIPE, not kill the server.
    ::signal(SIGPIPE, SIG_IGN);
    auto registry = AgentRegistry::open(config.workspace_root, config.state_dir);
    if (!registry) {
        log_event(spdlog::level::critical, "startup_failed", registry.error().message());
        return 1;
    }
    // Before any thread or sandbox exists: the server may have to move itself into a leaf group.
    std::vector<std::string> warnings;
    ServerCgroups cgroups = ServerCgroups::setup(CgroupLayout::detect(), warnings);
    if (const std::size_t stale = cgroups.remove_stale(); stale > 0) {
        log_event(spdlog::level::info, "cgroup",
                  "removed " + std::to_string(stale) + " sandbox group(s) left by a crash");
    }
    App app(std::move(config), std::move(*registry), std::move(cgroups));
    app.health = std::make_unique<Health>(app.config, app.cgroups, std::move(warnings));

    asio::io_context ioc(static_cast<int>(app.config.threads));
    auto listener = Listener::bind(ioc, app.config.listen);
    if (!listener) {
        log_event(spdlog::level::critical, "startup_failed", listener.error().message());
        return 1;
    }
    // The signal sets are made here, on one thread, before any runs the io_context. Made by two
    // coroutines starting on two threads at once, Asio (1.81) could build its signal service
    // twice: the spare one, destroyed, removed the signal pipe from the reactor, and from then
    // on every signal was lost. As PID 1 that meant SIGTERM did nothing (a container's init
    // has no default action) and orphans were never reaped; about one start in twenty.
    // SIGHUP too: a terminal that closes stops the server gracefully, not abruptly mid-request.
    asio::signal_set stop_signals(ioc, SIGTERM, SIGINT, SIGHUP);
    std::optional<asio::signal_set> sigchld;
    if (::getpid() == 1) sigchld.emplace(ioc, SIGCHLD);
    asio::co_spawn(ioc, (*listener)->accept_loop(app), asio::detached);
    asio::co_spawn(ioc, shutdown_on_signal(app, **listener, ioc, stop_signals), asio::detached);
    if (sigchld) asio::co_spawn(ioc, reap_orphans(*sigchld), asio::detached);
    log_event(spdlog::level::info, "listening",
              app.config.listen.to_string() + " workspaces=" + app.config.workspace_root +
                  " agents=" + std::to_string(app.agents->size()) +
                  " cgroup=" + app.health->cgroup() +
                  (app.health->ready() ? "" : " (NOT READY: sandboxes cannot start)"));

    std::vector<std::thread> pool;
    for (unsigned i = 1; i < app.config.threads; ++i)
        pool.emplace_back([&ioc] { ioc.run(); });
    ioc.run();
    for (auto& t : pool)
        t.join();
    log_event(spdlog::level::info, "stopped", "bye");
    return 0;
}

}  // namespace nestbox::server
