// How an exec's output reaches the client: collected for /exec, or as NDJSON events for
// /exec-stream, flushed as they come:
//   {"type":"start","agent_id":"a","pid":1234}
//   {"type":"stdout","data":"line\n"}   {"type":"stderr","data":"..."}
//   {"type":"exit", ...the /exec response fields but stdout and stderr...}
// The 200 is only committed once the launcher reports the command started, so a sandbox that
// cannot be set up still gets a proper 500.
#pragma once

#include <string>
#include <vector>

#include "src/server/exec.hpp"
#include "src/server/http.hpp"

#include <boost/asio/steady_timer.hpp>

namespace nestbox::server {

class CollectingSink final : public ExecSink {
  public:
    asio::awaitable<bool> started(pid_t /*pid*/) override { co_return true; }
    asio::awaitable<bool> output(StreamId which, std::string data) override {
        (which == StreamId::Stdout ? stdout_ : stderr_) += data;
        co_return true;
    }
    std::string response_body(const ExecResult& r) const;
    const std::string& stdout_text() const { return stdout_; }
    const std::string& stderr_text() const { return stderr_; }

  private:
    std::string stdout_;
    std::string stderr_;
};

// stdout and stderr are pumped concurrently, but a socket takes one write at a time: events are
// queued, and whichever pump finds no write in flight sends the whole queue as one chunk. A pump
// waits while the queue is large, so a slow client slows the command instead of growing memory.
class NdjsonSink final : public ExecSink {
  public:
    NdjsonSink(Exchange& ex, std::string agent, const asio::any_io_executor& executor)
        : ex_(ex), agent_(std::move(agent)), drained_(executor) {}

    asio::awaitable<bool> started(pid_t pid) override;
    asio::awaitable<bool> output(StreamId which, std::string data) override;
    // The exit event and the end of the chunked body.
    asio::awaitable<void> finish(const ExecResult& r);
    // After the 200 is committed an error can only be told in the stream: an error event
    // ({"type":"error","error":{"code","message"}}) instead of the exit event, then the end.
    asio::awaitable<void> fail(const ApiError& e);
    bool committed() const { return state_ != State::Pending; }

  private:
    enum class State { Pending, Starting, Streaming };
    asio::awaitable<bool> send(std::string lines);

    static constexpr std::size_t kBacklog = 256 << 10;
    Exchange& ex_;
    std::string agent_;
    State state_ = State::Pending;
    bool alive_ = true;
    bool writing_ = false;
    std::string queue_;           // events waiting for the write in flight
    std::string early_;           // output read before the started event, in order
    asio::steady_timer drained_;  // cancelled after each write: wakes waiting pumps
};

}  // namespace nestbox::server
