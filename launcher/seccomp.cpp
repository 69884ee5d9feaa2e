#include "launcher/seccomp.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "src/core/files.hpp"

namespace nestbox::launcher {

Result<SeccompFilter> SeccompFilter::prepare(SeccompMode mode, const std::string& file) {
    SeccompFilter f;
    switch (mode) {
        case SeccompMode::None:
            return f;
        case SeccompMode::Default:
            f.builtin_ = true;
            return f;
        case SeccompMode::File:
            break;
    }
    auto text = read_file(AT_FDCWD, file);
    if (!text) return Error("seccomp", file, text.error().code());
    auto profile = policy::parse_seccomp_profile(*text);
    if (!profile) return Error("seccomp", file + ": " + profile.error().what());
    NESTBOX_TRY_ASSIGN(f.compiled_, policy::compile_seccomp_profile(*profile));
    return f;
}

Result<void> SeccompFilter::install() const {
    const std::span<const sock_filter> program = this->program();
    if (program.empty()) return {};
    sock_fprog prog{};
    prog.len = static_cast<unsigned short>(program.size());
    prog.filter = const_cast<sock_filter*>(program.data());  // the kernel copies, never writes
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        return Error::from_errno("seccomp", "installing the filter");
    }
    return {};
}

}  // namespace nestbox::launcher
