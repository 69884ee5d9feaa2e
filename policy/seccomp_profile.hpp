// Seccomp profiles: the JSON format (a subset of the OCI runtime spec's, so Docker and Podman
// profiles load unchanged) and its compilation to a BPF program with libseccomp.
#pragma once

#include <linux/filter.h>
#include <seccomp.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/error.hpp"

namespace nestbox::policy {

struct SeccompArg {
    unsigned index = 0;
    scmp_compare op = SCMP_CMP_EQ;
    std::uint64_t value = 0;      // for SCMP_CMP_MASKED_EQ: the mask
    std::uint64_t value_two = 0;  // for SCMP_CMP_MASKED_EQ: the value after masking
};

struct SeccompRule {
    std::vector<std::string> names;
    std::uint32_t action = SCMP_ACT_ALLOW;  // libseccomp's encoding, e.g. SCMP_ACT_ERRNO(EPERM)
    std::vector<SeccompArg> args;           // all must match (AND)
    std::string comment;                    // the threat the rule closes
    std::string where;                      // "syscalls[3]", for messages
};

struct SeccompProfile {
    std::uint32_t default_action = SCMP_ACT_ALLOW;
    std::vector<SeccompRule> rules;
};

using BpfProgram = std::vector<sock_filter>;

// Parses a profile. Entries whose Docker-style `includes`/`excludes` conditions do not hold for a
// sandbox (one that needs a capability: the sandbox has none; another architecture) are dropped
// here, so a Docker profile means what it means under Docker with all capabilities dropped.
Result<SeccompProfile> parse_seccomp_profile(std::string_view json);

// Compiles for the native architecture only: every other ABI (i386 through int 0x80, x32) is
// killed, so a filter written in x86_64 syscall numbers cannot be sidestepped through another
// syscall table.
Result<BpfProgram> compile_seccomp_profile(const SeccompProfile& profile);

// The default profile (policy/profiles/default.json), compiled to BPF when nestbox was built:
// loading it costs a syscall instead of the ~0.7 ms libseccomp needs to compile it.
std::span<const sock_filter> default_seccomp_filter();

}  // namespace nestbox::policy
