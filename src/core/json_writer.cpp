#include "src/core/json_writer.hpp"

#include <charconv>
#include <cmath>

#include "src/core/utf8.hpp"

namespace nestbox {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool needs_escape(unsigned char c) {
    return c < 0x20U || c == '"' || c == '\\' || c >= 0x80U;
}

void append_escaped_control(std::string& out, unsigned char c) {
    switch (c) {
        case '"':
            out += "\\\"";
            return;
        case '\\':
            out += "\\\\";
            return;
        case '\n':
            out += "\\n";
            return;
        case '\r':
            out += "\\r";
            return;
        case '\t':
            out += "\\t";
            return;
        case '\b':
            out += "\\b";
            return;
        case '\f':
            out += "\\f";
            return;
        default: {
            constexpr char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out += kHex[c >> 4U];
            out += kHex[c & 0xFU];
        }
    }
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    out.reserve(out.size() + s.size() + 2);
    out += '"';
    std::size_t i = 0;
    while (i < s.size()) {
        // Copy the longest run of plain ASCII in one append: command output is mostly that.
        std::size_t run = i;
        while (run < s.size() && !needs_escape(static_cast<unsigned char>(s[run])))
            ++run;
        out.append(s.data() + i, run - i);
        i = run;
        if (i == s.size()) break;
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80U) {
            append_escaped_control(out, c);
            ++i;
            continue;
        }
        const std::size_t len = utf8_sequence_length(s.substr(i));
        if (len == 0) {
            out += kReplacement;
            ++i;
        } else {
            out.append(s.data() + i, len);
            i += len;
        }
    }
    out += '"';
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
