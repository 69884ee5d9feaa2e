#include "src/core/error.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace nestbox {

Error Error::from_errno(std::string step, std::string what) {
    const int code = errno;
    return Error(std::move(step), std::move(what), code);
}

std::string Error::message() const {
    std::string out = step_;
    if (!what_.empty()) {
        if (!out.empty()) out += ": ";
        out += what_;
    }
    if (code_ != 0) {
        // strerrordesc_np, unlike strerror, never writes a shared buffer: the server formats
        // errors on several threads.
        const char* text = strerrordesc_np(code_);
        out += ": ";
        out += text != nullptr ? text : "errno " + std::to_string(code_);
    }
    return out;
}

void throw_exception_from_error(const Error& e, const boost::source_location& /*loc*/) {
    throw std::logic_error("unchecked nestbox::Result: " + e.message());
}

}  // namespace nestbox
