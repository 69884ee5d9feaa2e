// The JSON form of a Policy (nestbox-policy(5)), read with Boost.JSON and written with the
// project's JsonWriter.
#include <boost/json.hpp>
#include <cerrno>
#include <limits>

#include "policy/policy.hpp"
#include "src/core/json_writer.hpp"

namespace nestbox::policy {

namespace json = boost::json;

namespace {

Error field_error(std::string_view field, const std::string& problem) {
    return Error("policy", std::string(field) + ": " + problem);
}

// Walks one JSON object, remembering which keys were read, so unknown keys can be rejected.
class ObjectReader {
  public:
    ObjectReader(const json::object& obj, std::string prefix)
        : obj_(obj), prefix_(std::move(prefix)) {}

    std::string path(std::string_view key) const { return prefix_ + std::string(key); }

    const json::value* find(std::string_view key) {
        seen_.emplace_back(key);
        return obj_.if_contains(key);
    }

    Result<void> optional_bool(std::string_view key, std::optional<bool>& out) {
        const json::value* v = find(key);
        if (v == nullptr) return {};
        if (!v->is_bool()) return field_error(path(key), "expected true or false");
        out = v->get_bool();
        return {};
    }

    Result<void> optional_string(std::string_view key, std::optional<std::string>& out) {
        const json::value* v = find(key);
        if (v == nullptr) return {};
        if (!v->is_string()) return field_error(path(key), "expected a string");
        out = std::string(v->get_string());
        return {};
    }

    Result<void> optional_u32(std::string_view key, std::optional<std::uint32_t>& out) {
        const json::value* v = find(key);
        if (v == nullptr) return {};
        std::int64_t n = 0;
        if (v->is_int64()) {
            n = v->get_int64();
        } else if (v->is_uint64() && v->get_uint64() <= std::numeric_limits<std::uint32_t>::max()) {
            n = static_cast<std::int64_t>(v->get_uint64());
        } else {
            return field_error(path(key), "expected a whole number");
        }
        if (n < 0 || n > std::numeric_limits<std::uint32_t>::max()) {
            return field_error(path(key), "out of range");
        }
        out = static_cast<std::uint32_t>(n);
        return {};
    }

    // A size is a byte count or a string with a unit ("512M").
    Result<void> optional_size(std::string_view key, std::optional<std::uint64_t>& out) {
        const json::value* v = find(key);
        if (v == nullptr) return {};
        if (v->is_uint64()) {
            out = v->get_uint64();
        } else if (v->is_int64() && v->get_int64() >= 0) {
            out = static_cast<std::uint64_t>(v->get_int64());
        } else if (v->is_string()) {
            auto size = parse_size(std::string(v->get_string()));
            if (!size) return field_error(path(key), size.error().what());
            out = *size;
        } else {
            return field_error(path(key), "expected a size such as 536870912 or \"512M\"");
        }
        return {};
    }

    Result<void> optional_seconds(std::string_view key,
                                  std::optional<std::chrono::milliseconds>& out) {
        const json::value* v = find(key);
        if (v == nullptr) return {};
        if (!v->is_number()) return field_error(path(key), "expected a number of seconds");
        auto ms = seconds_to_timeout(v->to_number<double>());
        if (!ms) return field_error(path(key), ms.error().what());
        out = *ms;
        return {};
    }

    Result<void> reject_unknown() const {
        for (const auto& kv : obj_) {
            bool known = false;
            for (const auto& s : seen_)
                known = known || s == kv.key();
            if (!known) return field_error(path(kv.key()), "unknown field");
        }
        return {};
    }

  private:
    const json::object& obj_;
    std::string prefix_;
    std::vector<std::string> seen_;
};

Result<MountType> mount_type_from(std::string_view name) {
    for (MountType t : {MountType::Bind, MountType::RoBind, MountType::Tmpfs, MountType::Dir,
                        MountType::Symlink, MountType::Proc, MountType::Dev}) {
        if (to_string(t) == name) return t;
    }
    return Error("", "unknown mount type '" + std::string(name) + "'");
}

Result<Mount> parse_mount(const json::value& v, const std::string& where) {
    if (!v.is_object()) return field_error(where, "expected an object");
    ObjectReader r(v.get_object(), where + ".");
    Mount m;
    std::optional<std::string> type;
    std::optional<std::string> source;
    std::optional<std::string> dest;
    std::optional<bool> optional;
    NESTBOX_TRY(r.optional_string("type", type));
    NESTBOX_TRY(r.optional_string("source", source));
    NESTBOX_TRY(r.optional_string("dest", dest));
    NESTBOX_TRY(r.optional_bool("optional", optional));
    NESTBOX_TRY(r.optional_size("size", m.size));
    NESTBOX_TRY(r.reject_unknown());
    if (!type) return field_error(r.path("type"), "missing");
    auto t = mount_type_from(*type);
    if (!t) return field_error(r.path("type"), t.error().what());
    m.type = *t;
    if (!dest) return field_error(r.path("dest"), "missing");
    m.dest = *dest;
    const bool needs_source =
        m.type == MountType::Bind || m.type == MountType::RoBind || m.type == MountType::Symlink;
    if (needs_source && !source) return field_error(r.path("source"), "missing");
    if (!needs_source && source) return field_error(r.path("source"), "not used by this type");
    if (m.size && m.type != MountType::Tmpfs)
        return field_error(r.path("size"), "only a tmpfs has a size");
    const bool may_be_optional = m.type == MountType::Bind || m.type == MountType::RoBind;
    if (optional && !may_be_optional)
        return field_error(r.path("optional"), "only binds can be optional");
    m.source = source.value_or("");
    m.optional = optional.value_or(false);
    return m;
}

Result<void> parse_env(const json::value& v, Policy& p) {
    if (!v.is_object()) return field_error("env", "expected an object");
    ObjectReader r(v.get_object(), "env.");
    NESTBOX_TRY(r.optional_bool("inherit", p.inherit_env));
    if (const json::value* set = r.find("set")) {
        if (!set->is_object()) return field_error("env.set", "expected an object of strings");
        for (const auto& kv : set->get_object()) {
            if (!kv.value().is_string()) {
                return field_error("env.set." + std::string(kv.key()), "expected a string");
            }
            p.setenv.emplace_back(std::string(kv.key()), std::string(kv.value().get_string()));
        }
    }
    if (const json::value* unset = r.find("unset")) {
        if (!unset->is_array()) return field_error("env.unset", "expected an array of strings");
        for (const auto& name : unset->get_array()) {
            if (!name.is_string()) return field_error("env.unset", "expected an array of strings");
            p.unsetenv.emplace_back(name.get_string());
        }
    }
    return r.reject_unknown();
}

Result<void> parse_limits(const json::value& v, Limits& l) {
    if (!v.is_object()) return field_error("limits", "expected an object");
    ObjectReader r(v.get_object(), "limits.");
    NESTBOX_TRY(r.optional_size("memory", l.memory_bytes));
    NESTBOX_TRY(r.optional_u32("cpu", l.cpu_percent));
    NESTBOX_TRY(r.optional_u32("pids", l.pids));
    NESTBOX_TRY(r.optional_seconds("timeout", l.timeout));
    NESTBOX_TRY(r.optional_string("cgroup_parent", l.cgroup_parent));
    std::optional<std::string> mode;
    NESTBOX_TRY(r.optional_string("mode", mode));
    if (mode) {
        if (*mode == "strict") {
            l.mode = LimitMode::Strict;
        } else if (*mode == "best-effort") {
            l.mode = LimitMode::BestEffort;
        } else {
            return field_error("limits.mode", R"(expected "strict" or "best-effort")");
        }
    }
    return r.reject_unknown();
}

}  // namespace

Result<Policy> parse_policy_json(std::string_view text) {
    boost::system::error_code ec;
    json::value doc = json::parse(text, ec);
    if (ec) return Error("policy", "not valid JSON: " + ec.message());
    if (!doc.is_object()) return Error("policy", "expected a JSON object");

    Policy p;
    ObjectReader r(doc.get_object(), "");
    NESTBOX_TRY(r.optional_bool("default_root", p.default_root));
    if (const json::value* mounts = r.find("mounts")) {
        if (!mounts->is_array()) return field_error("mounts", "expected an array");
        std::size_t i = 0;
        for (const auto& m : mounts->get_array()) {
            NESTBOX_TRY_ASSIGN(Mount mount, parse_mount(m, "mounts[" + std::to_string(i++) + "]"));
            p.mounts.push_back(std::move(mount));
        }
    }
    NESTBOX_TRY(r.optional_string("workspace", p.workspace));
    NESTBOX_TRY(r.optional_string("chdir", p.chdir));
    NESTBOX_TRY(r.optional_bool("share_net", p.share_net));
    NESTBOX_TRY(r.optional_string("hostname", p.hostname));
    NESTBOX_TRY(r.optional_u32("uid", p.uid));
    NESTBOX_TRY(r.optional_u32("gid", p.gid));
    if (const json::value* limits = r.find("limits")) NESTBOX_TRY(parse_limits(*limits, p.limits));
    NESTBOX_TRY(r.optional_string("seccomp", p.seccomp));
    NESTBOX_TRY(r.optional_bool("landlock", p.landlock));
    if (const json::value* env = r.find("env")) NESTBOX_TRY(parse_env(*env, p));
    NESTBOX_TRY(r.reject_unknown());
    return p;
}

namespace {

template <class T>
void optional_field(JsonWriter& w, std::string_view key, const std::optional<T>& v) {
    if (v) w.field(key, *v);
}

}  // namespace

std::string to_json(const Policy& p) {
    JsonWriter w;
    w.begin_object();
    optional_field(w, "default_root", p.default_root);
    if (!p.mounts.empty()) {
        w.key("mounts").begin_array();
        for (const Mount& m : p.mounts) {
            w.begin_object().field("type", to_string(m.type));
            if (!m.source.empty()) w.field("source", m.source);
            w.field("dest", m.dest);
            if (m.optional) w.field("optional", true);
            optional_field(w, "size", m.size);
            w.end_object();
        }
        w.end_array();
    }
    optional_field(w, "workspace", p.workspace);
    optional_field(w, "chdir", p.chdir);
    optional_field(w, "share_net", p.share_net);
    optional_field(w, "hostname", p.hostname);
    optional_field(w, "uid", p.uid);
    optional_field(w, "gid", p.gid);
    const Limits& l = p.limits;
    if (l != Limits{}) {
        w.key("limits").begin_object();
        optional_field(w, "memory", l.memory_bytes);
        optional_field(w, "cpu", l.cpu_percent);
        optional_field(w, "pids", l.pids);
        if (l.timeout) w.field("timeout", static_cast<double>(l.timeout->count()) / 1000.0);
        optional_field(w, "cgroup_parent", l.cgroup_parent);
        if (l.mode) w.field("mode", *l.mode == LimitMode::Strict ? "strict" : "best-effort");
        w.end_object();
    }
    optional_field(w, "seccomp", p.seccomp);
    optional_field(w, "landlock", p.landlock);
    if (p.inherit_env || !p.setenv.empty() || !p.unsetenv.empty()) {
        w.key("env").begin_object();
        optional_field(w, "inherit", p.inherit_env);
        if (!p.setenv.empty()) {
            w.key("set").begin_object();
            for (const auto& [k, v] : p.setenv)
                w.field(k, v);
            w.end_object();
        }
        if (!p.unsetenv.empty()) {
            w.key("unset").begin_array();
            for (const auto& name : p.unsetenv)
                w.value(name);
            w.end_array();
        }
        w.end_object();
    }
    w.end_object();
    return w.take();
}

}  // namespace nestbox::policy
