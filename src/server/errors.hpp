// API errors: an HTTP status, a stable snake_case code and a sentence for humans, rendered as
// {"error": {"code": "...", "message": "..."}}.
#pragma once

#include <ostream>  // boost/core/detail/string_view.hpp needs it before beast/http/status.hpp

#include <boost/beast/http/status.hpp>
#include <string>

namespace nestbox {
class JsonWriter;
}

namespace nestbox::server {

namespace http = boost::beast::http;

// Not an aggregate on purpose: GCC 12 destroys an aggregate-initialised temporary twice when it
// appears in a co_await expression (`co_await ex.fail({status, code, message})` crashed the server
// with a double free); a constructor sidesteps that miscompilation.
struct ApiError {
    http::status status = http::status::internal_server_error;
    std::string code;
    std::string message;

    ApiError() = default;
    ApiError(http::status s, std::string c, std::string m)
        : status(s), code(std::move(c)), message(std::move(m)) {}

    std::string body() const;
    void write_field(JsonWriter& w) const;  // "error": {"code": ..., "message": ...}

    static ApiError bad_request(std::string code, std::string message) {
        return {http::status::bad_request, std::move(code), std::move(message)};
    }
    static ApiError invalid_field(const std::string& field, const std::string& problem) {
        return {http::status::bad_request, "invalid_field", field + ": " + problem};
    }
    static ApiError forbidden(std::string message) {
        return {http::status::forbidden, "path_outside_workspace", std::move(message)};
    }
    static ApiError not_found(std::string code, std::string message) {
        return {http::status::not_found, std::move(code), std::move(message)};
    }
    static ApiError internal(std::string message) {
        return {http::status::internal_server_error, "internal", std::move(message)};
    }
};

}  // namespace nestbox::server
