// Replaces secret values in command output with [REDACTED], also when a secret arrives split
// across two reads: the last (longest secret - 1) bytes are held back until the next chunk shows
// whether they start a secret.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nestbox::server {

inline constexpr std::string_view kRedacted = "[REDACTED]";

class Redactor {
  public:
    explicit Redactor(std::vector<std::string> secrets);

    // Returns what can be released now.
    std::string feed(std::string_view chunk);
    // Releases the held-back tail at end of stream.
    std::string finish();
    // One-shot redaction of a whole string (for logs).
    std::string redact(std::string_view text) const;

  private:
    std::string release(std::size_t keep);

    std::vector<std::string> secrets_;  // longest first, so the longest match wins
    std::size_t longest_ = 0;
    std::string pending_;
};

}  // namespace nestbox::server
