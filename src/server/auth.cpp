#include "src/server/auth.hpp"

#include <algorithm>

#include <boost/algorithm/string/predicate.hpp>

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
    // RFC 9110 11.1: the scheme is case-insensitive, and one or more spaces follow it.
    const std::size_t space = authorization.find(' ');
    if (space != std::string_view::npos &&
        boost::algorithm::iequals(authorization.substr(0, space), "Bearer")) {
        std::string_view credentials = authorization.substr(space);
        credentials.remove_prefix(std::min(credentials.find_first_not_of(' '), credentials.size()));
        if (!credentials.empty() && constant_time_equal(*token, credentials)) return true;
    }
    return !alt_token.empty() && constant_time_equal(*token, alt_token);
}

}  // namespace nestbox::server
