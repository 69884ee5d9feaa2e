#include "src/server/compat.hpp"

namespace nestbox::server {

asio::awaitable<bool> route_compat(App& /*app*/, Exchange& /*ex*/) {
    co_return false;
}

}  // namespace nestbox::server
