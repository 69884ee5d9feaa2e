// The launcher's exit statuses that are not the command's own: a sandbox that could not be built
// is told apart from a command that failed.
#pragma once

namespace nestbox::launcher {

inline constexpr int kLauncherError = 125;  // bad option, or a boundary that could not be set up
inline constexpr int kCannotExecute = 126;  // the command exists but could not be executed
inline constexpr int kNotFound = 127;       // the command was not found

}  // namespace nestbox::launcher
