// Everything a request handler may need, owned in one place for the server's lifetime.
#pragma once

#include <atomic>
#include <memory>

#include "src/server/agents.hpp"
#include "src/server/cgroups.hpp"
#include "src/server/config.hpp"
#include "src/server/exec.hpp"
#include "src/server/health.hpp"
#include "src/server/http.hpp"
#include "src/server/metrics.hpp"
#include "src/server/workspace.hpp"

namespace nestbox::server {

struct App {
    App(Config c, std::unique_ptr<AgentRegistry> registry, ServerCgroups groups)
        : config(std::move(c)),
          agents(std::move(registry)),
          cgroups(std::move(groups)),
          workspaces(config.shared_dirs, config.max_body_bytes),
          executor(config, *agents, workspaces, cgroups, metrics) {}

    Config config;
    std::unique_ptr<AgentRegistry> agents;
    ServerCgroups cgroups;
    Workspaces workspaces;
    Metrics metrics;
    Executor executor;
    std::unique_ptr<Health> health;
    std::atomic<bool> shutting_down{false};
};

// The router: matches the request to an endpoint, checks auth, runs the handler.
asio::awaitable<void> route(App& app, Exchange& ex);

}  // namespace nestbox::server
