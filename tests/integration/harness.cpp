#include "tests/integration/harness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

namespace nestbox::test {

namespace fs = std::filesystem;

const boost::json::object* RunResult::event(std::string_view name) const {
    for (const auto& e : events) {
        if (const auto* v = e.if_contains("event");
            v != nullptr && v->is_string() && v->get_string() == name) {
            return &e;
        }
    }
    return nullptr;
}

boost::json::object RunResult::exited() const {
    const auto* e = event("exited");
    return e != nullptr ? *e : boost::json::object{};
}

boost::json::value RunResult::out_json() const {
    boost::system::error_code ec;
    auto v = boost::json::parse(out, ec);
    if (ec) throw std::runtime_error("stdout is not JSON: " + out + "\nstderr: " + err);
    return v;
}

std::vector<char*> exec_argv(std::vector<std::string>& argv) {
    std::vector<char*> out;
    out.reserve(argv.size() + 1);
    for (auto& a : argv)
        out.push_back(a.data());
    out.push_back(nullptr);
    return out;
}

const Binaries& binaries() {
    static const Binaries b = [] {
        const char* nestbox = std::getenv("NESTBOX");
        const char* probe = std::getenv("NESTBOX_PROBE");
        if (nestbox == nullptr || probe == nullptr) {
            throw std::runtime_error("NESTBOX and NESTBOX_PROBE must name the binaries under test");
        }
        Binaries out;
        char tmpl[] = "/tmp/nestbox-it-XXXXXX";
        if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
        out.dir = tmpl;
        chmod(tmpl, 0755);
        out.nestbox = out.dir + "/nestbox";
        out.probe = out.dir + "/probe";
        fs::copy_file(nestbox, out.nestbox);
        fs::copy_file(probe, out.probe);
        chmod(out.nestbox.c_str(), 0755);
        chmod(out.probe.c_str(), 0755);
        return out;
    }();
    // Registered once `b` is fully built, so that it runs before b's destructor: registered from
    // inside the initializer it ran after it, on a destroyed string, and the copies stayed in /tmp.
    static const bool cleanup_registered = std::atexit([] { fs::remove_all(binaries().dir); }) == 0;
    (void)cleanup_registered;
    return b;
}

std::vector<std::string> with_probe(std::vector<std::string> args) {
    std::vector<std::string> out = {"--ro-bind", binaries().probe, "/probe"};
    out.insert(out.end(), args.begin(), args.end());
    return out;
}

namespace {

void read_into(int fd, std::string& out) {
    char buf[65536];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
}

}  // namespace

RunResult run_nestbox(const std::vector<std::string>& args, const RunOptions& o) {
    int out_pipe[2], err_pipe[2], status_pipe[2], in_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(status_pipe, O_CLOEXEC) ||
        pipe2(in_pipe, O_CLOEXEC)) {
        throw std::runtime_error("pipe2 failed");
    }
    std::vector<std::string> argv = {binaries().nestbox};
    if (o.status_fd) argv.insert(argv.end(), {"--status-fd", "3"});
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv = exec_argv(argv);

    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(o.stdin_fd >= 0 ? o.stdin_fd : in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        dup2(status_pipe[1], 3);
        if (o.leak_fds) {
            // Inheritable fds a careless caller might hand over: they must not reach the command.
            for (int i = 0; i < 3; ++i)
                (void)open("/etc/hostname", O_RDONLY);  // NOLINT(android-cloexec-open)
            (void)!dup(1);                              // NOLINT(android-cloexec-dup)
        }
        if (o.as_uid) {
            if (setgroups(0, nullptr) != 0 || setresgid(*o.as_uid, *o.as_uid, *o.as_uid) != 0 ||
                setresuid(*o.as_uid, *o.as_uid, *o.as_uid) != 0) {
                _exit(99);
            }
        }
        if (chdir(binaries().dir.c_str()) != 0) _exit(98);
        if (o.before_exec && !o.before_exec()) _exit(96);
        execv(cargv[0], cargv.data());
        _exit(97);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    close(status_pipe[1]);
    close(in_pipe[0]);
    if (!o.stdin_data.empty()) (void)!write(in_pipe[1], o.stdin_data.data(), o.stdin_data.size());
    close(in_pipe[1]);

    RunResult r;
    r.pid = pid;
    std::string status_text;
    const auto deadline = start + o.timeout;
    bool open_fds[3] = {true, true, true};
    const int fds[3] = {out_pipe[0], err_pipe[0], status_pipe[0]};
    std::string* sinks[3] = {&r.out, &r.err, &status_text};
    while (open_fds[0] || open_fds[1] || open_fds[2]) {
        pollfd p[3];
        for (int i = 0; i < 3; ++i)
            p[i] = {open_fds[i] ? fds[i] : -1, POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        if (poll(p, 3, static_cast<int>(left.count())) <= 0) continue;
        for (int i = 0; i < 3; ++i) {
            if ((p[i].revents & (POLLIN | POLLHUP)) == 0) continue;
            const std::size_t before = sinks[i]->size();
            read_into(fds[i], *sinks[i]);
            if (sinks[i]->size() == before) open_fds[i] = false;
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int fd : fds)
        close(fd);
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
    std::size_t pos = 0;
    while (pos < status_text.size()) {
        const std::size_t end = status_text.find('\n', pos);
        const std::string line = status_text.substr(pos, end - pos);
        pos = end == std::string::npos ? status_text.size() : end + 1;
        if (line.empty()) continue;
        boost::system::error_code ec;
        auto v = boost::json::parse(line, ec);
        if (ec || !v.is_object()) throw std::runtime_error("bad status line: " + line);
        r.events.push_back(v.get_object());
    }
    return r;
}

TempDir::TempDir(std::optional<uid_t> owner) {
    char tmpl[] = "/tmp/nestbox-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
    if (owner) {
        if (chown(tmpl, *owner, *owner) != 0) throw std::runtime_error("chown failed");
    }
    chmod(tmpl, 0755);
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

std::vector<pid_t> processes_named(const std::string& name) {
    std::vector<pid_t> out;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string pid = entry.path().filename();
        if (pid.empty() || pid[0] < '0' || pid[0] > '9') continue;
        std::ifstream comm(entry.path() / "comm");
        std::string line;
        std::getline(comm, line);
        if (line == name) out.push_back(std::stoi(pid));
    }
    return out;
}

std::string unique_name(const std::string& prefix) {
    static std::mt19937 rng(std::random_device{}());
    return prefix + std::to_string(rng() % 1000000);
}

std::vector<std::string> cgroups_of(pid_t launcher_pid) {
    std::vector<std::string> out;
    const std::string needle = "nbx-" + std::to_string(launcher_pid) + "-";
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(
             "/sys/fs/cgroup", fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (!it->is_directory(ec)) continue;
        if (it->path().filename().string().starts_with(needle)) out.push_back(it->path());
    }
    return out;
}

bool is_root() {
    return geteuid() == 0;
}

}  // namespace nestbox::test
