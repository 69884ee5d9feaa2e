// The two pipes between the launcher (outside) and the sandbox's init (inside).
//
//   release: launcher -> init, one byte once the launcher's part of the setup, which runs in
//            parallel with init's (the cgroup v1 groups), is done. Init waits for it only before
//            entering the new root, the last moment it could still join a v1 group by path.
//            End-of-file instead means the launcher is gone, and init exits.
//   report:  init -> launcher, fixed-size records: setup failed (with the error), command
//            started, command exited (with its wait status).
#pragma once

#include <limits.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "src/core/error.hpp"
#include "src/core/unique_fd.hpp"

namespace nestbox::launcher {

struct Report {
    enum class Kind : std::uint32_t { SetupFailed = 1, Started = 2, Exited = 3 };
    Kind kind = Kind::SetupFailed;
    std::int32_t pid = 0;          // Started: the command's pid inside the sandbox (unused outside)
    std::int32_t wait_status = 0;  // Exited: as from wait4()
    std::int32_t error_code = 0;   // SetupFailed: errno
    char step[32] = {};            // SetupFailed: the stage, "mounts"
    char message[464] = {};        // SetupFailed: "bind /usr -> /usr"
};
// Records no larger than PIPE_BUF are written atomically, so a reader never sees half of one.
static_assert(sizeof(Report) <= PIPE_BUF);

// What the release byte says.
enum class Release : char { WithCgroup = 'c', WithoutCgroup = 'n' };

class Channel {
  public:
    static Result<Channel> create();

    // Launcher side, after clone.
    void close_init_ends();
    Result<void> release(Release how);
    int report_fd() const { return report_read_.get(); }
    // One record, or nullopt at end-of-file (init has exited and nothing is left).
    std::optional<Report> read_report();

    // Init side.
    void close_launcher_ends();
    // nullopt if the launcher is gone.
    std::optional<Release> wait_for_release();
    // False once the launcher has exited (its end of the report pipe is closed).
    bool launcher_alive() const;
    void send(const Report& r) const;
    void send_error(const Error& e) const;
    int release_fd() const { return release_read_.get(); }
    int report_write_fd() const { return report_write_.get(); }

  private:
    UniqueFd release_read_, release_write_;
    UniqueFd report_read_, report_write_;
};

}  // namespace nestbox::launcher
