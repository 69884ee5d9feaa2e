// Stage 8: seccomp. The filter is prepared by the launcher before the sandbox exists (so a bad
// profile is an error before anything is built) and installed by init as its last privileged-
// path step, so the command and everything it starts inherit it.
#pragma once

#include <linux/filter.h>

#include <span>

#include "launcher/plan.hpp"
#include "policy/seccomp_profile.hpp"
#include "src/core/error.hpp"

namespace nestbox::launcher {

class SeccompFilter {
  public:
    // The built-in default (precompiled), none, or a profile file compiled now.
    static Result<SeccompFilter> prepare(SeccompMode mode, const std::string& file);

    bool enabled() const { return !program().empty(); }
    Result<void> install() const;

  private:
    std::span<const sock_filter> program() const {
        return builtin_ ? policy::default_seccomp_filter()
                        : std::span<const sock_filter>(compiled_);
    }

    bool builtin_ = false;
    policy::BpfProgram compiled_;
};

}  // namespace nestbox::launcher
