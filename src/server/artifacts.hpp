// Artifacts: files created or modified under an exec's artifact_dir while it ran, with their MIME
// type from libmagic. Found by comparing a snapshot taken before the command with one after.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/server/agents.hpp"

namespace nestbox::server {

struct Artifact {
    std::string path;  // as the command saw it: /workspace/...
    std::uint64_t size = 0;
    std::string mime_type;
};

class ArtifactSnapshot {
  public:
    // Walks `dir` (relative to the workspace, already checked) as the agent.
    static ArtifactSnapshot take(const Agent& agent, const std::string& dir);
    // Files new or changed since `before`, at most kMaxArtifacts, with MIME types.
    std::vector<Artifact> changed_since(const ArtifactSnapshot& before, const Agent& agent) const;

  private:
    struct Stamp {
        std::uint64_t size = 0;
        std::int64_t mtime_ns = 0;
        ino_t inode = 0;
        bool operator==(const Stamp&) const = default;
    };
    std::string dir_;
    std::map<std::string, Stamp> files_;  // path relative to dir_
};

inline constexpr std::size_t kMaxArtifacts = 1000;

}  // namespace nestbox::server
