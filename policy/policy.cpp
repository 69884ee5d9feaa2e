#include "policy/policy.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>

namespace nestbox::policy {

std::string_view to_string(MountType type) {
    switch (type) {
        case MountType::Bind:
            return "bind";
        case MountType::RoBind:
            return "ro-bind";
        case MountType::Tmpfs:
            return "tmpfs";
        case MountType::Dir:
            return "dir";
        case MountType::Symlink:
            return "symlink";
        case MountType::Proc:
            return "proc";
        case MountType::Dev:
            return "dev";
    }
    return "?";
}

namespace {

template <class T>
void override_with(std::optional<T>& field, const std::optional<T>& value) {
    if (value) field = value;
}

}  // namespace

void Policy::merge(const Policy& o) {
    override_with(default_root, o.default_root);
    mounts.insert(mounts.end(), o.mounts.begin(), o.mounts.end());
    override_with(workspace, o.workspace);
    override_with(chdir, o.chdir);
    override_with(share_net, o.share_net);
    override_with(hostname, o.hostname);
    override_with(uid, o.uid);
    override_with(gid, o.gid);
    override_with(limits.memory_bytes, o.limits.memory_bytes);
    override_with(limits.cpu_percent, o.limits.cpu_percent);
    override_with(limits.pids, o.limits.pids);
    override_with(limits.timeout, o.limits.timeout);
    override_with(limits.cgroup_parent, o.limits.cgroup_parent);
    override_with(limits.mode, o.limits.mode);
    override_with(seccomp, o.seccomp);
    override_with(landlock, o.landlock);
    override_with(inherit_env, o.inherit_env);
    // The plan applies every set before every unset, so an override must cancel what it
    // contradicts in the base: a later set undoes an earlier unset of the name, and vice versa.
    for (const auto& [name, value] : o.setenv)
        std::erase(unsetenv, name);
    for (const auto& name : o.unsetenv) {
        std::erase_if(setenv, [&name](const auto& kv) { return kv.first == name; });
    }
    setenv.insert(setenv.end(), o.setenv.begin(), o.setenv.end());
    unsetenv.insert(unsetenv.end(), o.unsetenv.begin(), o.unsetenv.end());
}

Result<std::uint64_t> parse_size(std::string_view text) {
    const std::string shown = "'" + std::string(text) + "'";
    std::uint64_t number = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, number);
    if (ec == std::errc::result_out_of_range) return Error("", shown + " is too large");
    if (ec != std::errc() || ptr == text.data()) {
        return Error("", shown + " is not a size (expected bytes or a number with K, M, G or T)");
    }
    std::string_view suffix(ptr, static_cast<std::size_t>(end - ptr));
    unsigned shift = 0;
    if (!suffix.empty()) {
        constexpr std::string_view kUnits = "KMGT";
        const auto unit = kUnits.find(static_cast<char>(std::toupper(suffix.front())));
        if (unit != std::string_view::npos) {
            shift = 10 * static_cast<unsigned>(unit + 1);
            suffix.remove_prefix(1);
        }
        const bool valid = suffix.empty() || suffix == "B" || (shift != 0 && suffix == "iB");
        if (!valid) return Error("", shown + " has an unknown unit (expected K, M, G or T)");
    }
    if (shift != 0 && number > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
        return Error("", shown + " is too large");
    }
    return number << shift;
}

Result<std::chrono::milliseconds> seconds_to_timeout(double seconds) {
    constexpr double kMaxSeconds = 24.0 * 3600.0;
    if (!std::isfinite(seconds) || seconds <= 0 || seconds > kMaxSeconds) {
        return Error("", "timeout out of range (more than 0, at most 86400 seconds)");
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000.0)));
}

Result<std::chrono::milliseconds> parse_seconds(std::string_view text) {
    double seconds = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, seconds);
    if (ec != std::errc() || ptr != end || ptr == text.data()) {
        return Error("", "'" + std::string(text) + "' is not a number of seconds");
    }
    return seconds_to_timeout(seconds);
}

}  // namespace nestbox::policy
