// nestboxd over HTTP, against a real server on loopback: every endpoint, every error status, and
// the attacks the contract promises to contain (another agent's files, symlinks, slow and
// vanishing clients, oversized bodies, races).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "src/core/base64.hpp"
#include "tests/integration/harness.hpp"
#include "tests/integration/server_harness.hpp"

namespace nestbox::test {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ServerTest : public testing::Test {
  protected:
    void SetUp() override {
        if (!is_root()) GTEST_SKIP() << "nestboxd runs as root";
    }
    void TearDown() override;
};

// One server for the tests that do not need their own configuration.
Server* shared_instance = nullptr;
Server& shared_server() {
    static Server s({"--max-concurrent", "8"});
    shared_instance = &s;
    return s;
}

// The shared server lives until exit, after the last test: each test checks what it did to it.
void ServerTest::TearDown() {
    if (shared_instance != nullptr) {
        EXPECT_EQ(shared_instance->sanitizer_report(), "");
    }
}

std::string out_of(const json::object& r) {
    return std::string(r.at("stdout").as_string());
}

std::string read_all(int fd, std::chrono::milliseconds limit = 10s) {
    std::string out;
    timeval tv{static_cast<long>(limit.count() / 1000),
               static_cast<long>(limit.count() % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    ssize_t n = 0;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        out.append(buf, static_cast<std::size_t>(n));
    return out;
}

// --- /healthz, /metrics, routing ---------------------------------------------------------------

TEST_F(ServerTest, HealthzReportsTheIsolationThisHostGives) {
    HttpResponse r = shared_server().get("/healthz");
    ASSERT_EQ(r.status, 200) << r.body;
    const json::value parsed = r.json();
    const json::object& h = parsed.as_object();
    EXPECT_EQ(h.at("status").as_string(), "ok");
    const json::object& iso = h.at("isolation").as_object();
    // This machine's memory, cpu and pids controllers are on cgroup v1.
    EXPECT_EQ(iso.at("cgroup").as_string(), "v1");
    EXPECT_TRUE(iso.at("seccomp").as_bool());
    EXPECT_EQ(iso.at("namespaces").as_array().size(), 6u);
    bool warns_no_token = false;
    for (const auto& w : h.at("warnings").as_array())
        warns_no_token |= std::string(w.as_string()).find("no token") != std::string::npos;
    EXPECT_TRUE(warns_no_token);
}

TEST_F(ServerTest, UnknownPathsAre404AndWrongMethods405) {
    EXPECT_EQ(shared_server().get("/nope").status, 404);
    EXPECT_EQ(shared_server().get("/nope").error_code(), "not_found");
    HttpResponse r = shared_server().get("/exec");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.headers["allow"], "POST");
    EXPECT_EQ(r.headers["cache-control"], "no-store");
    EXPECT_EQ(r.error_code(), "method_not_allowed");
    EXPECT_EQ(shared_server().request("DELETE", "/healthz").status, 405);
}

TEST_F(ServerTest, MetricsCountRequestsAndExecs) {
    exec(shared_server(), "metrics-agent", "true");
    // A request is counted once its answer is sent, so the client may ask before it is.
    const std::string counted =
        R"(nestboxd_requests_total{route="/exec",method="POST",status="200"})";
    HttpResponse r = shared_server().get("/metrics");
    for (int i = 0; i < 100 && r.body.find(counted) == std::string::npos; ++i) {
        std::this_thread::sleep_for(10ms);
        r = shared_server().get("/metrics");
    }
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.headers["content-type"].rfind("text/plain", 0), 0u);
    for (const char* series :
         {counted.c_str(), "nestboxd_exec_total", "nestboxd_exec_duration_seconds_bucket",
          "nestboxd_active_sandboxes", "nestboxd_exec_timeouts_total", "nestboxd_oom_kills_total",
          "nestboxd_output_truncations_total"}) {
        EXPECT_NE(r.body.find(series), std::string::npos) << series;
    }
}

// --- /exec -------------------------------------------------------------------------------------

TEST_F(ServerTest, ExecRunsACommandAndReportsEverything) {
    const json::object r = exec(shared_server(), "exec-agent", "echo out; echo err >&2; exit 3");
    EXPECT_EQ(out_of(r), "out\n");
    EXPECT_EQ(r.at("stderr").as_string(), "err\n");
    EXPECT_EQ(r.at("exit_code").as_int64(), 3);
    EXPECT_TRUE(r.at("signal").is_null());
    EXPECT_FALSE(r.at("timed_out").as_bool());
    EXPECT_FALSE(r.at("oom_killed").as_bool());
    EXPECT_TRUE(r.at("usage").as_object().contains("cpu_ms"));
    EXPECT_TRUE(r.at("duration_ms").is_int64() || r.at("duration_ms").is_uint64());
}

TEST_F(ServerTest, ExecTakesArgvStdinCwdAndFiles) {
    json::object r = exec(shared_server(), "io-agent", "cat; python3 main.py; pwd",
                          {{"stdin", "from stdin\n"},
                           {"cwd", "proj/src"},
                           {"files", {{"proj/src/main.py", "print(6*7)\n"}}}});
    EXPECT_EQ(out_of(r), "from stdin\n42\n/workspace/proj/src\n") << r.at("stderr").as_string();
    HttpResponse a = shared_server().post(
        "/exec", {{"agent_id", "io-agent"}, {"argv", {"printf", "%s|", "a b", "$HOME"}}});
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.json().at("stdout").as_string(), "a b|$HOME|");  // no shell: nothing expanded
}

TEST_F(ServerTest, TheEnvironmentIsCleanAndTheAgentsOwn) {
    const json::object r =
        exec(shared_server(), "env-agent", "env | sort",
             {{"env", {{"GREETING", "hi"}}}, {"secret_env", {{"TOKEN", "s3cr3t-value"}}}});
    const std::string env = out_of(r);
    EXPECT_NE(env.find("AGENT_ID=env-agent\n"), std::string::npos) << env;
    EXPECT_NE(env.find("HOME=/workspace\n"), std::string::npos);
    EXPECT_NE(env.find("GREETING=hi\n"), std::string::npos);
    EXPECT_NE(env.find("TOKEN=[REDACTED]\n"),
              std::string::npos);  // present, and redacted on the way out
    EXPECT_EQ(env.find("NESTBOXD"), std::string::npos)
        << "the server's environment leaked: " << env;
}

TEST_F(ServerTest, AgentIdMayComeFromEnvForToolboxClients) {
    HttpResponse r = shared_server().post(
        "/exec", {{"command", "echo $AGENT_ID"}, {"env", {{"AGENT_ID", "toolbox-agent"}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json().at("stdout").as_string(), "toolbox-agent\n");
}

TEST_F(ServerTest, BadExecRequestsAre400NamingTheFieldAndRunNothing) {
    struct Case {
        std::string body;
        std::string mentions;
    };
    const std::vector<Case> cases = {
        {R"({"command":"true"})", "agent_id"},
        {R"({"agent_id":"..","command":"true"})", "agent_id"},
        {R"({"agent_id":".hidden","command":"true"})", "agent_id"},
        {R"({"agent_id":"a/b","command":"true"})", "agent_id"},
        {R"({"agent_id":")" + std::string(129, 'a') + R"(","command":"true"})", "agent_id"},
        {R"({"agent_id":"bad-req"})", "command and argv"},
        {R"({"agent_id":"bad-req","command":"true","argv":["true"]})", "command and argv"},
        {R"({"agent_id":"bad-req","command":5})", "command"},
        {R"({"agent_id":"bad-req","command":"true","timeout_sec":"soon"})", "timeout_sec"},
        {R"({"agent_id":"bad-req","command":"true","timeout_sec":-1})", "timeout_sec"},
        {R"({"agent_id":"bad-req","command":"true","max_output_bytes":0})", "max_output_bytes"},
        {R"({"agent_id":"bad-req","command":"true","cgroup":{"memory_mb":"lots"}})",
         "cgroup.memory_mb"},
        {R"({"agent_id":"bad-req","command":"true","cgroup":{"max_pids":1}})", "cgroup.max_pids"},
        {R"({"agent_id":"bad-req","command":"true","env":{"A=B":"x"}})", "env"},
        {R"({"agent_id":"bad-req","command":"true","env":{"A":1}})", "env.A"},
        {R"({"agent_id":"bad-req","command":"true","files":{"../escape":"x"}})", "escape"},
        {R"({"agent_id":"bad-req","command":"tr\u0000ue"})", "NUL"},
        {R"({"agent_id":"bad-req","command":"true")", "JSON"},
        {R"({"agent_id":"bad-req","command":"true"} trailing)", "JSON"},
        {R"([1,2,3])", "object"},
        {std::string(100000, '['), "JSON"},
        {"{\"agent_id\":\"bad-req\",\"command\":\"\xff\xfe\"}", "JSON"},
    };
    for (const Case& c : cases) {
        HttpResponse r = shared_server().request("POST", "/exec", c.body);
        EXPECT_TRUE(r.status == 400 || r.status == 403)
            << c.body.substr(0, 80) << " -> " << r.status;
        EXPECT_NE(r.body.find(c.mentions), std::string::npos)
            << c.body.substr(0, 80) << " -> " << r.body;
    }
    // Nothing was written for the rejected files request.
    EXPECT_FALSE(fs::exists(shared_server().workspace_root() + "/escape"));
    EXPECT_EQ(shared_server().get("/healthz").status, 200);  // and the server is still up
}

TEST_F(ServerTest, AFailingCommandIsA200WithItsExitCode) {
    const json::object r = exec(shared_server(), "fail-agent", "no-such-command-here");
    EXPECT_EQ(r.at("exit_code").as_int64(), 127);
    const json::object k = exec(shared_server(), "fail-agent", "kill -KILL $$");
    EXPECT_EQ(k.at("exit_code").as_int64(), 137);
    EXPECT_EQ(k.at("signal").as_string(), "SIGKILL");
}

TEST_F(ServerTest, TimeoutKillsTheWholeSandbox) {
    const std::string daemon = unique_name("nbxsrv");
    const json::object r =
        exec(shared_server(), "timeout-agent",
             "cp /bin/sleep /tmp/" + daemon + " && setsid /tmp/" + daemon + " 1000 & sleep 30",
             {{"timeout_sec", 1}});
    EXPECT_TRUE(r.at("timed_out").as_bool());
    EXPECT_EQ(r.at("exit_code").as_int64(), 137);
    EXPECT_LT(r.at("duration_ms").as_int64(), 5000);
    EXPECT_TRUE(processes_named(daemon).empty()) << "the setsid daemon outlived its sandbox";
}

TEST_F(ServerTest, OutputIsCappedAndDrained) {
    const json::object r =
        exec(shared_server(), "cap-agent", "head -c 1000000 /dev/zero | tr '\\0' x; echo done >&2",
             {{"max_output_bytes", 1000}});
    EXPECT_EQ(out_of(r).size(), 1000u);
    EXPECT_TRUE(r.at("stdout_truncated").as_bool());
    EXPECT_FALSE(r.at("stderr_truncated").as_bool());
    EXPECT_EQ(r.at("stderr").as_string(), "done\n");
    EXPECT_EQ(r.at("exit_code").as_int64(), 0);  // the writer was never blocked
}

TEST_F(ServerTest, SecretsAreRedactedEvenWhenSplitAcrossReads) {
    const json::object secrets{{"API_KEY", "hunter22-secret"}};
    const json::object r =
        exec(shared_server(), "redact-agent",
             "printf 'key=hunter2'; sleep 0.3; printf '2-secret!\\n'", {{"secret_env", secrets}});
    EXPECT_EQ(out_of(r), "key=[REDACTED]!\n");
    HttpResponse s = shared_server().post(
        "/exec-stream", {{"agent_id", "redact-agent"},
                         {"secret_env", secrets},
                         {"command", "printf 'hunter'; sleep 0.3; printf '22-secret\\n'"}});
    EXPECT_EQ(s.body.find("hunter"), std::string::npos) << s.body;
    EXPECT_NE(s.body.find("[REDACTED]"), std::string::npos) << s.body;
    // Nor does the secret reach the server's log, though the command named it literally.
    exec(shared_server(), "redact-agent", "echo hunter22-secret", {{"secret_env", secrets}});
    EXPECT_EQ(shared_server().log().find("hunter22-secret"), std::string::npos);
}

TEST_F(ServerTest, InvalidUtf8OutputIsReplaced) {
    const json::object r = exec(shared_server(), "utf8-agent", R"(printf 'a\377b\342\202\254')");
    EXPECT_EQ(out_of(r),
              "a\xEF\xBF\xBD"
              "b\xE2\x82\xAC");
}

TEST_F(ServerTest, ArtifactsListWhatTheCommandMadeWithMimeTypes) {
    const json::object r =
        exec(shared_server(), "art-agent",
             "mkdir -p out && echo hi > out/note.txt && printf '%%PDF-1.4\\n' > out/doc.pdf",
             {{"artifact_dir", "out"}});
    std::map<std::string, std::string> seen;
    for (const auto& a : r.at("artifacts").as_array()) {
        seen[std::string(a.at("path").as_string())] = std::string(a.at("mime_type").as_string());
    }
    EXPECT_EQ(seen["/workspace/out/note.txt"], "text/plain");
    EXPECT_EQ(seen["/workspace/out/doc.pdf"], "application/pdf");
    // Unchanged files are not artifacts the second time.
    const json::object again =
        exec(shared_server(), "art-agent", "true", {{"artifact_dir", "out"}});
    EXPECT_TRUE(again.at("artifacts").as_array().empty());
}

TEST_F(ServerTest, NetworkIsLoopbackOnlyUnlessTheServerAllowsIt) {
    const json::object r =
        exec(shared_server(), "net-agent", "cat /proc/net/dev | tail -n +3 | cut -d: -f1",
             {{"network", true}});
    EXPECT_EQ(out_of(r), "    lo\n");
}

TEST_F(ServerTest, MemoryLimitOomKillsAndSaysSo) {
    const json::object r =
        exec(shared_server(), "oom-agent", "python3 -c 'x = bytearray(512 << 20)'",
             {{"cgroup", {{"memory_mb", 64}}}});
    EXPECT_TRUE(r.at("oom_killed").as_bool()) << r;
    EXPECT_EQ(r.at("exit_code").as_int64(), 137);
}

// --- /exec-stream ------------------------------------------------------------------------------

std::vector<json::object> ndjson(const std::string& body) {
    std::vector<json::object> out;
    std::size_t pos = 0;
    while (pos < body.size()) {
        const std::size_t end = body.find('\n', pos);
        out.push_back(json::parse(body.substr(pos, end - pos)).as_object());
        pos = end + 1;
    }
    return out;
}

// Sends a POST by hand on a new connection and returns it, for tests that watch a stream arrive.
int post_raw(const Server& s, const std::string& target, const std::string& body,
             bool close_after = true) {
    const int fd = s.connect();
    const std::string req = "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n" +
                            (close_after ? "Connection: close\r\n" : "") + "\r\n" + body;
    if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size()))
        throw std::runtime_error("post_raw: short write");
    return fd;
}

// Reads from `fd` until `needle` has arrived; what was read so far.
std::string read_until(int fd, const std::string& needle) {
    std::string seen;
    char buf[4096];
    while (seen.find(needle) == std::string::npos) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        seen.append(buf, static_cast<std::size_t>(n));
    }
    return seen;
}

TEST_F(ServerTest, StreamSendsStartOutputAndExitEvents) {
    HttpResponse r = shared_server().post(
        "/exec-stream",
        {{"agent_id", "stream-agent"}, {"command", "echo one; echo two >&2; exit 4"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers["content-type"], "application/x-ndjson");
    const auto events = ndjson(r.body);
    ASSERT_GE(events.size(), 4u);
    EXPECT_EQ(events.front().at("type").as_string(), "start");
    EXPECT_EQ(events.front().at("agent_id").as_string(), "stream-agent");
    EXPECT_EQ(events.back().at("type").as_string(), "exit");
    EXPECT_EQ(events.back().at("exit_code").as_int64(), 4);
    EXPECT_FALSE(events.back().contains("stdout"));
    std::string out, err;
    for (const auto& e : events) {
        if (e.at("type") == "stdout") out += e.at("data").as_string();
        if (e.at("type") == "stderr") err += e.at("data").as_string();
    }
    EXPECT_EQ(out, "one\n");
    EXPECT_EQ(err, "two\n");
}

TEST_F(ServerTest, StreamFlushesAPartialLineWithoutWaitingForTheEnd) {
    const auto start = std::chrono::steady_clock::now();
    const int fd = post_raw(
        shared_server(), "/exec-stream",
        R"({"agent_id":"progress-agent","command":"printf half-way; sleep 2; echo done"})");
    ASSERT_NE(read_until(fd, "half-way").find("half-way"), std::string::npos);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms)
        << "the partial line waited for the end";
    close(fd);
}

TEST_F(ServerTest, AClientThatDisconnectsKillsItsSandbox) {
    Server s;
    const std::string daemon = unique_name("nbxgone");
    const int fd = post_raw(s, "/exec-stream",
                            R"({"agent_id":"gone-agent","command":"cp /bin/sleep /tmp/)" + daemon +
                                " && setsid /tmp/" + daemon + R"( 1000 & echo started; sleep 60"})",
                            false);
    ASSERT_NE(read_until(fd, "started").find("started"), std::string::npos);
    for (int i = 0; i < 100 && processes_named(daemon).empty(); ++i)
        std::this_thread::sleep_for(20ms);
    ASSERT_FALSE(processes_named(daemon).empty());
    close(fd);
    for (int i = 0; i < 250 && !processes_named(daemon).empty(); ++i)
        std::this_thread::sleep_for(20ms);
    EXPECT_TRUE(processes_named(daemon).empty()) << "the sandbox outlived its client";
    // It is still audited and counted, and the request is logged as closed by the client.
    // (The request line comes last, after the audit line.)
    for (int i = 0; i < 100 && s.log().find("status=499") == std::string::npos; ++i)
        std::this_thread::sleep_for(20ms);
    EXPECT_NE(s.log().find("agent=gone-agent"), std::string::npos) << s.log();
    EXPECT_NE(s.log().find("client_left"), std::string::npos) << s.log();
    EXPECT_NE(s.log().find("status=499"), std::string::npos) << s.log();
    EXPECT_NE(s.get("/metrics").body.find("nestboxd_exec_total 1"), std::string::npos);
}

TEST_F(ServerTest, AStreamWhoseLauncherDiesEndsWithAnErrorEvent) {
    const int fd = post_raw(shared_server(), "/exec-stream",
                            R"({"agent_id":"killed-agent","command":"echo up; sleep 60"})");
    const std::string head = read_until(fd, "up\\n");
    const std::size_t at = head.find(R"("pid":)");
    ASSERT_NE(at, std::string::npos) << head;
    const pid_t launcher = std::stoi(head.substr(at + 6));
    ASSERT_EQ(::kill(launcher, SIGKILL), 0);
    const auto start = std::chrono::steady_clock::now();
    const std::string rest = read_all(fd, 10s);
    close(fd);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "the stream was left hanging";
    EXPECT_NE(rest.find(R"({"type":"error","error":{"code":"sandbox_failed")"), std::string::npos)
        << rest;
    EXPECT_EQ(rest.find(R"("type":"exit")"), std::string::npos) << rest;
    EXPECT_TRUE(rest.ends_with("0\r\n\r\n")) << "no final chunk: " << rest;
}

// --- workspace endpoints -------------------------------------------------------------------------

TEST_F(ServerTest, WorkspaceWriteReadListDelete) {
    Server& s = shared_server();
    HttpResponse w = s.post(
        "/workspace/write",
        {{"agent_id", "ws-agent"}, {"path", "a/b/c.txt"}, {"content", "hello"}, {"mode", "0600"}});
    ASSERT_EQ(w.status, 200) << w.body;
    EXPECT_EQ(w.json().at("bytes_written").as_int64(), 5);
    HttpResponse r = s.post("/workspace/read", {{"agent_id", "ws-agent"}, {"path", "a/b/c.txt"}});
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.json().at("content").as_string(), "hello");
    EXPECT_EQ(r.json().at("encoding").as_string(), "utf8");
    // Owned by the agent, with the mode asked for, and readable by its commands.
    const std::string host = s.workspace_root() + "/ws-agent/a/b/c.txt";
    struct stat st {};
    ASSERT_EQ(stat(host.c_str(), &st), 0);
    EXPECT_GE(st.st_uid, 10000u);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(out_of(exec(s, "ws-agent", "cat a/b/c.txt")), "hello");
    // Binary content round-trips as base64.
    const std::string binary("\x00\xff\x10\x80", 4);
    ASSERT_EQ(s.post("/workspace/write", {{"agent_id", "ws-agent"},
                                          {"path", "bin"},
                                          {"content", base64_encode(binary)},
                                          {"encoding", "base64"}})
                  .status,
              200);
    HttpResponse b = s.post("/workspace/read", {{"agent_id", "ws-agent"}, {"path", "bin"}});
    EXPECT_EQ(b.json().at("encoding").as_string(), "base64");
    EXPECT_EQ(base64_decode(b.json().at("content").as_string()).value(), binary);
    HttpResponse l =
        s.post("/workspace/list", {{"agent_id", "ws-agent"}, {"path", "a"}, {"recursive", true}});
    ASSERT_EQ(l.status, 200);
    std::set<std::string> paths;
    const json::value listing = l.json();
    for (const auto& e : listing.at("entries").as_array())
        paths.insert(std::string(e.at("path").as_string()));
    EXPECT_EQ(paths, (std::set<std::string>{"a/b", "a/b/c.txt"}));
    EXPECT_EQ(s.post("/workspace/delete", {{"agent_id", "ws-agent"}, {"path", "a"}}).status,
              400);  // not empty
    EXPECT_EQ(
        s.post("/workspace/delete", {{"agent_id", "ws-agent"}, {"path", "a"}, {"recursive", true}})
            .status,
        200);
    EXPECT_EQ(s.post("/workspace/read", {{"agent_id", "ws-agent"}, {"path", "a/b/c.txt"}}).status,
              404);
}

TEST_F(ServerTest, WorkspaceErrorsHaveTheirStatuses) {
    Server& s = shared_server();
    s.post("/workspace/write", {{"agent_id", "err-agent"}, {"path", "dir/f"}, {"content", "x"}});
    EXPECT_EQ(s.post("/workspace/read", {{"agent_id", "err-agent"}, {"path", "missing"}}).status,
              404);
    EXPECT_EQ(s.post("/workspace/read", {{"agent_id", "err-agent"}, {"path", "dir"}}).status, 400);
    EXPECT_EQ(
        s.post("/workspace/read", {{"agent_id", "err-agent"}, {"path", "/etc/passwd"}}).status,
        403);
    EXPECT_EQ(s.post("/workspace/read", {{"agent_id", "err-agent"}, {"path", "../err-agent/dir/f"}})
                  .status,
              403);
    EXPECT_EQ(
        s.post("/workspace/read", {{"agent_id", "err-agent"}, {"path", std::string(5000, 'a')}})
            .status,
        400);
    EXPECT_EQ(s.post("/workspace/write",
                     {{"agent_id", "err-agent"}, {"path", "dir/f/g"}, {"content", "x"}})
                  .status,
              400);
    EXPECT_EQ(s.post("/workspace/write",
                     {{"agent_id", "err-agent"}, {"path", "x"}, {"content", "x"}, {"mode", "4755"}})
                  .status,
              400);
    EXPECT_EQ(s.post("/workspace/write", {{"agent_id", "err-agent"}, {"path", "x"}}).status,
              400);  // no content
}

// --- isolation between agents
// ----------------------------------------------------------------------

TEST_F(ServerTest, AgentsCannotReachEachOthersFiles) {
    Server& s = shared_server();
    ASSERT_EQ(s.post("/workspace/write",
                     {{"agent_id", "alice"}, {"path", "secret.txt"}, {"content", "alice's"}})
                  .status,
              200);
    // Through the API.
    EXPECT_EQ(
        s.post("/workspace/read", {{"agent_id", "bob"}, {"path", "../alice/secret.txt"}}).status,
        403);
    EXPECT_EQ(
        s.post("/workspace/write", {{"agent_id", "bob"}, {"path", "../alice/x"}, {"content", "y"}})
            .status,
        403);
    // Through commands: Bob's sandbox does not contain Alice's workspace at all.
    const json::object r = exec(s, "bob",
                                "cat ../alice/secret.txt /workspace/../alice/secret.txt; ls -a "
                                "/workspace/..; find / -name secret.txt 2>/dev/null");
    EXPECT_EQ(out_of(r).find("alice"), std::string::npos) << out_of(r);
    // And they run as different users: Alice's workspace is closed to Bob's uid.
    const json::object ids = exec(s, "alice", "id -u");
    const json::object bob_ids = exec(s, "bob", "id -u");
    EXPECT_NE(out_of(ids), out_of(bob_ids));
    struct stat st {};
    ASSERT_EQ(stat((s.workspace_root() + "/alice").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(ServerTest, SymlinksInTheWorkspaceNeverLeadOut) {
    Server& s = shared_server();
    s.post("/workspace/write",
           {{"agent_id", "carol"}, {"path", "mine.txt"}, {"content", "carol's"}});
    exec(s, "mallory",
         "ln -s /etc etc; ln -s /workspace/../carol carol; ln -s / root; mkdir -p d && ln -s "
         "../../carol d/up");
    for (const char* path :
         {"etc/passwd", "etc/shadow", "carol/mine.txt", "root/etc/passwd", "d/up/mine.txt"}) {
        HttpResponse r = s.post("/workspace/read", {{"agent_id", "mallory"}, {"path", path}});
        EXPECT_EQ(r.status, 403) << path << ": " << r.body;
    }
    HttpResponse w =
        s.post("/workspace/write",
               {{"agent_id", "mallory"}, {"path", "etc/nestbox-evil"}, {"content", "x"}});
    EXPECT_EQ(w.status, 403);
    EXPECT_FALSE(fs::exists("/etc/nestbox-evil"));
    EXPECT_EQ(s.post("/workspace/list", {{"agent_id", "mallory"}, {"path", "root"}}).status, 403);
    EXPECT_EQ(
        s.post("/workspace/delete", {{"agent_id", "mallory"}, {"path", "carol/mine.txt"}}).status,
        403);
    EXPECT_TRUE(fs::exists(s.workspace_root() + "/carol/mine.txt"));
}

TEST_F(ServerTest, ASymlinkSwappedDuringRequestsNeverLeaks) {
    Server& s = shared_server();
    // A command flips "sw" between a real directory and a symlink to / while the API reads
    // sw/etc/hostname: every answer must be the workspace's file or a refusal, never the host's.
    exec(s, "racer", "mkdir -p real/etc && echo workspace-copy > real/etc/hostname");
    std::atomic<bool> done{false};
    std::thread flipper([&] {
        HttpResponse r =
            s.post("/exec",
                   {{"agent_id", "racer"},
                    {"timeout_sec", 20},
                    {"command", "for i in $(seq 1 4000); do ln -sfn real sw; ln -sfn / sw; done"}});
        done = true;
        (void)r;
    });
    int leaks = 0, reads = 0;
    while (!done) {
        HttpResponse r =
            s.post("/workspace/read", {{"agent_id", "racer"}, {"path", "sw/etc/hostname"}});
        ++reads;
        if (r.status == 200 && r.json().at("content").as_string() != "workspace-copy\n") ++leaks;
    }
    flipper.join();
    EXPECT_EQ(leaks, 0) << "host content leaked in " << leaks << " of " << reads << " reads";
    EXPECT_GT(reads, 10);
}

TEST_F(ServerTest, ConcurrentWritesToOneFileAreNeverTorn) {
    Server& s = shared_server();
    std::vector<std::string> payloads;
    for (char c : {'a', 'b', 'c', 'd'})
        payloads.emplace_back(200000, c);
    std::vector<std::thread> writers;
    writers.reserve(payloads.size());
    std::atomic<int> failures{0};
    for (const auto& p : payloads) {
        writers.emplace_back([&s, &p, &failures] {
            for (int i = 0; i < 10; ++i) {
                if (s.post("/workspace/write",
                           {{"agent_id", "writer"}, {"path", "shared.txt"}, {"content", p}})
                        .status != 200)
                    ++failures;
            }
        });
    }
    int torn = 0;
    for (int i = 0; i < 40; ++i) {
        HttpResponse r =
            s.post("/workspace/read", {{"agent_id", "writer"}, {"path", "shared.txt"}});
        if (r.status != 200) continue;
        const std::string content(r.json().at("content").as_string());
        if (std::find(payloads.begin(), payloads.end(), content) == payloads.end()) ++torn;
    }
    for (auto& t : writers)
        t.join();
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(torn, 0);
}

// --- the agent-sandbox compatibility surface ---------------------------------------------------

// A multipart/form-data body as the runtime's Go and Python clients send it.
std::string multipart_upload(const std::string& filename, const std::string& content,
                             const std::string& boundary) {
    return "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
           filename + "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + content + "\r\n--" +
           boundary + "--\r\n";
}

TEST_F(ServerTest, CompatibilitySurfaceMatchesTheRuntimeByteForByte) {
    Server& s = shared_server();
    const std::map<std::string, std::string> agent = {{"X-Agent-Id", "compat-agent"}};
    EXPECT_EQ(s.get("/").body, R"({"status":"ok","message":"Sandbox Runtime is active."})");
    const std::string binary("\x00\x01ok", 4);
    HttpResponse up =
        s.request("POST", "/upload", multipart_upload("sub/dir/data.bin", binary, "b0undary"),
                  {{"Content-Type", "multipart/form-data; boundary=b0undary"},
                   {"X-Agent-Id", "compat-agent"}});
    ASSERT_EQ(up.status, 200) << up.body;
    EXPECT_EQ(up.body, R"({"message":"File 'sub/dir/data.bin' uploaded successfully."})");
    HttpResponse down = s.get("/download/sub%2Fdir%2Fdata.bin", agent);
    EXPECT_EQ(down.status, 200);
    EXPECT_EQ(down.body, binary);
    EXPECT_EQ(down.headers["content-type"], "application/octet-stream");
    EXPECT_EQ(down.headers["content-disposition"], R"(attachment; filename="sub/dir/data.bin")");
    EXPECT_EQ(s.get("/download/sub%2Fdir", agent).body, R"({"message":"File not found"})");
    EXPECT_EQ(s.get("/download/nope", agent).status, 404);
    // Larger than the server serves (--max-body, 64 MiB by default): refused as such.
    ASSERT_EQ(
        s.request("POST", "/execute", R"({"command":"truncate -s 65M big.bin"})", agent).status,
        200);
    HttpResponse big = s.get("/download/big.bin", agent);
    EXPECT_EQ(big.status, 413);
    EXPECT_NE(big.body.find("is larger than"), std::string::npos) << big.body;
    HttpResponse ex = s.request(
        "POST", "/execute", R"({"command":"cat sub/dir/data.bin | wc -c; pwd; exit 2"})", agent);
    EXPECT_EQ(ex.status, 200);
    EXPECT_EQ(ex.body, R"({"stdout":"4\n/workspace\n","stderr":"","exit_code":2})");
    EXPECT_EQ(s.request("POST", "/execute", R"({"cmd":"true"})", agent).status, 422);
    HttpResponse list = s.get("/list/sub%2Fdir", agent);
    ASSERT_EQ(list.status, 200);
    const json::value listed = list.json();
    const json::array& entries = listed.as_array();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].at("name").as_string(), "data.bin");
    EXPECT_EQ(entries[0].at("size").as_int64(), 4);
    EXPECT_EQ(entries[0].at("type").as_string(), "file");
    EXPECT_TRUE(entries[0].at("mod_time").is_double());
    EXPECT_EQ(s.get("/list/sub%2Fdir%2Fdata.bin", agent).body,
              R"({"message":"Path is not a directory"})");
    EXPECT_EQ(s.get("/list/", agent).status, 200);     // the empty path is the root
    EXPECT_EQ(s.get("/list/%2E", agent).status, 200);  // and so is "."
    EXPECT_EQ(s.get("/exists/sub%2Fdir%2Fdata.bin", agent).body,
              R"({"path":"sub/dir/data.bin","exists":true})");
    EXPECT_EQ(s.get("/exists/missing.txt", agent).body, R"({"path":"missing.txt","exists":false})");
    // One leading "/" is stripped: "%2Fetc%2Fpasswd" names etc/passwd inside the workspace.
    EXPECT_EQ(s.get("/download/%2Fetc%2Fpasswd", agent).status, 404);
    for (const char* escape :
         {"/download/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "/download/%2F%2Fetc%2Fpasswd",
          "/list/%2E%2E", "/exists/%2E%2E%2Fother-agent"}) {
        HttpResponse r = s.get(escape, agent);
        EXPECT_EQ(r.status, 403) << escape;
        EXPECT_EQ(r.body, R"({"message":"Access denied"})") << escape;
    }
    EXPECT_EQ(s.request("POST", "/download/x", "", agent).status, 405);
}

TEST_F(ServerTest, CompatibilityCommandsRunInTheAgentsSandbox) {
    Server& s = shared_server();
    HttpResponse r =
        s.request("POST", "/execute", R"({"command":"id -u; cat /proc/net/dev | grep -c :"})",
                  {{"X-Agent-Id", "compat-b"}});
    ASSERT_EQ(r.status, 200);
    const std::string out(r.json().at("stdout").as_string());
    EXPECT_NE(out.rfind("0\n", 0), 0u) << "ran as root: " << out;
    EXPECT_NE(out.find("\n1\n"), std::string::npos) << "more than loopback: " << out;
    // Without X-Agent-Id: the server's --default-agent.
    EXPECT_EQ(s.request("POST", "/execute", R"({"command":"echo $AGENT_ID"})")
                  .json()
                  .at("stdout")
                  .as_string(),
              "default\n");
}

// --- limits, auth and lifecycle (servers of their own)
// ---------------------------------------------

TEST_F(ServerTest, OversizedBodiesAre413) {
    Server s({"--max-body", "1M"});
    HttpResponse r = s.request("POST", "/exec", std::string(2 << 20, 'x'));
    EXPECT_EQ(r.status, 413);
    EXPECT_EQ(r.error_code(), "body_too_large");
    EXPECT_EQ(s.get("/healthz").status, 200);
}

// Each way a connection can be refused before routing, sent raw, must get its status and leave the
// server serving: no token is needed to send any of these.
TEST_F(ServerTest, RefusedConnectionsNeverTakeTheServerDown) {
    Server s({"--max-body", "1K", "--header-timeout", "1", "--body-timeout", "1"});
    const std::string big_header = "X-Big: " + std::string(20000, 'a') + "\r\n";
    const struct {
        const char* what;
        std::string request;
        const char* status;
    } cases[] = {
        {"a bad request line", "NOT HTTP AT ALL\r\n\r\n", "400"},
        {"a bad header", "GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n", "400"},
        {"oversized headers", "GET /healthz HTTP/1.1\r\n" + big_header + "\r\n", "431"},
        {"a Content-Length past the limit", "POST /exec HTTP/1.1\r\nContent-Length: 4096\r\n\r\n",
         "413"},
        {"a chunked body past the limit",
         "POST /exec HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
             std::string(0x800, 'x') + "\r\n0\r\n\r\n",
         "413"},
        {"headers that never end", "GET /healthz HTTP/1.1\r\nHost: x\r\n", "408"},
        {"a body that never comes", "POST /exec HTTP/1.1\r\nContent-Length: 10\r\n\r\n{", "408"},
    };
    for (const auto& c : cases) {
        for (int round = 0; round < 3;
             ++round) {  // the crash this guards against was not every time
            const int fd = s.connect();
            ASSERT_EQ(write(fd, c.request.data(), c.request.size()),
                      static_cast<ssize_t>(c.request.size()));
            const std::string answer = read_all(fd, 5s);
            close(fd);
            EXPECT_EQ(answer.substr(0, 12), std::string("HTTP/1.1 ") + c.status) << c.what;
            ASSERT_TRUE(s.running()) << "nestboxd died after " << c.what << ":\n" << s.log();
            ASSERT_EQ(s.get("/healthz").status, 200) << c.what;
        }
    }
}

TEST_F(ServerTest, SlowClientsGet408AndDoNotBlockOthers) {
    Server s({"--header-timeout", "1"});
    const int slow = s.connect();
    const std::string part = "POST /exec HTTP/1.1\r\nHost: x\r\n";
    ASSERT_EQ(write(slow, part.data(), part.size()), static_cast<ssize_t>(part.size()));
    EXPECT_EQ(s.get("/healthz").status, 200);  // others are served meanwhile
    const auto start = std::chrono::steady_clock::now();
    const std::string answer = read_all(slow, 5s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
    close(slow);
}

TEST_F(ServerTest, TooManySandboxesAre429) {
    Server s({"--max-concurrent", "1"});
    std::thread busy([&s] { exec(s, "busy-agent", "sleep 2"); });
    std::this_thread::sleep_for(700ms);
    HttpResponse r = s.post("/exec", {{"agent_id", "other"}, {"command", "true"}});
    busy.join();
    EXPECT_EQ(r.status, 429);
    EXPECT_EQ(r.error_code(), "too_many_sandboxes");
}

TEST_F(ServerTest, ATokenIsRequiredEverywhereButHealthz) {
    TempDir dir;
    const std::string token_file = dir.path() + "/token";
    std::ofstream(token_file) << "correct-horse-battery\n";
    Server s({"--token-file", token_file});
    EXPECT_EQ(s.get("/healthz").status, 200);
    EXPECT_EQ(s.get("/metrics").status, 401);
    HttpResponse none = s.post("/exec", {{"agent_id", "a"}, {"command", "true"}});
    EXPECT_EQ(none.status, 401);
    EXPECT_EQ(none.headers["www-authenticate"], "Bearer");
    EXPECT_EQ(none.headers["cache-control"], "no-store");
    EXPECT_EQ(s.post("/exec", {{"agent_id", "a"}, {"command", "true"}},
                     {{"Authorization", "Bearer correct-horse-batterx"}})
                  .status,
              401);
    EXPECT_EQ(s.post("/exec", {{"agent_id", "a"}, {"command", "true"}},
                     {{"Authorization", "Bearer correct-horse-battery"}})
                  .status,
              200);
    EXPECT_EQ(s.get("/metrics", {{"X-Nestbox-Token", "correct-horse-battery"}}).status, 200);
    // The scheme is case-insensitive and may be followed by several spaces (RFC 9110 11.1);
    // the token itself is not.
    auto with = [&](const std::string& authorization) {
        return s.get("/metrics", {{"Authorization", authorization}}).status;
    };
    EXPECT_EQ(with("bearer  correct-horse-battery"), 200);
    EXPECT_EQ(with("BEARER correct-horse-battery"), 200);
    EXPECT_EQ(with("Bearer CORRECT-HORSE-BATTERY"), 401);
    EXPECT_EQ(with("Bearer "), 401);
    EXPECT_EQ(with("Bearercorrect-horse-battery"), 401);
    EXPECT_EQ(with("Basic correct-horse-battery"), 401);
}

// A unix socket is 0660 from the moment it exists, even under a umask of 0 (usual in
// containers): it is never open to every local user, not even briefly.
TEST_F(ServerTest, AUnixSocketIsNeverWorldWritable) {
    TempDir dir;
    const std::string socket_path = dir.path() + "/nestboxd.sock";
    const pid_t pid = fork();
    if (pid == 0) {
        ::umask(0);
        const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        dup2(null, 1);
        dup2(null, 2);
        execl(std::getenv("NESTBOXD"), "nestboxd", "--listen", ("unix:" + socket_path).c_str(),
              "--workspace-root", (dir.path() + "/ws").c_str(), nullptr);
        _exit(97);
    }
    auto mode = [&]() -> std::optional<unsigned> {
        struct stat st {};
        if (lstat(socket_path.c_str(), &st) != 0) return std::nullopt;
        return st.st_mode & 07777U;
    };
    // Polled without sleeping, to see the socket as soon after bind as this process can.
    std::optional<unsigned> first;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!first && std::chrono::steady_clock::now() < deadline)
        first = mode();
    std::this_thread::sleep_for(200ms);
    const std::optional<unsigned> settled = mode();
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    EXPECT_EQ(first, 0660U);
    EXPECT_EQ(settled, 0660U);
}

// Runs nestboxd with `args`, expecting it to refuse to start: its exit status and what it said.
std::pair<int, std::string> refused_start(const std::string& args) {
    const std::string cmd = std::string(std::getenv("NESTBOXD")) + " " + args +
                            " --workspace-root /tmp/nestbox-never 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[1024] = {};
    const std::size_t n = fread(buf, 1, sizeof buf - 1, p);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(buf, n)};
}

TEST_F(ServerTest, ListeningBeyondLoopbackWithoutATokenIsRefused) {
    const auto [status, said] = refused_start("--listen 0.0.0.0:" + std::to_string(free_port()));
    EXPECT_EQ(status, 2);
    EXPECT_NE(said.find("without a token"), std::string::npos) << said;
    EXPECT_FALSE(fs::exists("/tmp/nestbox-never"));
}

// A shared directory is read-only to every agent: through the API and from its sandbox.
TEST_F(ServerTest, SharedDirectoriesAreReadOnly) {
    TempDir shared;
    std::ofstream(shared.path() + "/notes.txt") << "shared notes\n";
    fs::permissions(shared.path(), fs::perms(0755));  // readable by the agents' UIDs
    fs::permissions(shared.path() + "/notes.txt", fs::perms(0644));
    Server s({"--shared-dirs", "docs:" + shared.path()});
    HttpResponse read =
        s.post("/workspace/read", {{"agent_id", "reader"}, {"path", "docs/notes.txt"}});
    EXPECT_EQ(read.status, 200) << read.body;
    EXPECT_EQ(read.json().at("content").as_string(), "shared notes\n");
    HttpResponse write =
        s.post("/workspace/write",
               {{"agent_id", "reader"}, {"path", "docs/notes.txt"}, {"content", "overwritten"}});
    EXPECT_EQ(write.status, 403);
    EXPECT_EQ(write.error_code(), "read_only");
    HttpResponse create = s.post(
        "/workspace/write", {{"agent_id", "reader"}, {"path", "docs/new.txt"}, {"content", "x"}});
    EXPECT_EQ(create.error_code(), "read_only");
    HttpResponse del =
        s.post("/workspace/delete", {{"agent_id", "reader"}, {"path", "docs/notes.txt"}});
    EXPECT_EQ(del.status, 403);
    EXPECT_EQ(del.error_code(), "read_only");
    const json::object r =
        exec(s, "reader",
             "echo x > /mnt/shared/docs/notes.txt; echo $?; cat /mnt/shared/docs/notes.txt");
    EXPECT_NE(out_of(r).substr(0, 2), "0\n") << "the sandbox wrote to a shared directory";
    EXPECT_NE(r.at("stderr").as_string().find("Read-only file system"), std::string::npos);
    EXPECT_NE(out_of(r).find("shared notes\n"), std::string::npos);
    std::stringstream on_disk;
    on_disk << std::ifstream(shared.path() + "/notes.txt").rdbuf();
    EXPECT_EQ(on_disk.str(), "shared notes\n");
    EXPECT_FALSE(fs::exists(shared.path() + "/new.txt"));
}

TEST_F(ServerTest, AMissingSharedDirectoryIsRefusedAtStart) {
    const auto [status, said] = refused_start("--listen 127.0.0.1:" + std::to_string(free_port()) +
                                              " --shared-dirs data:/nonexistent-nestbox-data");
    EXPECT_EQ(status, 2);
    EXPECT_NE(said.find("--shared-dirs data:/nonexistent-nestbox-data is not a directory"),
              std::string::npos)
        << said;
}

// A sandbox the launcher cannot build is the server's failure (500), never the command's 125.
TEST_F(ServerTest, ASandboxThatCannotBeBuiltIs500) {
    const std::string shared = fs::temp_directory_path() / unique_name("nbxshared");
    fs::create_directories(shared);
    Server s({"--shared-dirs", "data:" + shared});
    EXPECT_EQ(out_of(exec(s, "builder", "ls /mnt/shared")), "data\n");
    fs::remove(shared);  // the mount source vanishes under the running server
    HttpResponse r = s.post("/exec", {{"agent_id", "builder"}, {"command", "true"}});
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_EQ(r.error_code(), "sandbox_failed");
    EXPECT_NE(r.body.find(shared), std::string::npos) << "the message names the mount: " << r.body;
    HttpResponse st = s.post("/exec-stream", {{"agent_id", "builder"}, {"command", "true"}});
    EXPECT_EQ(st.status, 500) << st.body;
    // A command that is simply missing is still the command's own 127 (on a server whose
    // sandboxes can be built).
    EXPECT_EQ(shared_server()
                  .post("/exec", {{"agent_id", "other"}, {"argv", {"/no/such/command"}}})
                  .json()
                  .at("exit_code")
                  .as_int64(),
              127);
}

// An exec whose `files` cannot all be written writes none of them, and runs nothing.
TEST_F(ServerTest, FilesAreAllWrittenOrNone) {
    Server& s = shared_server();
    ASSERT_EQ(s.post("/workspace/write",
                     {{"agent_id", "files-agent"}, {"path", "z"}, {"content", "a file"}})
                  .status,
              200);
    ASSERT_EQ(s.post("/workspace/write",
                     {{"agent_id", "files-agent"}, {"path", "dir/keep"}, {"content", ""}})
                  .status,
              200);
    const std::map<std::string, std::pair<json::object, std::string>> refused = {
        // (files are written in key order: "a.txt" would come first)
        {"a parent that is a file", {{{"a.txt", "x"}, {"z/under-a-file", "y"}}, "not_a_directory"}},
        {"a directory in the way", {{{"a.txt", "x"}, {"dir", "y"}}, "is_a_directory"}},
    };
    for (const auto& [why, case_] : refused) {
        HttpResponse r =
            s.post("/exec",
                   {{"agent_id", "files-agent"}, {"command", "touch ran"}, {"files", case_.first}});
        EXPECT_EQ(r.status, 400) << why << ": " << r.body;
        EXPECT_EQ(r.error_code(), case_.second) << why;
    }
    HttpResponse listing = s.post("/workspace/list", {{"agent_id", "files-agent"}, {"path", ""}});
    EXPECT_EQ(listing.body.find("a.txt"), std::string::npos) << listing.body;
    EXPECT_EQ(listing.body.find("ran"), std::string::npos) << listing.body;
    // Parents that do not exist yet are no obstacle.
    EXPECT_EQ(s.post("/exec", {{"agent_id", "files-agent"},
                               {"command", "cat new/deep/b.txt"},
                               {"files", {{"a.txt", "x"}, {"new/deep/b.txt", "made"}}}})
                  .json()
                  .at("stdout")
                  .as_string(),
              "made");
}

// Requests refused for what they ask register nothing: no agent, no workspace.
TEST_F(ServerTest, RefusedRequestsRegisterNoAgent) {
    Server s;
    const std::map<std::string, json::object> refused = {
        {"/workspace/read", {{"agent_id", "ghost1"}, {"path", "../x"}}},
        {"/workspace/write", {{"agent_id", "ghost2"}, {"path", "/etc/x"}, {"content", "y"}}},
        {"/workspace/list", {{"agent_id", "ghost3"}, {"path", "a/../../b"}}},
        {"/workspace/delete", {{"agent_id", "ghost4"}, {"path", std::string(5000, 'a')}}},
        {"/exec", {{"agent_id", "ghost5"}, {"command", "true"}, {"cwd", "../.."}}},
        {"/exec-stream",
         {{"agent_id", "ghost6"}, {"command", "true"}, {"files", {{"../evil", "x"}}}}},
    };
    for (const auto& [target, body] : refused) {
        HttpResponse r = s.post(target, body);
        EXPECT_TRUE(r.status == 400 || r.status == 403) << target << ": " << r.status;
        const std::string agent(body.at("agent_id").as_string());
        EXPECT_FALSE(fs::exists(s.workspace_root() + "/" + agent)) << target;
    }
    std::ifstream registry(s.workspace_root() + "/.nestbox/agents.json");
    const std::string text((std::istreambuf_iterator<char>(registry)), {});
    EXPECT_EQ(text.find("ghost"), std::string::npos) << text;
}

TEST_F(ServerTest, ABrokenLauncherFailsClosed) {
    Server s({"--launcher", "/bin/false"});
    HttpResponse h = s.get("/healthz");
    EXPECT_EQ(h.status, 503);
    EXPECT_EQ(h.json().at("status").as_string(), "unavailable");
    HttpResponse r = s.post("/exec", {{"agent_id", "a"}, {"command", "true"}});
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(r.error_code(), "sandbox_failed");
}

// A launcher that refuses before it can use its status fd says why on stderr alone: the server
// must pass that on, in /healthz and in the error of /exec, not lose it (the self-test used to
// close the pipe, and the launcher died of SIGPIPE saying it).
TEST_F(ServerTest, ALauncherThatRefusesIsQuoted) {
    TempDir dir;
    const std::string launcher = dir.path() + "/nestbox";
    std::ofstream(launcher) << "#!/bin/sh\necho 'nestbox: /dev/fd/3: No such file or directory' "
                               ">&2\nexit 125\n";
    ASSERT_EQ(chmod(launcher.c_str(), 0755), 0);
    Server s({"--launcher", launcher});
    HttpResponse h = s.get("/healthz");
    EXPECT_EQ(h.status, 503);
    EXPECT_NE(h.body.find("ended with exit status 125 and no report: nestbox: /dev/fd/3: No such "
                          "file or directory\""),
              std::string::npos)
        << h.body;
    HttpResponse r = s.post("/exec", {{"agent_id", "a"}, {"command", "true"}});
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(r.error_code(), "sandbox_failed");
    EXPECT_NE(r.body.find("exit status 125 and no report: nestbox: /dev/fd/3: No such file or "
                          "directory\""),
              std::string::npos)
        << r.body;
}

TEST_F(ServerTest, RestartKeepsTheRegistry) {
    Server s;
    const std::string before = out_of(exec(s, "persistent-agent", "id -u"));
    exec(s, "persistent-agent", "echo kept > file");
    s.kill_hard();  // a crash, not a clean shutdown
    s.restart();
    EXPECT_EQ(out_of(exec(s, "persistent-agent", "id -u")), before);
    EXPECT_EQ(out_of(exec(s, "persistent-agent", "cat file")), "kept\n");
    // A new agent after the restart does not collide with the old one.
    EXPECT_NE(out_of(exec(s, "second-agent", "id -u")), before);
}

// A launcher killed with SIGKILL cannot remove its cgroup; the next server start does.
TEST_F(ServerTest, StartupRemovesSandboxGroupsLeftByACrash) {
    std::ifstream self("/proc/self/cgroup");
    std::string line, own;
    while (std::getline(self, line)) {
        if (line.find(":pids:") != std::string::npos) own = line.substr(line.rfind(':') + 1);
    }
    ASSERT_FALSE(own.empty()) << "this host has no cgroup v1 pids hierarchy";
    const std::string tree =
        "/sys/fs/cgroup/pids" + (own == "/" ? std::string() : own) + "/nestbox";
    fs::create_directories(tree);
    ASSERT_FALSE(fs::exists("/proc/999999"));
    const std::string stale =
        tree + "/nbx-999999-deadbeef";  // its launcher is gone
                                        // Named after a live process that is not a launcher (this
                                        // test): stale as well.
    const std::string not_a_launcher = tree + "/nbx-" + std::to_string(getpid()) + "-cafef00d";
    fs::create_directory(stale);
    fs::create_directory(not_a_launcher);
    Server s;
    EXPECT_FALSE(fs::exists(stale))
        << "a group left by a dead launcher survived the start-up sweep";
    EXPECT_FALSE(fs::exists(not_a_launcher));
    EXPECT_EQ(s.get("/healthz").status, 200);
}

// As a container's init (PID 1), nestboxd gets no default action for a signal it has no handler
// for: if its SIGTERM handling ever fails, `docker stop` waits out its grace period and kills it,
// and (SIGCHLD) orphans are never reaped. Asio's signal service once lost every signal, about one
// start in twenty, when two threads made the first signal sets at once: hence many starts.
TEST_F(ServerTest, AsPid1ItStopsOnSigtermEveryTime) {
    ServerOptions o;
    o.pid_namespace = true;
    // Its own /proc, as runtimes mount one, so that it sees itself as PID 1 there too.
    o.before_exec = [] {
        return unshare(CLONE_NEWNS) == 0 &&
               mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
               mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
    };
    for (int start = 0; start < 40; ++start) {
        Server s({}, o);
        ASSERT_EQ(s.get("/healthz").status, 200) << s.log();
        ASSERT_TRUE(s.stop_within(5s)) << "start " << start << ": SIGTERM was ignored\n" << s.log();
        ASSERT_NE(s.log().find("shutdown"), std::string::npos) << s.log();
    }
}

TEST_F(ServerTest, ShutdownLetsRunningSandboxesFinish) {
    Server s({"--shutdown-grace", "10"});
    HttpResponse result;
    std::thread running([&] {
        result = s.post("/exec", {{"agent_id", "slow"}, {"command", "sleep 1; echo finished"}});
    });
    std::this_thread::sleep_for(400ms);
    kill(s.pid(), SIGTERM);
    running.join();
    EXPECT_EQ(result.status, 200);
    EXPECT_EQ(result.json().at("stdout").as_string(), "finished\n");
    const int status = s.wait_exit();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace nestbox::test
