#include "src/core/base64.hpp"

#include <array>
#include <cstdint>

namespace nestbox {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> make_reverse() {
    std::array<std::int8_t, 256> r{};
    for (auto& v : r)
        v = -1;
    for (int i = 0; i < 64; ++i)
        r[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
    return r;
}
constexpr auto kReverse = make_reverse();

}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]) << 16U |
                                                  static_cast<unsigned char>(bytes[i + 1]) << 8U |
                                                  static_cast<unsigned char>(bytes[i + 2]));
        out += kAlphabet[n >> 18U & 63U];
        out += kAlphabet[n >> 12U & 63U];
        out += kAlphabet[n >> 6U & 63U];
        out += kAlphabet[n & 63U];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]) << 16U);
        if (rest == 2)
            n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1]) << 8U);
        out += kAlphabet[n >> 18U & 63U];
        out += kAlphabet[n >> 12U & 63U];
        out += rest == 2 ? kAlphabet[n >> 6U & 63U] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        std::uint32_t n = 0;
        int pad = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const char c = text[i + k];
            if (c == '=' && last && k >= 2) {
                ++pad;
                n <<= 6U;
                continue;
            }
            const std::int8_t v = kReverse[static_cast<unsigned char>(c)];
            if (v < 0 || pad > 0) return std::nullopt;
            n = n << 6U | static_cast<std::uint32_t>(v);
        }
        out += static_cast<char>(n >> 16U & 0xFFU);
        if (pad < 2) out += static_cast<char>(n >> 8U & 0xFFU);
        if (pad < 1) out += static_cast<char>(n & 0xFFU);
    }
    return out;
}

}  // namespace nestbox
