// Stage 10: exec. Init starts the command once every boundary is in place: a clean process state
// (own session, default signals, only fds 0-2) and execve, nothing else.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "launcher/exit_codes.hpp"

namespace nestbox::launcher {

// Returns the command's pid. A command that cannot be started is reported the way a shell does:
// a message on stderr and a child that exits 127 (not found) or 126 (not executable).
pid_t spawn_command(const std::vector<std::string>& argv, const std::vector<std::string>& env);

}  // namespace nestbox::launcher
