#!/bin/bash
# Makes the base image container/Dockerfile builds FROM, debian:bookworm-slim, from Debian's own
# packages, for machines that reach a Debian mirror but no container registry:
#
#   container/import-base.sh [IMAGE]       (default: docker.io/library/debian:bookworm-slim)
#
# debootstrap --variant=minbase builds a bookworm root file system (Essential and apt, about
# 200 MB; the registry's slim image is the same package set with documentation dropped), and
# podman imports it under the name a Dockerfile's `FROM debian:bookworm-slim` resolves to, so the
# Dockerfile builds unchanged and no pull is attempted. Needs root, debootstrap and podman.
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), PODMAN (default podman;
# docker works too: its import takes the same arguments).
set -euo pipefail

image=${1:-docker.io/library/debian:bookworm-slim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
podman=${PODMAN:-podman}

die() {
    echo "import-base.sh: $*" >&2
    exit 1
}
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
[[ $(id -u) == 0 ]] || die "needs root (debootstrap makes device nodes and chowns files)"

work=$(mktemp -d /var/tmp/nestbox-base-XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
echo "import-base.sh: debootstrap --variant=minbase bookworm from $mirror"
if ! debootstrap --variant=minbase bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    die "debootstrap failed (log above)"
fi
# The registry's image also takes security updates; so does this one.
cat >"$work/root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
EOF
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
# A container's hostname and resolver come from the engine.
: >"$work/root/etc/hostname"
: >"$work/root/etc/resolv.conf"
tar --numeric-owner -C "$work/root" -c . |
    $podman import --change 'CMD ["bash"]' --message "debootstrap --variant=minbase bookworm" \
        - "$image" >/dev/null
echo "import-base.sh: imported $image in $((SECONDS - start))s"
