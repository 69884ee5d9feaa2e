#include "src/server/stream.hpp"

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

asio::awaitable<bool> NdjsonSink::started(pid_t pid) {
    if (started_) co_return alive_;
    started_ = true;
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
    std::string line = w.take() + "\n";
    for (const std::string& early : early_)
        line += early;
    early_.clear();
    if (alive_) alive_ = co_await ex_.out.chunk(line);
    co_return alive_;
}

asio::awaitable<bool> NdjsonSink::output(StreamId which, std::string data) {
    if (!started_) {
        early_.push_back(output_event(which, data));
        co_return true;
    }
    if (alive_) alive_ = co_await ex_.out.chunk(output_event(which, data));
    co_return alive_;
}

asio::awaitable<void> NdjsonSink::finish(const ExecResult& r) {
    if (!started_) (void)co_await started(0);
    if (!alive_) co_return;
    JsonWriter w;
    w.begin_object().field("type", "exit");
    r.write_fields(w);
    w.end_object();
    if (co_await ex_.out.chunk(w.take() + "\n")) (void)co_await ex_.out.finish_chunked();
}

}  // namespace nestbox::server
