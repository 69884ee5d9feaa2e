// UTF-8 checks for text that leaves the sandbox: command output is arbitrary bytes, JSON is not.
#pragma once

#include <cstddef>
#include <string_view>

namespace nestbox {

// Length of the longest prefix of `s` that does not end inside a multi-byte sequence that the next
// chunk could still complete. A stream reader keeps the rest for the next chunk, so a character
// split across two reads is not replaced by two U+FFFD.
std::size_t utf8_complete_prefix(std::string_view s);

// Length of the valid UTF-8 sequence starting at s[0], or 0 if s[0] does not start one (a stray
// continuation byte, an overlong form, a surrogate, a truncated sequence, a value past U+10FFFF).
std::size_t utf8_sequence_length(std::string_view s);

}  // namespace nestbox
