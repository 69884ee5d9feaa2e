// Stage 0: the command line. bubblewrap's option names, parsed with CLI11 into a Policy (merged
// over a --policy file) and the command.
#pragma once

#include <optional>
#include <string>

#include "launcher/plan.hpp"
#include "src/core/error.hpp"

namespace nestbox::launcher {

struct ParsedCommandLine {
    std::optional<std::string> print;  // --help and --version: print this and exit 0
    Invocation invocation;
};

// Reads the --policy file, if one is given: the only I/O before the plan.
Result<ParsedCommandLine> parse_command_line(int argc, const char* const* argv);

}  // namespace nestbox::launcher
