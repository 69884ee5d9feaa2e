#include "src/server/errors.hpp"

#include "src/core/json_writer.hpp"

namespace nestbox::server {

std::string ApiError::body() const {
    JsonWriter w;
    w.begin_object().key("error").begin_object().field("code", code).field("message", message);
    w.end_object().end_object();
    return w.take();
}

}  // namespace nestbox::server
