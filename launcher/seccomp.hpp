// Stage 8: seccomp. The filter is prepared by the launcher before the sandbox exists (so a bad
// profile is an error before anything is built) and installed by the command's process as its
// last step before execve (exec.cpp), so the command and everything it starts inherit it.
#pragma once

#include <linux/filter.h>

#include <optional>
#include <span>

#include "launcher/plan.hpp"
#include "policy/seccomp_profile.hpp"
#include "src/core/error.hpp"

namespace nestbox::launcher {

class SeccompFilter {
  public:
    // The built-in default (precompiled), none, or a profile file compiled now.
    static Result<SeccompFilter> prepare(SeccompMode mode, const std::string& file);

    // What seccomp(SECCOMP_SET_MODE_FILTER) takes; nullopt for --seccomp none.
    std::optional<sock_fprog> fprog() const;

  private:
    std::span<const sock_filter> program() const {
        return builtin_ ? policy::default_seccomp_filter()
                        : std::span<const sock_filter>(compiled_);
    }

    bool builtin_ = false;
    policy::BpfProgram compiled_;
};

}  // namespace nestbox::launcher
