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

namespace nestbox::server {

class CollectingSink final : public ExecSink {
  public:
    asio::awaitable<bool> started(pid_t /*pid*/) override { co_return true; }
    asio::awaitable<bool> output(StreamId which, std::string data) override {
        (which == StreamId::Stdout ? stdout_ : stderr_) += data;
        co_return true;
    }
    std::string response_body(const ExecResult& r) const;

  private:
    std::string stdout_;
    std::string stderr_;
};

class NdjsonSink final : public ExecSink {
  public:
    NdjsonSink(Exchange& ex, std::string agent) : ex_(ex), agent_(std::move(agent)) {}

    asio::awaitable<bool> started(pid_t pid) override;
    asio::awaitable<bool> output(StreamId which, std::string data) override;
    // The exit event and the end of the chunked body.
    asio::awaitable<void> finish(const ExecResult& r);
    bool committed() const { return started_; }

  private:
    Exchange& ex_;
    std::string agent_;
    bool started_ = false;
    bool alive_ = true;
    std::vector<std::string> early_;  // output read before the started event, in order
};

}  // namespace nestbox::server
