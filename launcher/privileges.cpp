#include "launcher/privileges.hpp"

#include <grp.h>
#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

namespace nestbox::launcher {

namespace {

struct CapDeleter {
    void operator()(cap_t c) const { cap_free(c); }
};
using Caps = std::unique_ptr<std::remove_pointer_t<cap_t>, CapDeleter>;

// Every bit set and locked, except KEEP_CAPS itself (locked off): uid 0 gains nothing from exec,
// uid changes never adjust capabilities behind our back, and no ambient capability can be raised.
constexpr unsigned kLockedSecurebits =
    SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
    SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

Error fail(const std::string& what) {
    return Error::from_errno("privileges", what);
}

// Fail closed: a privilege the kernel still reports is an error, not a warning.
Result<void> verify(uid_t uid, gid_t gid) {
    uid_t r = 0, e = 0, s = 0;
    gid_t rg = 0, eg = 0, sg = 0;
    if (::getresuid(&r, &e, &s) != 0 || ::getresgid(&rg, &eg, &sg) != 0) return fail("getresuid");
    if (r != uid || e != uid || s != uid || rg != gid || eg != gid || sg != gid) {
        return Error("privileges", "ids did not change as requested", EPERM);
    }
    Caps now(cap_get_proc());
    Caps none(cap_init());
    if (!now || !none) return fail("cap_get_proc");
    if (cap_compare(now.get(), none.get()) != 0) {
        return Error("privileges", "capabilities remain after dropping them", EPERM);
    }
    for (int c = 0; c < static_cast<int>(cap_max_bits()); ++c) {
        const auto cap = static_cast<cap_value_t>(c);
        if (cap_get_bound(cap) > 0 || cap_get_ambient(cap) > 0) {
            return Error(
                "privileges",
                "capability " + std::to_string(c) + " remains in the bounding or ambient set",
                EPERM);
        }
    }
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
        return Error("privileges", "no_new_privs is not set", EPERM);
    }
    return {};
}

}  // namespace

Result<void> drop_privileges(uid_t uid, gid_t gid, bool can_setgroups) {
    // The order matters. Dropping the bounding set and locking the securebits need CAP_SETPCAP,
    // and changing ids needs CAP_SETUID/CAP_SETGID, so those come while we still hold everything;
    // clearing the capability sets comes last. With SECBIT_NO_SETUID_FIXUP set first, the uid
    // change does not clear capabilities by itself: the explicit, verified capset below does.
    for (int c = 0; c < static_cast<int>(cap_max_bits()); ++c) {
        if (cap_drop_bound(static_cast<cap_value_t>(c)) != 0) {
            return fail("dropping capability " + std::to_string(c) + " from the bounding set");
        }
    }
    if (cap_reset_ambient() != 0) return fail("clearing the ambient set");
    if (cap_set_secbits(kLockedSecurebits) != 0) return fail("locking the securebits");
    if (can_setgroups && ::setgroups(0, nullptr) != 0) return fail("clearing supplementary groups");
    if (::setresgid(gid, gid, gid) != 0) return fail("setresgid " + std::to_string(gid));
    if (::setresuid(uid, uid, uid) != 0) return fail("setresuid " + std::to_string(uid));
    Caps none(cap_init());
    if (!none || cap_set_proc(none.get()) != 0) return fail("clearing the capability sets");
    // Nothing executed from here on can gain privileges: setuid bits and file capabilities are
    // ignored. Also what lets an unprivileged process install the seccomp filter.
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("setting no_new_privs");
    return verify(uid, gid);
}

}  // namespace nestbox::launcher
