#include "launcher/network.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

#include "src/core/unique_fd.hpp"

namespace nestbox::launcher {

Result<void> bring_up_loopback() {
    // Two ioctls on a throwaway socket: cheaper than an rtnetlink conversation, same effect.
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock) return Error::from_errno("network", "socket");
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (::ioctl(sock.get(), SIOCGIFFLAGS, &ifr) != 0)
        return Error::from_errno("network", "SIOCGIFFLAGS lo");
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    if (::ioctl(sock.get(), SIOCSIFFLAGS, &ifr) != 0)
        return Error::from_errno("network", "bringing up lo");
    return {};
}

}  // namespace nestbox::launcher
