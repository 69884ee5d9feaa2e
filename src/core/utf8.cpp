#include "src/core/utf8.hpp"

#include <cstdint>

namespace nestbox {

namespace {

unsigned char byte_at(std::string_view s, std::size_t i) {
    return static_cast<unsigned char>(s[i]);
}

bool is_continuation(unsigned char c) {
    return (c & 0xC0U) == 0x80U;
}

// The number of bytes a sequence starting with `lead` claims, 0 for a byte that cannot lead.
std::size_t claimed_length(unsigned char lead) {
    if (lead < 0x80U) return 1;
    if (lead >= 0xC2U && lead <= 0xDFU) return 2;
    if (lead >= 0xE0U && lead <= 0xEFU) return 3;
    if (lead >= 0xF0U && lead <= 0xF4U) return 4;
    return 0;
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view s) {
    if (s.empty()) return 0;
    const unsigned char lead = byte_at(s, 0);
    const std::size_t len = claimed_length(lead);
    if (len <= 1 || s.size() < len) return len == 1 ? 1 : 0;
    for (std::size_t i = 1; i < len; ++i) {
        if (!is_continuation(byte_at(s, i))) return 0;
    }
    const unsigned char second = byte_at(s, 1);
    // Reject overlong 3- and 4-byte forms, UTF-16 surrogates and code points past U+10FFFF
    // (RFC 3629, table 3-7 of the Unicode standard).
    if (lead == 0xE0U && second < 0xA0U) return 0;
    if (lead == 0xEDU && second > 0x9FU) return 0;
    if (lead == 0xF0U && second < 0x90U) return 0;
    if (lead == 0xF4U && second > 0x8FU) return 0;
    return len;
}

std::size_t utf8_complete_prefix(std::string_view s) {
    // Only the last three bytes can hold the start of an unfinished sequence.
    const std::size_t n = s.size();
    const std::size_t lookback = n < 3 ? n : 3;
    for (std::size_t back = 1; back <= lookback; ++back) {
        const unsigned char c = byte_at(s, n - back);
        if (is_continuation(c)) continue;
        // A lead byte whose sequence needs more bytes than remain: hold it back. (The bytes after
        // it are all continuations, or the loop would have stopped at them.)
        const std::size_t claimed = claimed_length(c);
        if (claimed > back) return n - back;
        return n;
    }
    return n;
}

}  // namespace nestbox
