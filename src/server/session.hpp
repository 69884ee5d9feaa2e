// One connection: requests read one at a time with a fresh parser each (body limit, header and
// body deadlines, so a slow client cannot hold a connection open), each answered by the router,
// keep-alive until either side closes.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "src/server/app.hpp"

namespace nestbox::server {

asio::awaitable<void> serve_connection(App& app, asio::ip::tcp::socket socket);
asio::awaitable<void> serve_connection(App& app, asio::local::stream_protocol::socket socket);

}  // namespace nestbox::server
