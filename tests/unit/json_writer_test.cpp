#include "src/core/json_writer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <random>

#include "src/core/utf8.hpp"

namespace nestbox {
namespace {

std::string quoted(std::string_view s) {
    std::string out;
    append_json_string(out, s);
    return out;
}

TEST(JsonString, EscapesControlCharactersQuotesAndBackslashes) {
    EXPECT_EQ(quoted("a\"b\\c\n\t\x01"), R"("a\"b\\c\n\t\u0001")");
}

TEST(JsonString, KeepsValidUtf8) {
    EXPECT_EQ(quoted("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"),
              "\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"");
}

TEST(JsonString, ReplacesEveryKindOfInvalidUtf8) {
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(quoted("a\xFF"
                     "b"),
              "\"a" + fffd + "b\"");                                      // never valid
    EXPECT_EQ(quoted("\x80"), "\"" + fffd + "\"");                        // stray continuation
    EXPECT_EQ(quoted("\xC0\xAF"), "\"" + fffd + fffd + "\"");             // overlong '/'
    EXPECT_EQ(quoted("\xED\xA0\x80"), "\"" + fffd + fffd + fffd + "\"");  // UTF-16 surrogate
    EXPECT_EQ(quoted("\xF4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"");  // > U+10FFFF
    EXPECT_EQ(quoted("\xE2\x82"), "\"" + fffd + fffd + "\"");                        // truncated
}

// The escaper copies plain text 8 bytes at a time and writes through a buffer: it must agree with
// the plain byte-by-byte rules on any input, across word and buffer boundaries.
std::string escaped_byte_by_byte(std::string_view s) {
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const std::size_t len = utf8_sequence_length(s.substr(i));
            out += len == 0 ? std::string_view("\xEF\xBF\xBD") : s.substr(i, len);
            i += len == 0 ? 1 : len;
            continue;
        }
        const std::map<char, std::string> named = {{'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"},
                                                   {'\r', "\\r"}, {'\t', "\\t"},  {'\b', "\\b"},
                                                   {'\f', "\\f"}};
        if (auto it = named.find(static_cast<char>(c)); it != named.end()) {
            out += it->second;
        } else if (c < 0x20) {
            std::array<char, 8> u{};
            std::snprintf(u.data(), u.size(), "\\u%04x", c);
            out += u.data();
        } else {
            out += static_cast<char>(c);
        }
        ++i;
    }
    return out + "\"";
}

TEST(JsonString, FastPathsAgreeWithTheByteByByteRules) {
    const std::string pool =
        "ab z~\"\\\n\r\t\b\f\x01\x1f\x7f\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF\xC0";
    std::mt19937 random(20261122);
    for (int round = 0; round < 400; ++round) {
        // Mostly one kind at a time, so long plain runs and long escape runs both occur.
        const std::size_t kinds = 1 + random() % pool.size();
        std::string s(random() % (round < 200 ? 64 : 40000), '\0');
        for (char& c : s)
            c = pool[random() % kinds];
        ASSERT_EQ(nestbox::quoted(s), escaped_byte_by_byte(s)) << "round " << round;
    }
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedSequence) {
    EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
    EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82"), 2u);  // euro sign cut after 2 bytes
    EXPECT_EQ(utf8_complete_prefix("ab\xE2"), 2u);
    EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82\xAC"), 5u);  // complete
    EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98"), 2u);
    EXPECT_EQ(utf8_complete_prefix("ab\x80\x80\x80"), 5u);  // junk: nothing to wait for
    EXPECT_EQ(utf8_complete_prefix(""), 0u);
}

TEST(JsonWriter, BuildsNestedDocuments) {
    JsonWriter w;
    w.begin_object().field("a", 1).key("b").begin_array().value("x").value(true).null().end_array();
    w.field("c", std::optional<int>{}).field("d", 2.5).end_object();
    EXPECT_EQ(w.str(), R"({"a":1,"b":["x",true,null],"c":null,"d":2.5})");
}

}  // namespace
}  // namespace nestbox
