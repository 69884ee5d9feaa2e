#include "src/server/listener.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "src/server/log.hpp"
#include "src/server/session.hpp"

namespace nestbox::server {

namespace {

using asio::use_awaitable;

template <class Protocol>
class SocketListener final : public Listener {
  public:
    explicit SocketListener(asio::io_context& ioc) : acceptor_(ioc) {}

    Result<void> open(const typename Protocol::endpoint& endpoint) {
        boost::system::error_code ec;
        std::string step = "socket";
        acceptor_.open(endpoint.protocol(), ec);
        if constexpr (std::is_same_v<Protocol, asio::ip::tcp>) {
            if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
        }
        if (!ec) {
            step = "bind";
            acceptor_.bind(endpoint, ec);
        }
        if (!ec) {
            step = "listen";
            acceptor_.listen(asio::socket_base::max_listen_connections, ec);
        }
        if (ec) return Error("listen", step, ec.value());
        return {};
    }

    asio::awaitable<void> accept_loop(App& app) override {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(
                asio::make_strand(acceptor_.get_executor()), asio::as_tuple(use_awaitable));
            if (ec) {
                if (!acceptor_.is_open() || ec == asio::error::operation_aborted) co_return;
                // Out of fds, say: back off instead of spinning on the error.
                asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(50));
                (void)co_await pause.async_wait(asio::as_tuple(use_awaitable));
                continue;
            }
            if constexpr (std::is_same_v<Protocol, asio::ip::tcp>) {
                boost::system::error_code ignored;
                socket.set_option(asio::ip::tcp::no_delay(true),
                                  ignored);  // small NDJSON events go out now
            }
            auto ex = socket.get_executor();
            asio::co_spawn(ex, serve_connection(app, std::move(socket)), asio::detached);
        }
    }

    void close() override {
        boost::system::error_code ignored;
        acceptor_.close(ignored);
    }

  private:
    typename Protocol::acceptor acceptor_;
};

}  // namespace

Result<std::unique_ptr<Listener>> Listener::bind(asio::io_context& ioc, const Listen& where) {
    if (where.unix_socket) {
        // A socket file left by a previous run would make bind fail; anything else is not ours.
        struct stat st {};
        if (::lstat(where.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
            ::unlink(where.path.c_str());
        auto l = std::make_unique<SocketListener<asio::local::stream_protocol>>(ioc);
        // Made 0660 from the start, not chmod-ed after: between bind and chmod, under a umask
        // of 0 (usual in containers), anyone could connect. Start-up is single-threaded, so
        // the process-wide umask is safe to change here.
        const mode_t old_umask = ::umask(0117);
        auto opened = l->open(asio::local::stream_protocol::endpoint(where.path));
        ::umask(old_umask);
        if (!opened) return Error("listen", where.path + ": " + opened.error().message());
        return std::unique_ptr<Listener>(std::move(l));
    }
    boost::system::error_code ec;
    const auto address =
        asio::ip::make_address(where.host == "localhost" ? "127.0.0.1" : where.host, ec);
    if (ec) return Error("listen", "'" + where.host + "' is not an IP address", EINVAL);
    auto l = std::make_unique<SocketListener<asio::ip::tcp>>(ioc);
    if (auto r = l->open(asio::ip::tcp::endpoint(address, where.port)); !r) {
        return Error("listen", where.to_string() + ": " + r.error().what(), r.error().code());
    }
    return std::unique_ptr<Listener>(std::move(l));
}

}  // namespace nestbox::server
