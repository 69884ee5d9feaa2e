// Runs the real nestbox binary the way a caller would and collects what it did.
#pragma once

#include <sys/types.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nestbox::test {

struct RunOptions {
    std::optional<uid_t> as_uid;  // run nestbox unprivileged (rootless mode) as this uid
    std::string stdin_data;
    int stdin_fd = -1;      // instead of stdin_data: this fd (e.g. a pty slave)
    bool leak_fds = false;  // open extra fds without CLOEXEC before exec
    bool status_fd = true;  // pass --status-fd 3 and collect the events
    std::chrono::milliseconds timeout{60000};
    // Runs in the forked child right before nestbox is executed, to start it somewhere special
    // (the VM tests: inside a cgroup namespace, as a container's process). Returns false to fail
    // the run (nestbox then never runs and the exit code is 96).
    std::function<bool()> before_exec;
};

struct RunResult {
    int exit_code = -1;   // nestbox's exit status, or -1 if it was killed
    int term_signal = 0;  // the signal that killed nestbox itself, if any
    pid_t pid = 0;        // nestbox's pid
    std::string out;
    std::string err;
    std::vector<boost::json::object> events;  // from --status-fd
    double seconds = 0;

    const boost::json::object* event(std::string_view name) const;
    boost::json::object exited() const;   // the exited event, or {} if there was none
    boost::json::value out_json() const;  // stdout parsed as JSON (the probe's report)
};

// Paths of the binaries under test, copied into a world-readable directory so that an
// unprivileged uid can run them whatever the build directory's permissions are.
struct Binaries {
    std::string dir;
    std::string nestbox;
    std::string probe;
};
const Binaries& binaries();

// `argv` as execv takes it: pointers into the strings, then a null. `argv` must outlive it.
std::vector<char*> exec_argv(std::vector<std::string>& argv);

// Runs nestbox with `args` (inserted after `--status-fd 3` when status_fd is set).
RunResult run_nestbox(const std::vector<std::string>& args, const RunOptions& options = {});

// The probe bound read-only at /probe, for the argument lists of run_nestbox.
std::vector<std::string> with_probe(std::vector<std::string> args);

// A uid for rootless tests that no other process on the host uses.
inline constexpr uid_t kTestUid = 4242;

// A temporary directory, removed on destruction; optionally owned by `owner`.
class TempDir {
  public:
    explicit TempDir(std::optional<uid_t> owner = std::nullopt);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// Host processes whose comm is `name` (daemons the tests start inside sandboxes).
std::vector<pid_t> processes_named(const std::string& name);

// A name unlikely to collide, short enough for a comm (15 bytes).
std::string unique_name(const std::string& prefix);

// cgroup directories named nbx-<pid>-* anywhere under /sys/fs/cgroup.
std::vector<std::string> cgroups_of(pid_t launcher_pid);

bool is_root();

}  // namespace nestbox::test
