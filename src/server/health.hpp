// /healthz: the isolation this host actually gives, found by running a real sandbox at start-up
// with the server's own default limits and reading what the launcher reports, and the warnings a
// platform engineer must see. A server whose self-test failed answers 503: it cannot enforce
// what it promises, so it is not ready.
#pragma once

#include <string>
#include <vector>

#include "src/server/cgroups.hpp"
#include "src/server/config.hpp"

namespace nestbox::server {

class Health {
  public:
    // `warnings`: what start-up already found (cgroup delegation, say).
    Health(const Config& config, const ServerCgroups& cgroups, std::vector<std::string> warnings);

    bool ready() const { return self_test_ok_; }
    std::string cgroup() const { return cgroup_; }
    const std::vector<std::string>& warnings() const { return warnings_; }
    std::string render(bool shutting_down) const;

  private:
    bool self_test_ok_ = false;
    std::string cgroup_ = "none";
    bool seccomp_ = false;
    bool user_namespace_ = false;
    std::vector<std::string> namespaces_;
    std::vector<std::string> warnings_;
};

}  // namespace nestbox::server
