#include "src/server/redact.hpp"

#include <algorithm>

namespace nestbox::server {

Redactor::Redactor(std::vector<std::string> secrets) : secrets_(std::move(secrets)) {
    std::erase_if(secrets_, [](const std::string& s) { return s.empty(); });
    std::sort(secrets_.begin(), secrets_.end(),
              [](const auto& a, const auto& b) { return a.size() > b.size(); });
    secrets_.erase(std::unique(secrets_.begin(), secrets_.end()), secrets_.end());
    for (const auto& s : secrets_)
        longest_ = std::max(longest_, s.size());
}

// Emits pending_ with secrets replaced, except its last `keep` bytes, which might be the start of
// a secret the next chunk completes. A match that starts before the kept tail is always complete
// (find only reports whole matches), so it is replaced now.
std::string Redactor::release(std::size_t keep) {
    const std::size_t limit = pending_.size() > keep ? pending_.size() - keep : 0;
    std::string out;
    std::size_t i = 0;
    while (i < limit) {
        std::size_t best = std::string::npos;
        std::size_t best_len = 0;
        for (const auto& s : secrets_) {
            const std::size_t at = pending_.find(s, i);
            if (at < best) {
                best = at;
                best_len = s.size();
            }
        }
        if (best == std::string::npos || best >= limit) {
            out.append(pending_, i, limit - i);
            i = limit;
            break;
        }
        out.append(pending_, i, best - i);
        out += kRedacted;
        i = best + best_len;
    }
    pending_.erase(0, i);
    return out;
}

std::string Redactor::feed(std::string_view chunk) {
    if (secrets_.empty()) return std::string(chunk);
    pending_.append(chunk);
    return release(longest_ - 1);
}

std::string Redactor::finish() {
    return secrets_.empty() ? std::string() : release(0);
}

std::string Redactor::redact(std::string_view text) const {
    Redactor copy(secrets_);
    std::string out = copy.feed(text);
    out += copy.finish();
    return out;
}

}  // namespace nestbox::server
