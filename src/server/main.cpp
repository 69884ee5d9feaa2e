// nestboxd: the HTTP sidecar that runs agents' commands in nestbox sandboxes. See nestboxd(8) and
// docs/api.md.
#include <cstdio>

#include "src/server/config.hpp"
#include "src/server/log.hpp"
#include "src/server/server.hpp"

int main(int argc, char** argv) {
    auto parsed = nestbox::server::parse_config(argc, argv);
    if (!parsed) {
        std::fprintf(stderr, "nestboxd: %s\n", parsed.error().message().c_str());
        return 2;
    }
    if (parsed->print) {
        std::fputs(parsed->print->c_str(), stdout);
        return 0;
    }
    nestbox::server::setup_logging(parsed->config.log_level, parsed->config.log_format);
    return nestbox::server::run_server(std::move(parsed->config));
}
