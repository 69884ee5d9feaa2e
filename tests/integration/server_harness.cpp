#include "tests/integration/server_harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/harness.hpp"

namespace nestbox::test {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

boost::json::value HttpResponse::json() const {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    if (ec)
        throw std::runtime_error("response is not JSON (status " + std::to_string(status) +
                                 "): " + body);
    return v;
}

std::string HttpResponse::error_code() const {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    if (ec || !v.is_object()) return "";
    const auto* e = v.as_object().if_contains("error");
    if (e == nullptr || !e->is_object()) return "";
    const auto* c = e->as_object().if_contains("code");
    return c != nullptr && c->is_string() ? std::string(c->as_string()) : "";
}

std::uint16_t free_port() {
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        throw std::runtime_error("cannot find a free port");
    }
    close(s);
    return ntohs(addr.sin_port);
}

Server::Server(std::vector<std::string> args, bool wait_ready)
    : Server(std::move(args), ServerOptions{.wait_ready = wait_ready}) {}

Server::Server(std::vector<std::string> args, ServerOptions options)
    : args_(std::move(args)), options_(std::move(options)) {
    char tmpl[] = "/tmp/nestboxd-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    root_ = dir_ + "/workspaces";
    port_ = free_port();
    start(options_.wait_ready);
}

Server::~Server() {
    if (running()) stop();
    if (const std::string report = sanitizer_report(); !report.empty())
        ADD_FAILURE() << "nestboxd: " << report;
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

void Server::start(bool wait_ready) {
    const char* server = std::getenv("NESTBOXD");
    if (server == nullptr) throw std::runtime_error("NESTBOXD must name the server under test");
    std::vector<std::string> argv = {server,
                                     "--listen",
                                     "127.0.0.1:" + std::to_string(port_),
                                     "--workspace-root",
                                     root_,
                                     "--launcher",
                                     binaries().nestbox};
    argv.insert(argv.end(), args_.begin(), args_.end());
    std::vector<char*> cargv = exec_argv(argv);
    const std::string log_path = dir_ + "/server.log";
    if (options_.pid_namespace) {
        // fork() cannot make the child PID 1 of a new namespace (unshare(CLONE_NEWPID) applies to
        // the caller's later children only): clone3 as a plain fork with CLONE_NEWPID does.
        clone_args args{};
        args.flags = CLONE_NEWPID;
        args.exit_signal = SIGCHLD;
        pid_ = static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
        if (pid_ < 0) throw std::runtime_error("clone3(CLONE_NEWPID) failed");
    } else {
        pid_ = fork();
    }
    if (pid_ == 0) {
        const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        dup2(log, 2);
        const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        dup2(null, 0);
        dup2(null, 1);
        if (options_.before_exec && !options_.before_exec()) _exit(96);
        execv(cargv[0], cargv.data());
        _exit(97);
    }
    if (!wait_ready) return;
    for (int i = 0; i < 400; ++i) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = 0;
            throw std::runtime_error("nestboxd exited at start-up: " + log());
        }
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port_);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        close(fd);
        if (up) return;
        std::this_thread::sleep_for(25ms);
    }
    throw std::runtime_error("nestboxd did not start listening: " + log());
}

bool Server::running() const {
    return pid_ > 0;
}

void Server::stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    wait_exit();
}

bool Server::stop_within(std::chrono::milliseconds limit) {
    if (pid_ <= 0) return true;
    kill(pid_, SIGTERM);
    for (auto deadline = std::chrono::steady_clock::now() + limit;
         std::chrono::steady_clock::now() < deadline;) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = 0;
            return true;
        }
        std::this_thread::sleep_for(20ms);
    }
    kill_hard();
    return false;
}

void Server::kill_hard() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    wait_exit();
}

int Server::wait_exit() {
    int status = 0;
    if (pid_ > 0) waitpid(pid_, &status, 0);
    pid_ = 0;
    return status;
}

void Server::restart() {
    if (running()) stop();
    start(true);
}

std::string Server::log() const {
    std::ifstream in(dir_ + "/server.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string Server::sanitizer_report() const {
    const std::string text = log();
    for (const char* marker :
         {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"}) {
        if (const auto at = text.find(marker); at != std::string::npos) {
            const auto line = text.rfind('\n', at);
            return text.substr(line == std::string::npos ? 0 : line + 1, 2000);
        }
    }
    return "";
}

int Server::connect() const {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

HttpResponse Server::request(const std::string& method, const std::string& target,
                             const std::string& body,
                             const std::map<std::string, std::string>& headers) const {
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    stream.expires_after(120s);
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers)
        req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ULL << 30);
    http::read(stream, buffer, parser);
    HttpResponse out;
    out.status = static_cast<int>(parser.get().result_int());
    for (const auto& f : parser.get()) {
        std::string name(f.name_string());
        for (char& c : name)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out.headers[name] = std::string(f.value());
    }
    out.body = parser.get().body();
    beast::error_code ec;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    return out;
}

HttpResponse Server::post(const std::string& target, const boost::json::value& body,
                          const std::map<std::string, std::string>& headers) const {
    return request("POST", target, boost::json::serialize(body), headers);
}

boost::json::object exec(const Server& s, const std::string& agent, const std::string& command,
                         boost::json::object extra) {
    extra["agent_id"] = agent;
    extra["command"] = command;
    HttpResponse r = s.post("/exec", extra);
    if (r.status != 200)
        throw std::runtime_error("/exec answered " + std::to_string(r.status) + ": " + r.body);
    return r.json().as_object();
}

}  // namespace nestbox::test
