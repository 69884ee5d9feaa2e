#include "policy/seccomp_profile.hpp"

#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "src/core/files.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox::policy {

namespace json = boost::json;

namespace {

Error profile_error(const std::string& where, const std::string& problem) {
    return Error("seccomp", where + ": " + problem);
}

Result<void> check_known_keys(const json::object& o, std::initializer_list<std::string_view> known,
                              const std::string& where) {
    for (const auto& kv : o) {
        bool ok = false;
        for (std::string_view k : known)
            ok = ok || kv.key() == k;
        if (!ok) return profile_error(where + std::string(kv.key()), "unknown field");
    }
    return {};
}

// An errno as a number, or by name ("EPERM", as Podman's profiles write it).
Result<std::int64_t> parse_errno(const json::value& v, const std::string& where) {
    std::int64_t err = -1;
    if (v.is_int64() || v.is_uint64()) {
        err = v.to_number<std::int64_t>();
    } else if (v.is_string()) {
        for (int n = 1; n < 4096 && err < 0; ++n) {
            const char* name = strerrorname_np(n);
            if (name != nullptr && v.get_string() == name) err = n;
        }
        if (err < 0)
            return profile_error(where, "unknown errno name '" + std::string(v.get_string()) + "'");
    } else {
        return profile_error(where, "expected an errno number or name");
    }
    if (err < 0 || err > 4095) return profile_error(where, "out of range");
    return err;
}

// `errno_keys`: where the errno of an SCMP_ACT_ERRNO may be given, the OCI number first, then
// Podman's name ("errnoRet", "errno").
Result<std::uint32_t> parse_action(const json::object& entry, const std::string& key,
                                   std::initializer_list<const char*> errno_keys,
                                   const std::string& where) {
    const json::value* v = entry.if_contains(key);
    if (v == nullptr || !v->is_string()) return profile_error(where + key, "expected an action");
    const std::string_view name = v->get_string();
    if (name == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
    if (name == "SCMP_ACT_KILL" || name == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL_THREAD;
    if (name == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
    if (name == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
    if (name == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
    if (name == "SCMP_ACT_ERRNO") {
        for (const char* k : errno_keys) {
            if (const json::value* e = entry.if_contains(k)) {
                NESTBOX_TRY_ASSIGN(const std::int64_t err, parse_errno(*e, where + k));
                return SCMP_ACT_ERRNO(static_cast<std::uint16_t>(err));
            }
        }
        return SCMP_ACT_ERRNO(EPERM);  // the OCI default when no errno is given
    }
    // SCMP_ACT_TRACE and SCMP_ACT_NOTIFY need a supervisor process that nestbox does not run.
    return profile_error(where + key, "unsupported action '" + std::string(name) + "'");
}

Result<scmp_compare> parse_op(std::string_view name, const std::string& where) {
    static constexpr std::pair<std::string_view, scmp_compare> kOps[] = {
        {"SCMP_CMP_NE", SCMP_CMP_NE},
        {"SCMP_CMP_LT", SCMP_CMP_LT},
        {"SCMP_CMP_LE", SCMP_CMP_LE},
        {"SCMP_CMP_EQ", SCMP_CMP_EQ},
        {"SCMP_CMP_GE", SCMP_CMP_GE},
        {"SCMP_CMP_GT", SCMP_CMP_GT},
        {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
    };
    for (const auto& [n, op] : kOps) {
        if (n == name) return op;
    }
    return profile_error(where, "unknown comparison '" + std::string(name) + "'");
}

Result<std::uint64_t> parse_u64(const json::object& o, const std::string& key,
                                const std::string& where) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr) return std::uint64_t{0};
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    return profile_error(where + key, "expected an unsigned number");
}

Result<SeccompArg> parse_arg(const json::value& v, const std::string& where) {
    if (!v.is_object()) return profile_error(where, "expected an object");
    const json::object& o = v.get_object();
    // A misspelt "value" would otherwise compare against 0 without a word.
    NESTBOX_TRY(check_known_keys(o, {"index", "value", "valueTwo", "op"}, where + "."));
    SeccompArg arg;
    NESTBOX_TRY_ASSIGN(const std::uint64_t index, parse_u64(o, "index", where + "."));
    if (index > 5) return profile_error(where + ".index", "syscalls have at most 6 arguments");
    arg.index = static_cast<unsigned>(index);
    NESTBOX_TRY_ASSIGN(arg.value, parse_u64(o, "value", where + "."));
    NESTBOX_TRY_ASSIGN(arg.value_two, parse_u64(o, "valueTwo", where + "."));
    const json::value* op = o.if_contains("op");
    if (op == nullptr || !op->is_string()) return profile_error(where + ".op", "expected a string");
    NESTBOX_TRY_ASSIGN(arg.op, parse_op(op->get_string(), where + ".op"));
    return arg;
}

// Whether an architecture named in a profile ("SCMP_ARCH_X86_64", or Docker's Go names such as
// "amd64") is the one this filter is compiled for: libseccomp's native architecture.
bool is_native_arch(std::string_view name) {
    static constexpr std::pair<std::string_view, std::string_view> kGoNames[] = {
        {"amd64", "x86_64"},      {"386", "x86"},         {"arm64", "aarch64"},
        {"mips64le", "mipsel64"}, {"ppc64le", "ppc64le"}, {"s390x", "s390x"},
        {"riscv64", "riscv64"},   {"arm", "arm"}};
    std::string token(name);
    if (token.starts_with("SCMP_ARCH_")) {
        token = token.substr(10);
        for (char& ch : token)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    for (const auto& [go, libseccomp] : kGoNames) {
        if (token == go) token = std::string(libseccomp);
    }
    return seccomp_arch_resolve_name(token.c_str()) == seccomp_arch_native();
}

Result<bool> names_native_arch(const json::value& arches, const std::string& where) {
    if (!arches.is_array()) return profile_error(where, "expected an array of architectures");
    bool native = false;
    for (const auto& a : arches.get_array()) {
        if (!a.is_string()) return profile_error(where, "expected an array of architectures");
        native = native || is_native_arch(a.get_string());
    }
    return native;
}

// "5.8" <= running kernel?
bool kernel_at_least(std::string_view wanted) {
    utsname u{};
    if (::uname(&u) != 0) return false;
    unsigned have_major = 0;
    unsigned have_minor = 0;
    unsigned want_major = 0;
    unsigned want_minor = 0;
    if (std::sscanf(u.release, "%u.%u", &have_major, &have_minor) != 2) return false;
    if (std::sscanf(std::string(wanted).c_str(), "%u.%u", &want_major, &want_minor) != 2)
        return false;
    return have_major > want_major || (have_major == want_major && have_minor >= want_minor);
}

// Docker's conditional entries, evaluated for a sandbox: it holds no capabilities, runs the native
// architecture only, and runs on this kernel. An `includes` condition must hold for the entry to
// apply; any `excludes` condition that holds drops it. Unknown condition fields are errors.
Result<bool> entry_applies(const json::object& entry, const std::string& where) {
    // Both conditions are checked for well-formedness before either is evaluated, so a typo in
    // an `excludes` is reported even when the `includes` already drops the entry.
    bool applies = true;
    for (const char* kind : {"includes", "excludes"}) {
        const json::value* cond = entry.if_contains(kind);
        if (cond == nullptr) continue;
        const std::string here = where + "." + kind;
        if (!cond->is_object()) return profile_error(here, "expected an object");
        const json::object& o = cond->get_object();
        NESTBOX_TRY(check_known_keys(o, {"caps", "arches", "minKernel"}, here + "."));
        const bool include = std::string_view(kind) == "includes";
        if (const json::value* caps = o.if_contains("caps")) {
            if (!caps->is_array()) return profile_error(here + ".caps", "expected an array");
            // The sandbox has no capabilities: "includes caps" never holds, "excludes caps" never
            // drops.
            if (include && !caps->get_array().empty()) applies = false;
        }
        if (const json::value* arches = o.if_contains("arches")) {
            NESTBOX_TRY_ASSIGN(const bool native, names_native_arch(*arches, here + ".arches"));
            // An empty list is no condition, as in Docker.
            if (!arches->get_array().empty() && native != include) applies = false;
        }
        if (const json::value* k = o.if_contains("minKernel")) {
            unsigned major = 0;
            unsigned minor = 0;
            char rest = 0;
            if (!k->is_string() || std::sscanf(std::string(k->get_string()).c_str(), "%u.%u%c",
                                               &major, &minor, &rest) != 2) {
                return profile_error(here + ".minKernel", "expected a version such as \"5.8\"");
            }
            if (kernel_at_least(k->get_string()) != include) applies = false;
        }
    }
    return applies;
}

Result<SeccompRule> parse_rule(const json::object& entry, const std::string& where) {
    NESTBOX_TRY(check_known_keys(
        entry,
        {"names", "name", "action", "errnoRet", "errno", "args", "comment", "includes", "excludes"},
        where + "."));
    SeccompRule rule;
    rule.where = where;
    if (const json::value* names = entry.if_contains("names")) {
        if (!names->is_array()) return profile_error(where + ".names", "expected an array");
        for (const auto& n : names->get_array()) {
            if (!n.is_string()) return profile_error(where + ".names", "expected strings");
            rule.names.emplace_back(n.get_string());
        }
    }
    if (const json::value* name = entry.if_contains("name"); name != nullptr && name->is_string()) {
        rule.names.emplace_back(name->get_string());
    }
    if (rule.names.empty()) return profile_error(where + ".names", "missing");
    NESTBOX_TRY_ASSIGN(rule.action,
                       parse_action(entry, "action", {"errnoRet", "errno"}, where + "."));
    if (const json::value* args = entry.if_contains("args"); args != nullptr && !args->is_null()) {
        if (!args->is_array()) return profile_error(where + ".args", "expected an array");
        std::size_t i = 0;
        for (const auto& a : args->get_array()) {
            NESTBOX_TRY_ASSIGN(SeccompArg arg,
                               parse_arg(a, where + ".args[" + std::to_string(i++) + "]"));
            rule.args.push_back(arg);
        }
    }
    if (const json::value* c = entry.if_contains("comment"); c != nullptr && c->is_string()) {
        rule.comment = std::string(c->get_string());
    }
    return rule;
}

struct SeccompCtxDeleter {
    void operator()(void* ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, SeccompCtxDeleter>;

Error libseccomp_error(int rc, const std::string& what) {
    return Error("seccomp", what, -rc);
}

}  // namespace

Result<SeccompProfile> parse_seccomp_profile(std::string_view text) {
    boost::system::error_code ec;
    json::value doc = json::parse(text, ec);
    if (ec) return Error("seccomp", "profile is not valid JSON: " + ec.message());
    if (!doc.is_object()) return Error("seccomp", "profile must be a JSON object");
    const json::object& top = doc.get_object();
    NESTBOX_TRY(check_known_keys(top,
                                 {"comment", "defaultAction", "defaultErrnoRet", "defaultErrno",
                                  "architectures", "archMap", "syscalls", "flags"},
                                 ""));
    SeccompProfile profile;
    NESTBOX_TRY_ASSIGN(profile.default_action,
                       parse_action(top, "defaultAction", {"defaultErrnoRet", "defaultErrno"}, ""));
    if (const json::value* syscalls = top.if_contains("syscalls")) {
        if (!syscalls->is_array()) return profile_error("syscalls", "expected an array");
        std::size_t i = 0;
        for (const auto& e : syscalls->get_array()) {
            const std::string where = "syscalls[" + std::to_string(i++) + "]";
            if (!e.is_object()) return profile_error(where, "expected an object");
            NESTBOX_TRY_ASSIGN(const bool applies, entry_applies(e.get_object(), where));
            if (!applies) continue;
            NESTBOX_TRY_ASSIGN(SeccompRule rule, parse_rule(e.get_object(), where));
            profile.rules.push_back(std::move(rule));
        }
    }
    return profile;
}

Result<BpfProgram> compile_seccomp_profile(const SeccompProfile& profile) {
    SeccompCtx ctx(seccomp_init(profile.default_action));
    if (!ctx) return Error("seccomp", "seccomp_init failed", ENOMEM);
    // Another ABI's syscall numbers mean different syscalls: kill rather than misjudge them.
    if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        rc < 0) {
        return libseccomp_error(rc, "setting the bad-architecture action");
    }
    // A binary search on the syscall number instead of a linear chain: the filter runs on every
    // syscall the command makes, and the kernel emulates it for each syscall number when it is
    // installed (to cache the always-allowed ones).
    if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2); rc < 0) {
        return libseccomp_error(rc, "choosing the binary-tree layout");
    }
    // no_new_privs is set by the privileges stage, before the filter is installed.
    if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc < 0) {
        return libseccomp_error(rc, "disabling libseccomp's own no_new_privs");
    }
    for (const SeccompRule& rule : profile.rules) {
        if (rule.action == profile.default_action) continue;  // libseccomp rejects no-op rules
        std::vector<scmp_arg_cmp> cmps;
        cmps.reserve(rule.args.size());
        for (const SeccompArg& a : rule.args) {
            cmps.push_back(scmp_arg_cmp{a.index, a.op, a.value, a.value_two});
        }
        for (const std::string& name : rule.names) {
            const int nr = seccomp_syscall_resolve_name(name.c_str());
            if (nr == __NR_SCMP_ERROR) {
                // An unknown name in an allow rule allows nothing; in a deny rule it would deny
                // nothing while the author believes otherwise.
                if (rule.action == SCMP_ACT_ALLOW) continue;
                return Error("seccomp", (rule.where.empty() ? "" : rule.where + ": ") +
                                            "unknown syscall '" + name + "'");
            }
            const int rc = seccomp_rule_add_array(ctx.get(), rule.action, nr,
                                                  static_cast<unsigned>(cmps.size()), cmps.data());
            if (rc < 0) return libseccomp_error(rc, "adding the rule for '" + name + "'");
        }
    }
    // libseccomp 2.5 exports BPF only to a file descriptor.
    UniqueFd mem(::memfd_create("nestbox-seccomp", MFD_CLOEXEC));
    if (!mem) return Error::from_errno("seccomp", "memfd_create");
    if (int rc = seccomp_export_bpf(ctx.get(), mem.get()); rc < 0) {
        return libseccomp_error(rc, "exporting the BPF program");
    }
    if (::lseek(mem.get(), 0, SEEK_SET) != 0) return Error::from_errno("seccomp", "lseek");
    NESTBOX_TRY_ASSIGN(const std::string bytes, read_fd(mem.get(), 1 << 20));
    if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0) {
        return Error("seccomp", "libseccomp produced a malformed program", EINVAL);
    }
    BpfProgram program(bytes.size() / sizeof(sock_filter));
    std::memcpy(program.data(), bytes.data(), bytes.size());
    return program;
}

}  // namespace nestbox::policy
