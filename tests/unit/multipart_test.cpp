#include "src/server/multipart.hpp"

#include <gtest/gtest.h>

namespace nestbox::server {
namespace {

TEST(Multipart, FindsTheBoundary) {
    EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=abc123").value(), "abc123");
    EXPECT_EQ(multipart_boundary("Multipart/Form-Data; charset=x; boundary=\"a b\"").value(),
              "a b");
    EXPECT_FALSE(multipart_boundary("application/json"));
    EXPECT_FALSE(multipart_boundary("multipart/form-data"));
    EXPECT_FALSE(multipart_boundary("multipart/form-data; boundary=" + std::string(71, 'x')));
}

TEST(Multipart, SplitsPartsWithNamesFilenamesAndBinaryData) {
    // Built with explicit lengths: the content holds a NUL byte.
    const std::string body =
        std::string(
            "--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n"
            "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dir/a "
            "\\\"q\\\".bin\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n") +
        std::string("\x00\r\n--X\xff", 7) + "\r\n--XyZ--\r\n";
    auto parts = parse_multipart(std::string_view(body.data(), body.size()), "XyZ");
    ASSERT_TRUE(parts);
    ASSERT_EQ(parts->size(), 2u);
    EXPECT_EQ((*parts)[0].name, "note");
    EXPECT_FALSE((*parts)[0].filename);
    EXPECT_EQ((*parts)[0].data, "hello");
    EXPECT_EQ((*parts)[1].filename.value(), "dir/a \"q\".bin");
    EXPECT_EQ((*parts)[1].data, std::string_view("\x00\r\n--X\xff", 7));
}

TEST(Multipart, RejectsMalformedBodies) {
    for (const char* body :
         {"", "no boundary here", "--XyZ\r\nno headers end",
          "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nunterminated",
          "--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--",
          "--XyZ\r\nContent-Disposition: attachment; name=\"f\"\r\n\r\nx\r\n--XyZ--"}) {
        EXPECT_FALSE(parse_multipart(body, "XyZ")) << body;
    }
}

}  // namespace
}  // namespace nestbox::server
