#include "src/core/json_writer.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "src/core/utf8.hpp"

namespace nestbox {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// How each ASCII byte is written in a JSON string: itself, a two-character escape (\n, \") or
// \u00XX; padded to 8 bytes, so one fixed-size copy writes any of them. `len` 0 marks a byte from
// 0x80, which starts a UTF-8 sequence to check.
struct EscapedByte {
    std::array<char, 7> text;
    std::uint8_t len;
};
static_assert(sizeof(EscapedByte) == 8);

constexpr std::array<EscapedByte, 256> kEscaped = [] {
    std::array<EscapedByte, 256> table{};
    constexpr std::string_view kHex = "0123456789abcdef";
    for (std::size_t c = 0; c < 0x80; ++c) {
        auto& e = table[c];
        const char short_form = c == '"'    ? '"'
                                : c == '\\' ? '\\'
                                : c == '\n' ? 'n'
                                : c == '\r' ? 'r'
                                : c == '\t' ? 't'
                                : c == '\b' ? 'b'
                                : c == '\f' ? 'f'
                                            : '\0';
        if (short_form != '\0') {
            e = {{'\\', short_form}, 2};
        } else if (c < 0x20) {
            e = {{'\\', 'u', '0', '0', kHex[c >> 4U], kHex[c & 0xFU]}, 6};
        } else {
            e = {{static_cast<char>(c)}, 1};
        }
    }
    return table;
}();

// Whether any of 8 bytes needs more than a copy: below 0x20, '"', '\\' or from 0x80.
bool any_special(std::uint64_t w) {
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
    constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
    auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
    return ((w | has_zero(w & ~kHigh & 0x6060606060606060ULL) | has_zero(w ^ (kOnes * '"')) |
             has_zero(w ^ (kOnes * '\\'))) &
            kHigh) != 0;
}

}  // namespace

// Hand-written rather than Boost.JSON's serializer, which refuses invalid UTF-8 where command
// output needs it replaced. It is the server's hot loop (every byte of streamed output goes
// through it), hence the buffer and the tables: one string append per escape made
// /exec-stream of `yes` run at a quarter of the speed.
void append_json_string(std::string& out, std::string_view s) {
    std::array<char, 8192> buf;  // not initialized: written before it is read
    std::size_t n = 0;
    out.reserve(out.size() + s.size() + 2);
    buf[n++] = '"';
    std::size_t i = 0;
    while (i < s.size()) {
        constexpr std::size_t kMostPerWord = 8 * sizeof(EscapedByte);  // 8 bytes, each written as 8
        if (n > buf.size() - kMostPerWord) {
            out.append(buf.data(), n);
            n = 0;
        }
        std::uint64_t word = 0;
        if (s.size() - i >= 8) {
            std::memcpy(&word, s.data() + i, 8);
            if (!any_special(word)) {  // the common case in text: 8 bytes copied at once
                std::memcpy(&buf[n], &word, 8);
                n += 8;
                i += 8;
                continue;
            }
        }
        for (const std::size_t stop = std::min(s.size(), i + 8); i < stop;) {
            const auto c = static_cast<unsigned char>(s[i]);
            const EscapedByte& e = kEscaped[c];
            if (e.len != 0) {
                std::memcpy(&buf[n], &e, 8);
                n += e.len;
                ++i;
                continue;
            }
            const std::size_t len = utf8_sequence_length(s.substr(i));
            const std::string_view take = len == 0 ? kReplacement : s.substr(i, len);
            take.copy(&buf[n], take.size());
            n += take.size();
            i += std::max<std::size_t>(len, 1);
        }
    }
    buf[n++] = '"';
    out.append(buf.data(), n);
}

void JsonWriter::before_value() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back()) out_ += ',';
        first_.back() = false;
    }
}

JsonWriter& JsonWriter::begin_object() {
    before_value();
    out_ += '{';
    first_.push_back(true);
    return *this;
}

JsonWriter& JsonWriter::end_object() {
    out_ += '}';
    first_.pop_back();
    return *this;
}

JsonWriter& JsonWriter::begin_array() {
    before_value();
    out_ += '[';
    first_.push_back(true);
    return *this;
}

JsonWriter& JsonWriter::end_array() {
    out_ += ']';
    first_.pop_back();
    return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
    before_value();
    append_json_string(out_, k);
    out_ += ':';
    after_key_ = true;
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
    before_value();
    append_json_string(out_, s);
    return *this;
}

JsonWriter& JsonWriter::value(bool b) {
    before_value();
    out_ += b ? "true" : "false";
    return *this;
}

JsonWriter& JsonWriter::value(std::int64_t n) {
    before_value();
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, n);
    out_.append(buf, res.ptr);
    return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t n) {
    before_value();
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, n);
    out_.append(buf, res.ptr);
    return *this;
}

JsonWriter& JsonWriter::value(double d) {
    if (!std::isfinite(d)) return null();  // JSON has no NaN or infinity
    before_value();
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof buf, d);
    out_.append(buf, res.ptr);
    return *this;
}

JsonWriter& JsonWriter::null() {
    before_value();
    out_ += "null";
    return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
    before_value();
    out_ += json;
    return *this;
}

}  // namespace nestbox
