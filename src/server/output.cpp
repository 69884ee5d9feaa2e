#include "src/server/output.hpp"

#include "src/core/utf8.hpp"

namespace nestbox::server {

std::string OutputStream::cap(std::string redacted) {
    const std::uint64_t room = limit_ - kept_;
    if (redacted.size() > room) {
        truncated_ = true;
        redacted.resize(room);
    }
    kept_ += redacted.size();
    return redacted;
}

std::string OutputStream::feed(std::string_view raw) {
    std::string ready = cap(redactor_.feed(raw));
    if (!streaming_) return ready;
    if (partial_utf8_.empty()) {  // the common case: no copy
        const std::size_t complete = utf8_complete_prefix(ready);
        partial_utf8_.assign(ready, complete);
        ready.resize(complete);
        return ready;
    }
    partial_utf8_ += ready;
    const std::size_t complete = utf8_complete_prefix(partial_utf8_);
    std::string out = partial_utf8_.substr(0, complete);
    partial_utf8_.erase(0, complete);
    return out;
}

std::string OutputStream::finish() {
    std::string out = std::move(partial_utf8_);
    partial_utf8_.clear();
    out += cap(redactor_.finish());
    return out;
}

}  // namespace nestbox::server
