#include "src/server/session.hpp"

#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <chrono>

#include "src/server/log.hpp"

namespace nestbox::server {

namespace {

using asio::use_awaitable;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

constexpr std::size_t kHeaderLimit = 16 << 10;
constexpr auto kWriteTimeout = 60s;  // a client that stops reading is dropped
constexpr auto kLinger = 2s;
constexpr std::size_t kMaxLingerBytes = 256 << 20;
constexpr unsigned kClientClosedRequest = 499;

template <class Protocol>
class StreamResponder final : public Responder {
  public:
    using Stream = beast::basic_stream<Protocol>;
    explicit StreamResponder(Stream& stream) : stream_(stream) {}

    asio::awaitable<bool> send(Response res) override {
        if (!ok_) co_return false;
        res.prepare_payload();
        stream_.expires_after(kWriteTimeout);
        auto [ec, n] = co_await http::async_write(stream_, res, asio::as_tuple(use_awaitable));
        co_return ok_ = !ec;
    }
    asio::awaitable<bool> start_chunked(http::response<http::empty_body> header) override {
        header.chunked(true);
        http::response_serializer<http::empty_body> sr{header};
        stream_.expires_after(kWriteTimeout);
        auto [ec, n] =
            co_await http::async_write_header(stream_, sr, asio::as_tuple(use_awaitable));
        co_return ok_ = !ec;
    }
    asio::awaitable<bool> chunk(std::string_view data) override {
        if (!ok_) co_return false;
        stream_.expires_after(kWriteTimeout);
        auto [ec, n] = co_await asio::async_write(stream_, http::make_chunk(asio::buffer(data)),
                                                  asio::as_tuple(use_awaitable));
        co_return ok_ = !ec;
    }
    asio::awaitable<bool> finish_chunked() override {
        if (!ok_) co_return false;
        stream_.expires_after(kWriteTimeout);
        auto [ec, n] = co_await asio::async_write(stream_, http::make_chunk_last(),
                                                  asio::as_tuple(use_awaitable));
        co_return ok_ = !ec;
    }
    asio::awaitable<bool> until_disconnected() override {
        auto& socket = stream_.socket();
        for (;;) {
            auto [ec] = co_await socket.async_wait(Protocol::socket::wait_read,
                                                   asio::as_tuple(use_awaitable));
            if (ec == asio::error::operation_aborted) co_return false;
            char byte = 0;
            const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
            if (ec || n == 0 || (n < 0 && errno != EAGAIN)) {
                ok_ = false;
                co_return true;  // closed or reset: the client is gone
            }
            if (n > 0) break;  // a pipelined request: the client is still there
        }
        // Nothing more to learn from the socket until the response is done: wait to be cancelled.
        asio::steady_timer forever(socket.get_executor(), asio::steady_timer::time_point::max());
        (void)co_await forever.async_wait(asio::as_tuple(use_awaitable));
        co_return false;
    }
    bool ok() const { return ok_; }

  private:
    Stream& stream_;
    bool ok_ = true;
};

template <class Protocol>
asio::awaitable<void> reply_and_close(beast::basic_stream<Protocol>& stream, const ApiError& e) {
    Response res{e.status, 11};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(false);
    res.body() = e.body();
    res.prepare_payload();
    stream.expires_after(5s);
    (void)co_await http::async_write(stream, res, asio::as_tuple(use_awaitable));
    // A client still sending (an oversized body, say) would get a reset instead of our answer if
    // we closed with its data unread: stop sending, then drain for a moment (bounded) first.
    beast::error_code ignored;
    stream.socket().shutdown(Protocol::socket::shutdown_send, ignored);
    std::vector<char> sink(64 << 10);
    stream.expires_after(kLinger);
    for (std::size_t drained = 0; drained < kMaxLingerBytes;) {
        auto [ec, n] =
            co_await stream.async_read_some(asio::buffer(sink), asio::as_tuple(use_awaitable));
        if (ec) break;
        drained += n;
    }
}

// Reads with a deadline that, unlike basic_stream's expiry, cancels the read without closing the
// socket, so a slow client can still be told 408. Both branches finish before this returns.
template <class Protocol, class Read>
asio::awaitable<std::pair<beast::error_code, bool>> read_within(
    beast::basic_stream<Protocol>& stream, std::chrono::seconds limit, Read read) {
    asio::steady_timer timer(stream.get_executor());
    bool timed_out = false;
    auto deadline = [&]() -> asio::awaitable<void> {
        timer.expires_after(limit);
        auto [ec] = co_await timer.async_wait(asio::as_tuple(use_awaitable));
        if (ec) co_return;
        timed_out = true;
        beast::error_code ignored;
        stream.socket().cancel(ignored);
    };
    auto attempt = [&]() -> asio::awaitable<beast::error_code> {
        auto [ec, n] = co_await read();
        timer.cancel();
        co_return ec;
    };
    auto result = co_await (attempt() || deadline());
    beast::error_code ec = result.index() == 0 ? std::get<0>(result)
                                               : beast::error_code(asio::error::operation_aborted);
    co_return std::pair(ec, timed_out);
}

ApiError too_large(std::uint64_t limit) {
    return {http::status::payload_too_large, "body_too_large",
            "the body is larger than " + std::to_string(limit) + " bytes"};
}

template <class Protocol>
asio::awaitable<void> serve(App& app, typename Protocol::socket socket) {
    beast::basic_stream<Protocol> stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.header_limit(kHeaderLimit);
        parser.body_limit(app.config.max_body_bytes);
        auto [ec, header_late] = co_await read_within(stream, app.config.header_timeout, [&] {
            return http::async_read_header(stream, buffer, parser, asio::as_tuple(use_awaitable));
        });
        if (header_late) {
            // An idle keep-alive connection just closes; a half-sent request hears why.
            if (parser.got_some() || buffer.size() > 0) {
                co_await reply_and_close(stream, {http::status::request_timeout, "request_timeout",
                                                  "the request headers took too long"});
            }
            break;
        }
        if (ec == http::error::end_of_stream || ec == asio::error::eof ||
            ec == asio::error::connection_reset)
            break;
        if (ec == http::error::body_limit) {  // a Content-Length past the limit, seen in the header
            co_await reply_and_close(stream, too_large(app.config.max_body_bytes));
            break;
        }
        if (ec) {
            const bool too_big = ec == http::error::header_limit;
            co_await reply_and_close(stream,
                                     {too_big ? http::status::request_header_fields_too_large
                                              : http::status::bad_request,
                                      too_big ? "headers_too_large" : "bad_request", ec.message()});
            break;
        }
        if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
            http::response<http::empty_body> go{http::status::continue_, parser.get().version()};
            stream.expires_after(kWriteTimeout);
            (void)co_await http::async_write(stream, go, asio::as_tuple(use_awaitable));
            stream.expires_never();
        }
        auto [ec2, body_late] = co_await read_within(stream, app.config.body_timeout, [&] {
            return http::async_read(stream, buffer, parser, asio::as_tuple(use_awaitable));
        });
        if (body_late) {
            co_await reply_and_close(stream, {http::status::request_timeout, "request_timeout",
                                              "the request body took too long"});
            break;
        }
        if (ec2 == http::error::body_limit) {
            co_await reply_and_close(stream, too_large(app.config.max_body_bytes));
            break;
        }
        if (ec2) break;

        Request req = parser.release();
        StreamResponder<Protocol> responder(stream);
        Exchange ex{req, responder};
        const auto start = std::chrono::steady_clock::now();
        co_await route(app, ex);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        // 499, as nginx logs it: the client closed the connection before its answer was sent.
        const unsigned status = responder.ok() ? ex.status : kClientClosedRequest;
        app.metrics.request(ex.route, std::string(http::to_string(req.method())), status);
        log_request({std::string(http::to_string(req.method())), std::string(req.target()), status,
                     ms, ex.agent});
        stream.expires_never();
        if (!responder.ok() || !req.keep_alive() || app.shutting_down.load()) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(Protocol::socket::shutdown_both, ignored);
}

}  // namespace

asio::awaitable<void> serve_connection(App& app, asio::ip::tcp::socket socket) {
    return serve<asio::ip::tcp>(app, std::move(socket));
}

asio::awaitable<void> serve_connection(App& app, asio::local::stream_protocol::socket socket) {
    return serve<asio::local::stream_protocol>(app, std::move(socket));
}

}  // namespace nestbox::server
