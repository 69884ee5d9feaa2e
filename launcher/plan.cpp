#include "launcher/plan.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>

namespace nestbox::launcher {

using policy::MountType;

namespace {

Error bad(const std::string& option, const std::string& problem) {
    return Error("options", option + ": " + problem);
}

bool has_nul(const std::string& s) {
    return s.find('\0') != std::string::npos;
}

Result<std::string> check_source(const std::string& option, const std::string& source,
                                 const std::string& cwd) {
    if (source.empty()) return bad(option, "empty source path");
    if (has_nul(source)) return bad(option, "source path contains a NUL byte");
    if (source.front() == '/') return source;
    if (cwd.empty())
        return bad(option, "'" + source + "' is relative, but the current directory is unknown");
    return cwd + "/" + source;
}

// The system directories of the default root, in the spec's order.
constexpr const char* kSystemDirs[] = {"/usr",   "/bin",   "/sbin",   "/lib",
                                       "/lib32", "/lib64", "/libx32", "/opt"};
// The /etc files programs need to run: the loader cache, TLS roots, name resolution, the zone.
constexpr const char* kEtcFiles[] = {"/etc/ld.so.cache", "/etc/ssl",   "/etc/alternatives",
                                     "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
                                     "/etc/localtime"};

constexpr const char* kUserName = "sandbox";

std::string user_name(uid_t uid) {
    return uid == 0 ? "root" : kUserName;
}

// A synthetic /etc/passwd and /etc/group naming only root and the sandbox user: tools that look
// their user up (ssh, git, python's getpass) work, and nothing about host accounts leaks.
std::string passwd_file(uid_t uid, gid_t gid, const std::string& home) {
    std::string out = "root:x:0:0:root:" + std::string(uid == 0 ? home : "/root") + ":/bin/sh\n";
    if (uid != 0) {
        out += std::string(kUserName) + ":x:" + std::to_string(uid) + ":" + std::to_string(gid) +
               ":nestbox sandbox:" + home + ":/bin/sh\n";
    }
    return out;
}

std::string group_file(gid_t gid) {
    std::string out = "root:x:0:\n";
    if (gid != 0) out += std::string(kUserName) + ":x:" + std::to_string(gid) + ":\n";
    return out;
}

MountStep step(MountStep::Kind kind, std::string dest, std::string source = {}) {
    MountStep s;
    s.kind = kind;
    s.dest = std::move(dest);
    s.source = std::move(source);
    return s;
}

void add_default_root(std::vector<MountStep>& out, uid_t uid, gid_t gid, const std::string& home) {
    for (const char* dir : kSystemDirs)
        out.push_back(step(MountStep::Kind::SystemDir, dir, dir));
    for (const char* file : kEtcFiles) {
        MountStep s = step(MountStep::Kind::RoBind, file, file);
        s.optional = true;
        out.push_back(std::move(s));
    }
    MountStep passwd = step(MountStep::Kind::File, "/etc/passwd");
    passwd.content = passwd_file(uid, gid, home);
    out.push_back(std::move(passwd));
    MountStep group = step(MountStep::Kind::File, "/etc/group");
    group.content = group_file(gid);
    out.push_back(std::move(group));
    out.push_back(step(MountStep::Kind::Proc, "/proc"));
    out.push_back(step(MountStep::Kind::Dev, "/dev"));
    MountStep tmp = step(MountStep::Kind::Tmpfs, "/tmp");
    tmp.size = kDefaultTmpSize;
    tmp.mode = 01777;
    out.push_back(std::move(tmp));
}

Result<MountStep> user_mount(const policy::Mount& m, const std::string& cwd) {
    const std::string option = "--" + std::string(policy::to_string(m.type));
    NESTBOX_TRY_ASSIGN(std::string dest, normalize_dest(option, m.dest));
    MountStep s;
    s.dest = std::move(dest);
    s.optional = m.optional;
    switch (m.type) {
        case MountType::Bind:
        case MountType::RoBind: {
            s.kind = m.type == MountType::Bind ? MountStep::Kind::Bind : MountStep::Kind::RoBind;
            NESTBOX_TRY_ASSIGN(s.source, check_source(option, m.source, cwd));
            break;
        }
        case MountType::Tmpfs:
            s.kind = MountStep::Kind::Tmpfs;
            s.size = m.size.value_or(kDefaultTmpSize);
            if (s.size == 0) return bad("--size", "a tmpfs needs a size above 0");
            s.owned_by_sandbox_user = true;
            break;
        case MountType::Dir:
            s.kind = MountStep::Kind::Dir;
            break;
        case MountType::Symlink:
            s.kind = MountStep::Kind::Symlink;
            if (m.source.empty() || has_nul(m.source)) {
                return bad(option, "symlink target is empty or contains a NUL byte");
            }
            s.source = m.source;
            break;
        case MountType::Proc:
            s.kind = MountStep::Kind::Proc;
            break;
        case MountType::Dev:
            s.kind = MountStep::Kind::Dev;
            break;
    }
    return s;
}

Result<void> check_limits(const policy::Limits& l) {
    if (l.memory_bytes && *l.memory_bytes < (1ULL << 20)) {
        return bad("--memory", std::to_string(*l.memory_bytes) + " bytes is below the 1M minimum");
    }
    if (l.cpu_percent && (*l.cpu_percent == 0 || *l.cpu_percent > 100 * 1024)) {
        return bad("--cpu",
                   std::to_string(*l.cpu_percent) + " is out of range (1 to 102400 percent)");
    }
    // The sandbox's init counts against the limit, and it must fork the command.
    if (l.pids && *l.pids < 2) {
        return bad("--pids",
                   std::to_string(*l.pids) + " is below 2 (the sandbox's init and the command)");
    }
    if (l.cgroup_parent) {
        const std::string& p = *l.cgroup_parent;
        if (p.empty() || p.front() != '/' || has_nul(p) || p.find("/..") != std::string::npos) {
            return bad("--cgroup-parent",
                       "'" + p + "' must be an absolute cgroup path without '..'");
        }
    }
    return {};
}

bool valid_hostname(const std::string& h) {
    if (h.empty() || h.size() > 64) return false;
    return std::all_of(h.begin(), h.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.';
    });
}

Result<std::vector<std::string>> build_env(const policy::Policy& p, const Caller& caller, uid_t uid,
                                           const std::string& home) {
    std::vector<std::string> env;
    if (p.inherit_env.value_or(false)) {
        env = caller.environ;
    } else {
        env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=" + user_name(uid),
               "LOGNAME=" + user_name(uid),         "LANG=C.UTF-8", "TMPDIR=/tmp"};
    }
    auto erase = [&env](const std::string& name) {
        const std::string prefix = name + "=";
        std::erase_if(env, [&prefix](const std::string& e) { return e.starts_with(prefix); });
    };
    for (const auto& [name, value] : p.setenv) {
        if (name.empty() || name.find('=') != std::string::npos || has_nul(name)) {
            return bad("--setenv", "invalid variable name '" + name + "'");
        }
        if (has_nul(value)) return bad("--setenv", name + ": value contains a NUL byte");
        erase(name);
        env.push_back(name);
        env.back().append("=").append(value);
    }
    for (const auto& name : p.unsetenv) {
        if (name.empty() || name.find('=') != std::string::npos || has_nul(name)) {
            return bad("--unsetenv", "invalid variable name '" + name + "'");
        }
        erase(name);
    }
    return env;
}

}  // namespace

Result<std::string> normalize_dest(const std::string& option, const std::string& dest) {
    if (dest.empty() || dest.front() != '/') {
        return bad(option, "destination '" + dest + "' must be an absolute path");
    }
    if (has_nul(dest)) return bad(option, "destination contains a NUL byte");
    std::string out;
    std::size_t i = 0;
    while (i < dest.size()) {
        while (i < dest.size() && dest[i] == '/')
            ++i;
        const std::size_t end = std::min(dest.find('/', i), dest.size());
        const std::string part = dest.substr(i, end - i);
        i = end;
        if (part.empty()) continue;
        if (part == "." || part == "..") {
            return bad(option, "destination '" + dest + "' must not contain '.' or '..'");
        }
        out += "/" + part;
    }
    if (out.empty()) {
        return bad(option, "destination '/' is the sandbox root itself; mount below it");
    }
    return out;
}

Result<Plan> make_plan(const Invocation& inv, const Caller& caller) {
    const policy::Policy& p = inv.policy;
    Plan plan;
    plan.rootless = caller.uid != 0;

    plan.uid = p.uid.value_or(kDefaultUid);
    plan.gid = p.gid.value_or(kDefaultUid);
    if (plan.uid == static_cast<uid_t>(-1)) return bad("--uid", "4294967295 is not a valid uid");
    if (plan.gid == static_cast<gid_t>(-1)) return bad("--gid", "4294967295 is not a valid gid");
    if (!plan.rootless && (plan.uid == 0 || plan.gid == 0)) {
        // Without a user namespace, uid 0 inside is uid 0 on the host: even with no capabilities
        // it owns host files such as /proc/sys entries. Only rootless mode can map 0 safely.
        return bad(plan.uid == 0 ? "--uid" : "--gid",
                   "0 would be the host's root; use a non-zero id (or run nestbox unprivileged)");
    }
    plan.outer_uid = caller.uid;
    plan.outer_gid = caller.gid;

    plan.namespaces = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
    const bool share_net = p.share_net.value_or(false);
    if (!share_net) plan.namespaces |= CLONE_NEWNET;
    if (plan.rootless) plan.namespaces |= CLONE_NEWUSER;
    plan.loopback = !share_net;

    plan.hostname = p.hostname.value_or("nestbox");
    if (!valid_hostname(plan.hostname)) {
        return bad("--hostname", "'" + plan.hostname + "' is not a valid host name");
    }

    const bool default_root = p.default_root.value_or(true);
    const std::string home = p.workspace ? "/workspace" : (default_root ? "/tmp" : "/");
    if (default_root) add_default_root(plan.mounts, plan.uid, plan.gid, home);
    if (p.workspace) {
        NESTBOX_TRY_ASSIGN(std::string source,
                           check_source("--workspace", *p.workspace, caller.cwd));
        plan.mounts.push_back(step(MountStep::Kind::Bind, "/workspace", std::move(source)));
    }
    for (const policy::Mount& m : p.mounts) {
        NESTBOX_TRY_ASSIGN(MountStep s, user_mount(m, caller.cwd));
        plan.mounts.push_back(std::move(s));
    }

    if (p.chdir) {
        NESTBOX_TRY_ASSIGN(plan.chdir, normalize_dest("--chdir", *p.chdir));
    } else {
        plan.chdir = p.workspace ? "/workspace" : "/";
    }

    NESTBOX_TRY(check_limits(p.limits));
    plan.limits = p.limits;
    plan.best_effort_limits = p.limits.mode == policy::LimitMode::BestEffort;

    const std::string seccomp = p.seccomp.value_or("default");
    if (seccomp == "default") {
        plan.seccomp = SeccompMode::Default;
    } else if (seccomp == "none") {
        plan.seccomp = SeccompMode::None;
    } else {
        plan.seccomp = SeccompMode::File;
        NESTBOX_TRY_ASSIGN(plan.seccomp_file, check_source("--seccomp", seccomp, caller.cwd));
    }
    plan.landlock = p.landlock.value_or(false);

    if (inv.command.empty()) return bad("command", "no command given");
    if (inv.command.front().empty()) return bad("command", "the command name is empty");
    plan.argv = inv.command;
    NESTBOX_TRY_ASSIGN(plan.env, build_env(p, caller, plan.uid, home));
    plan.status_fd = inv.status_fd;
    return plan;
}

}  // namespace nestbox::launcher
