#include "src/server/auth.hpp"

namespace nestbox::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
    // Walks the whole expected value whatever the guess's length; only the length itself leaks,
    // and tokens are long random strings.
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const char other = i < b.size() ? b[i] : '\0';
        diff = static_cast<unsigned char>(
            diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(other)));
    }
    return diff == 0;
}

bool authorized(const std::optional<std::string>& token, std::string_view authorization,
                std::string_view alt_token) {
    if (!token) return true;
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.size() > kBearer.size() &&
        authorization.substr(0, kBearer.size()) == kBearer) {
        if (constant_time_equal(*token, authorization.substr(kBearer.size()))) return true;
    }
    return !alt_token.empty() && constant_time_equal(*token, alt_token);
}

}  // namespace nestbox::server
