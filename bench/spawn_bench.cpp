// spawn_bench: times whole commands, interleaved, and reports medians and ratios.
//
//   spawn_bench ROUNDS WARMUP LABEL 'COMMAND ARGS...' [LABEL 'COMMAND ...']...
//
// Each round runs every command once, in a rotating order, so that whatever else the machine is
// doing (a network namespace being torn down in the background, say) falls on all of them alike.
// Commands are split on spaces and started with posix_spawn, stdout/stderr to /dev/null, so the
// measurement holds no shell and no interpreter. The first command is the one the ratios compare.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Command {
    std::string label;
    std::vector<std::string> argv;
    std::vector<double> ms;
    int failures = 0;
};

double run_once(const Command& c, int devnull) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, devnull, 1);
    posix_spawn_file_actions_adddup2(&actions, devnull, 2);
    std::vector<char*> argv;
    argv.reserve(c.argv.size() + 1);
    for (const auto& a : c.argv)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -ms;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t i =
        std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
    return v[i];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5 || (argc - 3) % 2 != 0) {
        std::fprintf(
            stderr,
            "usage: spawn_bench ROUNDS WARMUP LABEL 'COMMAND ...' [LABEL 'COMMAND ...']...\n");
        return 2;
    }
    const int rounds = std::atoi(argv[1]);
    const int warmup = std::atoi(argv[2]);
    std::vector<Command> commands;
    for (int i = 3; i + 1 < argc; i += 2) {
        Command c;
        c.label = argv[i];
        std::istringstream words(argv[i + 1]);
        for (std::string w; words >> w;)
            c.argv.push_back(w);
        commands.push_back(std::move(c));
    }
    const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    for (int r = 0; r < warmup + rounds; ++r) {
        for (std::size_t k = 0; k < commands.size(); ++k) {
            Command& c = commands[(k + static_cast<std::size_t>(r)) % commands.size()];
            const double ms = run_once(c, devnull);
            if (r < warmup) continue;
            if (ms < 0) {
                ++c.failures;
                continue;
            }
            c.ms.push_back(ms);
        }
    }
    const double base = percentile(commands.front().ms, 0.5);
    std::printf("| command | median ms | p90 ms | mean ms | runs | failed | median / %s |\n",
                commands.front().label.c_str());
    std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (const Command& c : commands) {
        double mean = 0;
        for (double m : c.ms)
            mean += m;
        mean /= static_cast<double>(std::max<std::size_t>(c.ms.size(), 1));
        const double median = percentile(c.ms, 0.5);
        std::printf("| %s | %.2f | %.2f | %.2f | %zu | %d | %.2f |\n", c.label.c_str(), median,
                    percentile(c.ms, 0.9), mean, c.ms.size(), c.failures,
                    base > 0 ? median / base : 0);
    }
    return 0;
}
