#include "launcher/pivot_root.hpp"

#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace nestbox::launcher {

Result<void> enter_root(int root_fd) {
    if (::fchdir(root_fd) != 0) return Error::from_errno("pivot_root", "entering the new root");
    // pivot_root(".", ".") stacks the old root on top of the new one at "/"; unmounting "."
    // then detaches the old root (lazily, it may still be busy) and leaves the new one. This
    // needs no directory for the old root inside the new one.
    if (::syscall(SYS_pivot_root, ".", ".") != 0) return Error::from_errno("pivot_root", "");
    if (::umount2(".", MNT_DETACH) != 0)
        return Error::from_errno("pivot_root", "detaching the host root");
    if (::chdir("/") != 0) return Error::from_errno("pivot_root", "chdir /");
    return {};
}

}  // namespace nestbox::launcher
