// Prometheus metrics, in the text exposition format. Labels are route patterns, never raw paths,
// so a client cannot grow the label set.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace nestbox::server {

class Metrics {
  public:
    void request(const std::string& route, const std::string& method, unsigned status);
    void exec_finished(double seconds, bool timed_out, bool oom_killed, bool truncated);
    void sandbox_started() { ++active_; }
    void sandbox_ended() { --active_; }
    void rejected_busy() { ++rejected_busy_; }
    long active() const { return active_.load(); }

    std::string render() const;

  private:
    static constexpr std::array<double, 12> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                        0.5,   1,    2.5,   5,    10,  60};
    mutable std::mutex mu_;
    std::map<std::string, std::uint64_t> requests_;  // rendered label set -> count
    std::array<std::uint64_t, kBuckets.size()> exec_buckets_{};
    std::uint64_t exec_count_ = 0;
    double exec_seconds_ = 0;
    std::atomic<long> active_{0};
    std::atomic<std::uint64_t> timeouts_{0}, oom_kills_{0}, truncations_{0}, rejected_busy_{0};
};

}  // namespace nestbox::server
