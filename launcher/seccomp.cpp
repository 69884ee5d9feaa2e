#include "launcher/seccomp.hpp"

#include <fcntl.h>
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
    auto compiled = policy::compile_seccomp_profile(*profile);
    if (!compiled)
        return Error("seccomp", file + ": " + compiled.error().what(), compiled.error().code());
    f.compiled_ = std::move(*compiled);
    return f;
}

std::optional<sock_fprog> SeccompFilter::fprog() const {
    const std::span<const sock_filter> program = this->program();
    if (program.empty()) return std::nullopt;
    sock_fprog prog{};
    prog.len = static_cast<unsigned short>(program.size());
    prog.filter = const_cast<sock_filter*>(program.data());  // the kernel copies, never writes
    return prog;
}

}  // namespace nestbox::launcher
