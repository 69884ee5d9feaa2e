#include "src/server/errors.hpp"

#include "src/core/json_writer.hpp"

namespace nestbox::server {

void ApiError::write_field(JsonWriter& w) const {
    w.key("error").begin_object().field("code", code).field("message", message).end_object();
}

std::string ApiError::body() const {
    JsonWriter w;
    w.begin_object();
    write_field(w);
    w.end_object();
    return w.take();
}

}  // namespace nestbox::server
