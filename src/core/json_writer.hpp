// A minimal streaming JSON writer for events and responses.
//
// Written here rather than taken from Boost.JSON's serializer because every string we emit is
// untrusted command output or a path: it must be escaped *and* have invalid UTF-8 replaced by
// U+FFFD, which no Debian JSON library does, and the server's output path must not build a DOM
// per chunk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nestbox {

// Appends `s` as a quoted JSON string, escaping control characters and replacing invalid UTF-8.
void append_json_string(std::string& out, std::string_view s);

class JsonWriter {
  public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(std::string_view k);

    JsonWriter& value(std::string_view s);
    JsonWriter& value(const char* s) { return value(std::string_view(s)); }
    JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
    JsonWriter& value(bool b);
    JsonWriter& value(std::int64_t n);
    JsonWriter& value(std::uint64_t n);
    JsonWriter& value(int n) { return value(static_cast<std::int64_t>(n)); }
    JsonWriter& value(unsigned n) { return value(static_cast<std::uint64_t>(n)); }
    JsonWriter& value(double d);
    JsonWriter& null();
    template <class T>
    JsonWriter& value(const std::optional<T>& v) {
        return v ? value(*v) : null();
    }
    // `"k": v` in one call.
    template <class T>
    JsonWriter& field(std::string_view k, const T& v) {
        key(k);
        return value(v);
    }
    // Inserts already-serialized JSON as a value.
    JsonWriter& raw(std::string_view json);

    const std::string& str() const { return out_; }
    std::string take() { return std::move(out_); }

  private:
    void before_value();

    std::string out_;
    // One entry per open container: true until its first element is written.
    std::vector<bool> first_;
    bool after_key_ = false;
};

}  // namespace nestbox
