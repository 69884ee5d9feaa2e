// Stage 10: exec. Init starts the command once every boundary is in place. The child it creates
// (vfork-style: no copy of init's memory) gives itself a clean process state (own session, every
// signal at its default and none blocked, only fds 0-2), installs the seccomp filter as its very
// last step, and executes the command. Init itself never runs under the filter, so a profile that
// denies what init needs (wait4, write) cannot wedge the sandbox.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "launcher/exit_codes.hpp"
#include "src/core/error.hpp"

namespace nestbox::launcher {

// The command's pid. A command that cannot be executed is reported the way a shell does: a
// message on stderr, and the child exits 127 (not found) or 126 (not executable).
Result<pid_t> spawn_command(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env,
                            const std::optional<sock_fprog>& seccomp);

// Remembers where the kernel put our argv, so init can blank it: /proc/1/cmdline is readable by
// the command and would show the launcher's full command line.
void remember_arguments(int argc, char** argv);
void hide_arguments(const char* shown_name);

}  // namespace nestbox::launcher
