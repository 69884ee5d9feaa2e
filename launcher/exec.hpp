// Stage 10: exec. Runs in the command's own process, which init forked after every boundary was
// in place; all that is left is a clean process state and execve.
#pragma once

#include <string>
#include <vector>

#include "launcher/exit_codes.hpp"

namespace nestbox::launcher {

[[noreturn]] void exec_command(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env);

}  // namespace nestbox::launcher
