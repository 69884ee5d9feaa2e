#include "src/server/metrics.hpp"

#include <cstdio>

namespace nestbox::server {

void Metrics::request(const std::string& route, const std::string& method, unsigned status) {
    const std::string labels = "route=\"" + route + "\",method=\"" + method + "\",status=\"" +
                               std::to_string(status) + "\"";
    std::lock_guard lock(mu_);
    ++requests_[labels];
}

void Metrics::exec_finished(double seconds, bool timed_out, bool oom_killed, bool truncated) {
    {
        std::lock_guard lock(mu_);
        ++exec_count_;
        exec_seconds_ += seconds;
        for (std::size_t i = 0; i < kBuckets.size(); ++i) {
            if (seconds <= kBuckets[i]) ++exec_buckets_[i];
        }
    }
    if (timed_out) ++timeouts_;
    if (oom_killed) ++oom_kills_;
    if (truncated) ++truncations_;
}

std::string Metrics::render() const {
    std::string out;
    auto counter = [&out](const char* name, const char* help, std::uint64_t value) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" +
               name + " " + std::to_string(value) + "\n";
    };
    std::lock_guard lock(mu_);
    out += "# HELP nestboxd_requests_total HTTP requests by route, method and status.\n";
    out += "# TYPE nestboxd_requests_total counter\n";
    for (const auto& [labels, n] : requests_)
        out += "nestboxd_requests_total{" + labels + "} " + std::to_string(n) + "\n";
    counter("nestboxd_exec_total", "Commands run in sandboxes.", exec_count_);
    out += "# HELP nestboxd_exec_duration_seconds Wall time of sandboxed commands.\n";
    out += "# TYPE nestboxd_exec_duration_seconds histogram\n";
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        char le[32];
        std::snprintf(le, sizeof le, "%g", kBuckets[i]);
        out += std::string("nestboxd_exec_duration_seconds_bucket{le=\"") + le + "\"} " +
               std::to_string(exec_buckets_[i]) + "\n";
    }
    out +=
        "nestboxd_exec_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(exec_count_) + "\n";
    char sum[64];
    std::snprintf(sum, sizeof sum, "%.6f", exec_seconds_);
    out += std::string("nestboxd_exec_duration_seconds_sum ") + sum + "\n";
    out += "nestboxd_exec_duration_seconds_count " + std::to_string(exec_count_) + "\n";
    out +=
        "# HELP nestboxd_active_sandboxes Sandboxes running now.\n# TYPE nestboxd_active_sandboxes "
        "gauge\n";
    out += "nestboxd_active_sandboxes " + std::to_string(active_.load()) + "\n";
    counter("nestboxd_exec_timeouts_total", "Sandboxes killed at their timeout.", timeouts_.load());
    counter("nestboxd_oom_kills_total", "Sandboxes in which the OOM killer struck.",
            oom_kills_.load());
    counter("nestboxd_output_truncations_total", "Execs whose output was truncated.",
            truncations_.load());
    counter("nestboxd_rejected_busy_total", "Execs refused with 429 at the concurrency cap.",
            rejected_busy_.load());
    return out;
}

}  // namespace nestbox::server
