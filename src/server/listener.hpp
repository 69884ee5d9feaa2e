// The listening socket (TCP or unix) and its accept loop: every connection gets its own strand, so
// a session's coroutines never run concurrently with each other but sessions run in parallel.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>

#include "src/server/app.hpp"

namespace nestbox::server {

class Listener {
  public:
    // Binds now, so a taken port is a start-up error, not a silent failure later.
    static Result<std::unique_ptr<Listener>> bind(asio::io_context& ioc, const Listen& where);
    virtual ~Listener() = default;
    virtual asio::awaitable<void> accept_loop(App& app) = 0;
    virtual void close() = 0;
};

}  // namespace nestbox::server
