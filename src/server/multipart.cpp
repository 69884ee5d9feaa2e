#include "src/server/multipart.hpp"

#include <algorithm>
#include <cctype>

namespace nestbox::server {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// The value of `key` among `; key=value` parameters; quoted strings may escape with backslash.
std::optional<std::string> parameter(std::string_view header, std::string_view key) {
    std::size_t pos = header.find(';');
    while (pos != std::string_view::npos) {
        std::string_view rest = trim(header.substr(pos + 1));
        const std::size_t eq = rest.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        const std::string_view k = trim(rest.substr(0, eq));
        rest = trim(rest.substr(eq + 1));
        std::string value;
        std::size_t consumed = 0;
        if (!rest.empty() && rest.front() == '"') {
            std::size_t i = 1;
            for (; i < rest.size() && rest[i] != '"'; ++i) {
                if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
                value += rest[i];
            }
            if (i >= rest.size()) return std::nullopt;  // unterminated quote
            consumed = i + 1;
        } else {
            consumed = std::min(rest.find(';'), rest.size());
            value = std::string(trim(rest.substr(0, consumed)));
        }
        if (iequals(k, key)) return value;
        const std::size_t next = rest.find(';', consumed);
        pos = next == std::string_view::npos
                  ? next
                  : static_cast<std::size_t>(rest.data() + next - header.data());
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type) {
    const std::string_view type = trim(content_type.substr(0, content_type.find(';')));
    if (!iequals(type, "multipart/form-data")) return std::nullopt;
    auto boundary = parameter(content_type, "boundary");
    // RFC 2046: 1 to 70 characters.
    if (!boundary || boundary->empty() || boundary->size() > 70) return std::nullopt;
    return boundary;
}

std::optional<std::vector<FormPart>> parse_multipart(std::string_view body,
                                                     std::string_view boundary) {
    const std::string delimiter = "--" + std::string(boundary);
    std::size_t pos = body.find(delimiter);
    if (pos == std::string_view::npos) return std::nullopt;
    std::vector<FormPart> parts;
    for (;;) {
        pos += delimiter.size();
        if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
        if (body.substr(pos, 2) != "\r\n") return std::nullopt;
        pos += 2;
        const std::size_t headers_end = body.find("\r\n\r\n", pos);
        if (headers_end == std::string_view::npos) return std::nullopt;
        FormPart part;
        bool disposition = false;
        std::string_view headers = body.substr(pos, headers_end - pos);
        while (!headers.empty()) {
            const std::size_t eol = std::min(headers.find("\r\n"), headers.size());
            const std::string_view line = headers.substr(0, eol);
            headers.remove_prefix(std::min(eol + 2, headers.size()));
            const std::size_t colon = line.find(':');
            if (colon == std::string_view::npos ||
                !iequals(trim(line.substr(0, colon)), "Content-Disposition"))
                continue;
            const std::string_view value = line.substr(colon + 1);
            if (!iequals(trim(value.substr(0, value.find(';'))), "form-data")) return std::nullopt;
            auto name = parameter(value, "name");
            if (!name) return std::nullopt;
            part.name = *name;
            part.filename = parameter(value, "filename");
            disposition = true;
        }
        if (!disposition) return std::nullopt;
        const std::size_t data_start = headers_end + 4;
        const std::size_t next = body.find("\r\n" + delimiter, data_start);
        if (next == std::string_view::npos) return std::nullopt;
        part.data = body.substr(data_start, next - data_start);
        parts.push_back(std::move(part));
        pos = next + 2;
    }
}

}  // namespace nestbox::server
