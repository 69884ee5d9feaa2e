// Bearer-token checks. The comparison takes the same time wherever the first difference is, so the
// response time tells an attacker nothing about how much of a guess was right.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nestbox::server {

bool constant_time_equal(std::string_view a, std::string_view b);

// True if `authorization` ("Bearer <token>") or `alt_token` (X-Nestbox-Token) carries `token`.
bool authorized(const std::optional<std::string>& token, std::string_view authorization,
                std::string_view alt_token);

}  // namespace nestbox::server
