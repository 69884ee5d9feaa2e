#include "src/server/stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "src/core/json_writer.hpp"

namespace nestbox::server {

namespace {

std::string output_event(StreamId which, const std::string& data) {
    JsonWriter w;
    w.begin_object()
        .field("type", which == StreamId::Stdout ? "stdout" : "stderr")
        .field("data", data)
        .end_object();
    std::string line = w.take();
    line += '\n';
    return line;
}

}  // namespace

std::string CollectingSink::response_body(const ExecResult& r) const {
    JsonWriter w;
    w.begin_object().field("stdout", stdout_).field("stderr", stderr_);
    r.write_fields(w);
    w.end_object();
    return w.take();
}

asio::awaitable<bool> NdjsonSink::send(std::string lines) {
    queue_ += lines;
    while (writing_) {
        if (queue_.size() <= kBacklog) co_return alive_;  // the writer will take it
        drained_.expires_at(asio::steady_timer::time_point::max());
        (void)co_await drained_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    writing_ = true;
    while (!queue_.empty() && alive_) {
        alive_ = co_await ex_.out.chunk(std::exchange(queue_, {}));
        drained_.cancel();
    }
    if (!alive_) queue_.clear();
    writing_ = false;
    drained_.cancel();
    co_return alive_;
}

asio::awaitable<bool> NdjsonSink::started(pid_t pid) {
    if (state_ != State::Pending) co_return alive_;
    // Output that arrives while the header is written still queues behind the start event.
    state_ = State::Starting;
    http::response<http::empty_body> header{http::status::ok, ex_.req.version()};
    header.set(http::field::content_type, "application/x-ndjson");
    header.set(http::field::cache_control, "no-store");
    header.keep_alive(ex_.req.keep_alive());
    ex_.status = 200;
    alive_ = co_await ex_.out.start_chunked(std::move(header));
    JsonWriter w;
    w.begin_object()
        .field("type", "start")
        .field("agent_id", agent_)
        .field("pid", static_cast<std::int64_t>(pid))
        .end_object();
    std::string lines = w.take() + "\n" + std::exchange(early_, {});
    state_ = State::Streaming;
    co_return co_await send(std::move(lines));
}

asio::awaitable<bool> NdjsonSink::output(StreamId which, std::string data) {
    if (state_ != State::Streaming) {
        early_ += output_event(which, data);
        co_return true;
    }
    co_return co_await send(output_event(which, data));
}

// finish() and fail() each write their last event themselves: with a shared coroutine helper
// for these two lines, GCC 12 resumed the caller at the wrong point (UBSan: "invalid vptr").
asio::awaitable<void> NdjsonSink::finish(const ExecResult& r) {
    JsonWriter w;
    w.begin_object().field("type", "exit");
    r.write_fields(w);
    w.end_object();
    if (state_ == State::Pending) (void)co_await started(0);
    if (co_await send(w.take() + "\n")) (void)co_await ex_.out.finish_chunked();
}

asio::awaitable<void> NdjsonSink::fail(const ApiError& e) {
    JsonWriter w;
    w.begin_object().field("type", "error");
    e.write_field(w);
    w.end_object();
    if (state_ == State::Pending) (void)co_await started(0);
    if (co_await send(w.take() + "\n")) (void)co_await ex_.out.finish_chunked();
}

}  // namespace nestbox::server
