// multipart/form-data (RFC 7578), just enough for /upload: the parts of a body already in memory.
//
// Written here because no library we can take from Debian parses it (Beast does not, and Boost.URL
// only handles the urlencoded form); it is a short, bounded scan over one buffer, with tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nestbox::server {

struct FormPart {
    std::string name;                     // from Content-Disposition
    std::optional<std::string> filename;  // from Content-Disposition, when present
    std::string_view data;                // a view into the body
};

// The boundary from a Content-Type such as `multipart/form-data; boundary=xyz`, or nullopt.
std::optional<std::string> multipart_boundary(std::string_view content_type);

// The parts of `body`, or nullopt if it is not well-formed multipart with that boundary.
std::optional<std::vector<FormPart>> parse_multipart(std::string_view body,
                                                     std::string_view boundary);

}  // namespace nestbox::server
