// The containment pipeline, start to end, in two short functions: what the launcher does outside
// the sandbox, and what the sandbox's init does inside it.
#pragma once

#include "launcher/exit_codes.hpp"
#include "launcher/plan.hpp"

namespace nestbox::launcher {

// Runs the plan and returns the launcher's exit status.
int run_sandbox(const Plan& plan);

}  // namespace nestbox::launcher
