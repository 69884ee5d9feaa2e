// A real nestboxd on loopback with a temporary workspace root, and a small HTTP client for it.
#pragma once

#include <sys/types.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nestbox::test {

struct HttpResponse {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;

    boost::json::value json() const;
    std::string error_code() const;  // error.code of an error body, or ""
};

// Where and how nestboxd is started, for tests that start it the way a deployment does.
struct ServerOptions {
    bool wait_ready = true;  // return once it accepts connections
    // Start it as PID 1 of a new PID namespace, as a container runtime starts a container's init.
    bool pid_namespace = false;
    // Runs in the child right before nestboxd is executed (after the new PID namespace is made,
    // so the child is its PID 1): to join a cgroup, enter other namespaces, mount. Returns false
    // to fail the start (the child then exits 96). Started without glibc's fork handlers when
    // pid_namespace is set, so it must not rely on a lock another thread of the test might hold.
    std::function<bool()> before_exec;
};

class Server {
  public:
    // Starts nestboxd with `args` added to the defaults (--listen, --workspace-root, --launcher).
    explicit Server(std::vector<std::string> args = {}, bool wait_ready = true);
    Server(std::vector<std::string> args, ServerOptions options);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    HttpResponse request(const std::string& method, const std::string& target,
                         const std::string& body = {},
                         const std::map<std::string, std::string>& headers = {}) const;
    HttpResponse post(const std::string& target, const boost::json::value& body,
                      const std::map<std::string, std::string>& headers = {}) const;
    HttpResponse get(const std::string& target,
                     const std::map<std::string, std::string>& headers = {}) const {
        return request("GET", target, {}, headers);
    }

    // An open TCP connection to the server, for tests that speak raw HTTP.
    int connect() const;

    void stop();  // SIGTERM and wait
    // SIGTERM, and false if the server has not exited `limit` later (it is then SIGKILLed).
    bool stop_within(std::chrono::milliseconds limit);
    void kill_hard();  // SIGKILL and wait
    int wait_exit();   // the exit status after stop()
    void restart();    // start again with the same arguments, options and workspace root
    bool running() const;

    std::uint16_t port() const { return port_; }
    pid_t pid() const { return pid_; }  // in the test's PID namespace
    const std::string& workspace_root() const { return root_; }
    std::string log() const;  // what nestboxd wrote to stderr
    // The first sanitizer report in the log (built with -Db_sanitize), or "": a server that
    // carries on after a UBSan finding, or dies of an ASan one, fails the test that saw it.
    std::string sanitizer_report() const;

  private:
    void start(bool wait_ready);

    std::vector<std::string> args_;
    ServerOptions options_;
    std::string dir_;
    std::string root_;
    std::uint16_t port_ = 0;
    pid_t pid_ = 0;
};

// Runs `command` for `agent` through /exec and returns the parsed response (status must be 200).
boost::json::object exec(const Server& s, const std::string& agent, const std::string& command,
                         boost::json::object extra = {});

std::uint16_t free_port();

}  // namespace nestbox::test
