// One output stream of a command (stdout or stderr) on its way to the client: secrets redacted,
// then capped at max_output_bytes (the rest is read and dropped so the command never blocks on a
// full pipe), then, for streaming, held back at a cut UTF-8 character so a character split across
// reads is not turned into two replacement characters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/server/redact.hpp"

namespace nestbox::server {

class OutputStream {
  public:
    OutputStream(std::vector<std::string> secrets, std::uint64_t limit, bool streaming)
        : redactor_(std::move(secrets)), limit_(limit), streaming_(streaming) {}

    // What may be delivered now.
    std::string feed(std::string_view raw);
    // What is left at end of stream.
    std::string finish();

    bool truncated() const { return truncated_; }

  private:
    std::string cap(std::string redacted);

    Redactor redactor_;
    std::uint64_t limit_;
    std::uint64_t kept_ = 0;
    bool truncated_ = false;
    bool streaming_;
    std::string partial_utf8_;
};

}  // namespace nestbox::server
