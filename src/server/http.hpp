// The HTTP vocabulary shared by the server's layers, and the Responder a handler answers through.
// Handlers see a Responder rather than a socket, so one handler serves TCP and unix-socket
// connections alike.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <string_view>

#include "src/server/errors.hpp"

namespace nestbox::server {

namespace asio = boost::asio;
namespace beast = boost::beast;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

class Responder {
  public:
    virtual ~Responder() = default;
    // Each returns false once the client is gone.
    virtual asio::awaitable<bool> send(Response res) = 0;
    virtual asio::awaitable<bool> start_chunked(http::response<http::empty_body> header) = 0;
    virtual asio::awaitable<bool> chunk(std::string_view data) = 0;
    virtual asio::awaitable<bool> finish_chunked() = 0;
    // True once the client has closed the connection; false only when cancelled. A pipelined next
    // request does not count as leaving.
    virtual asio::awaitable<bool> until_disconnected() = 0;
};

// One more header for a response (Allow on a 405, WWW-Authenticate on a 401). A constructor, not
// an aggregate: GCC 12 mishandles aggregate temporaries in co_await expressions.
struct Header {
    Header() = default;
    Header(http::field f, std::string_view v) : field(f), value(v) {}
    http::field field = http::field::unknown;
    std::string_view value;
};

// One request in flight: what the handler answers, and what the request log line says.
struct Exchange {
    Request& req;
    Responder& out;
    std::string route;    // the matched pattern, for metrics
    std::string agent;    // set by handlers that know it
    unsigned status = 0;  // set when the response (or its header) is sent

    asio::awaitable<bool> respond(http::status s, std::string body,
                                  std::string_view content_type = "application/json",
                                  Header extra = {});
    asio::awaitable<bool> fail(const ApiError& e, Header extra = {});
};

}  // namespace nestbox::server
