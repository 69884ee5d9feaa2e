// nestbox: run a command in a fresh sandbox. See nestbox(1) and docs/architecture.md.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "launcher/exec.hpp"
#include "launcher/options.hpp"
#include "launcher/plan.hpp"
#include "launcher/sandbox.hpp"
#include "launcher/status.hpp"

namespace {

using namespace nestbox;
using namespace nestbox::launcher;

int refuse(const Error& e, std::optional<int> status_fd = std::nullopt) {
    std::fprintf(stderr, "nestbox: %s\n", e.message().c_str());
    StatusFd(status_fd).error(e);
    return kLauncherError;
}

Caller describe_caller() {
    Caller c;
    c.uid = ::getuid();
    c.gid = ::getgid();
    char cwd[4096];
    // Empty when the cwd is gone: a relative path given then is an error, not a guess.
    if (::getcwd(cwd, sizeof cwd) != nullptr) c.cwd = cwd;
    for (char** e = environ; *e != nullptr; ++e)
        c.environ.emplace_back(*e);
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    remember_arguments(argc, argv);
    auto parsed = parse_command_line(argc, argv);
    if (!parsed) return refuse(parsed.error());
    if (parsed->print) {
        std::fputs(parsed->print->c_str(), stdout);
        return 0;
    }
    const Invocation& invocation = parsed->invocation;
    if (invocation.status_fd && ::fcntl(*invocation.status_fd, F_GETFD) < 0) {
        return refuse(
            Error::from_errno("options", "--status-fd " + std::to_string(*invocation.status_fd)));
    }
    auto plan = make_plan(invocation, describe_caller());
    if (!plan) return refuse(plan.error(), invocation.status_fd);
    return run_sandbox(*plan);
}
