// Base64 (RFC 4648, standard alphabet, padded) for binary file contents in JSON.
//
// Written here because the libraries we link keep their base64 in private namespaces
// (boost::beast::detail, simdjson only from 3.11); it is a dozen lines with a test.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nestbox {

std::string base64_encode(std::string_view bytes);
// nullopt for anything that is not canonical padded base64 (whitespace is not skipped).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace nestbox
