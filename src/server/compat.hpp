// The agent-sandbox runtime compatibility surface (GET /, POST /execute, /upload, /download/...,
// /list/..., /exists/...), served next to the native API on the same port.
#pragma once

#include "src/server/app.hpp"

namespace nestbox::server {

// True if the request belonged to the compatibility surface and has been answered.
asio::awaitable<bool> route_compat(App& app, Exchange& ex);

}  // namespace nestbox::server
