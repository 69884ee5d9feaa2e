// Stage 11: init, PID 1 of the sandbox's PID namespace. It reaps every orphan, reports the
// command's end to the launcher, and then exits: when a PID namespace's init exits, the kernel
// kills every process left in it (daemons and setsid children included) and the launcher's wait
// for init returns only after they are all gone.
#pragma once

#include <sys/types.h>

#include "launcher/channel.hpp"

namespace nestbox::launcher {

[[noreturn]] void reap_until_command_exits(pid_t command, const Channel& channel);

}  // namespace nestbox::launcher
