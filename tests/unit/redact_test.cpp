#include "src/server/redact.hpp"

#include <gtest/gtest.h>

#include "src/server/output.hpp"

namespace nestbox::server {
namespace {

// Feeds `text` in every possible two-piece split: a secret must be caught wherever it is cut.
TEST(Redactor, CatchesASecretSplitAnywhere) {
    const std::string text = "before hunter22 middle hunter22after";
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
        Redactor r({"hunter22"});
        std::string out = r.feed(text.substr(0, cut));
        out += r.feed(text.substr(cut));
        out += r.finish();
        EXPECT_EQ(out, "before [REDACTED] middle [REDACTED]after") << "cut at " << cut;
    }
}

TEST(Redactor, PrefersTheLongestOverlappingSecret) {
    Redactor r({"abc", "abcdef"});
    EXPECT_EQ(r.redact("xabcdefx abcx"), "x[REDACTED]x [REDACTED]x");
}

TEST(Redactor, IgnoresEmptySecretsAndPassesTextThroughWithoutAny) {
    Redactor none({});
    EXPECT_EQ(none.feed("abc"), "abc");
    Redactor empty({""});
    EXPECT_EQ(empty.redact("abc"), "abc");
}

TEST(OutputStream, CapsAfterRedactingAndKeepsCounting) {
    OutputStream s({"secret"}, 10, false);
    std::string out = s.feed("12345secret67890");
    out += s.finish();
    EXPECT_EQ(out, "12345[REDA");
    EXPECT_TRUE(s.truncated());
}

TEST(OutputStream, StreamingHoldsBackACutCharacter) {
    OutputStream s({}, 100, true);
    EXPECT_EQ(s.feed("a\xE2\x82"), "a");
    EXPECT_EQ(s.feed("\xAC"
                     "b"),
              "\xE2\x82\xAC"
              "b");
    EXPECT_EQ(s.finish(), "");
}

}  // namespace
}  // namespace nestbox::server
