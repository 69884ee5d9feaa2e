// nestboxd's lifetime: start-up (registry, self-test, listener), serving on a small thread pool,
// and shutdown: SIGTERM stops accepting, lets running sandboxes finish within the grace period,
// then ends them. As PID 1 (a container's init) it also reaps orphans.
#pragma once

#include "src/server/config.hpp"

namespace nestbox::server {

int run_server(Config config);

}  // namespace nestbox::server
