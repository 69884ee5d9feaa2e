#!/bin/bash
# compose/docker-compose.yml, for real: podman-compose parses it, brings the sidecar and the
# stand-in control plane up from the image container/Dockerfile builds, and the control plane's
# calls (compose/control-plane.py) must all succeed after its entrypoint waited for /healthz.
#
#   container/test-compose.sh SRCDIR
#
# Same environment and needs as container/test-image.sh, plus podman-compose.
set -euo pipefail

src=$(cd "${1:?usage: test-compose.sh SRCDIR}" && pwd)
work=$(mktemp -d /var/tmp/nestbox-compose-test-XXXXXX)
image=${NESTBOX_TEST_IMAGE:-localhost/nestbox-test:$(echo "$src" | md5sum | cut -c1-8)}
project=nbxtest$$
# shellcheck source=container/lib.sh
. "$src/container/lib.sh"

# podman-compose 1.0.3 ignores the file's `cgroup: private`; on a cgroup v1 or hybrid host
# podman's default is the host's cgroup namespace, so it is passed here (on a v2 host it is the
# default anyway).
compose() {
    podman-compose -p "$project" -f "$work/compose/docker-compose.yml" \
        --podman-run-args=--cgroupns=private "$@"
}
cleanup() {
    (cd "$work/compose" && compose down -v -t 5) >/dev/null 2>&1 || true
    # podman-compose 1.0.3's down leaves the project's network behind.
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

begin=$SECONDS
[[ $(id -u) == 0 ]] || nbx_die "needs root (podman with --privileged)"
nbx_require podman podman-compose runc debootstrap python3
nbx_engine_setup
nbx_ensure_base
nbx_build_image
export NESTBOX_IMAGE=$image

# The compose directory as an operator prepares it: a token and the shared files.
cp -r "$src/compose" "$work/compose"
head -c 32 /dev/urandom | base64 >"$work/compose/nestbox-token"
chmod 600 "$work/compose/nestbox-token"
mkdir -p "$work/compose/shared"
echo "shared, read-only" >"$work/compose/shared/README"

# What podman-compose makes of the file. podman-compose 1.0.3 (Debian 12) has no `config`; its
# --dry-run prints the podman commands it would run, which is its reading of the file. (It still
# creates the network and the volume; `down -v` removes them.) The file itself is checked by the
# deploy suite (tests/deploy/validate.py).
(cd "$work/compose" && compose --dry-run up -d) >"$work/dry-run.txt" 2>&1 || {
    cat "$work/dry-run.txt" >&2
    nbx_die "podman-compose --dry-run up failed"
}
has() { [[ " $1 " == *" $2 "* ]]; }
sidecar_as_written() {
    local run
    run=$(grep "^podman run .*--name=${project}_nestboxd_1 " "$work/dry-run.txt") &&
        has "$run" --privileged &&
        has "$run" "-v ${project}_workspace:/mnt/workspace" &&
        has "$run" "-v $work/compose/shared:/mnt/shared-readonly:ro" &&
        has "$run" "--volume ./nestbox-token:/run/secrets/nestbox-token:ro,rprivate,rbind" &&
        has "$run" "-e NESTBOX_TOKEN_FILE=/run/secrets/nestbox-token" &&
        has "$run" --healthcheck-command && ! has "$run" -p
}
control_plane_as_written() {
    local run
    run=$(grep "^podman run .*--name=${project}_control-plane_1 " "$work/dry-run.txt") &&
        has "$run" "-e WAIT_FOR_SIDECAR=nestboxd:9090" && [[ $run != *:/mnt/workspace* ]]
}
nbx_expect "podman-compose reads the sidecar: privileged, token secret, workspace volume, read-only shared dir, healthcheck" \
    sidecar_as_written
nbx_expect "podman-compose reads the control plane: waits for the sidecar, no workspace" \
    control_plane_as_written

start=$SECONDS
(cd "$work/compose" && compose up -d) >"$work/up.log" 2>&1 || {
    cat "$work/up.log" >&2
    nbx_die "podman-compose up failed"
}
nbx_log "podman-compose up -d returned after $((SECONDS - start))s"
cp_name=${project}_control-plane_1
sidecar=${project}_nestboxd_1
code=$(timeout 180 podman wait "$cp_name" || echo timeout)
nbx_log "the control plane exited ($code) $((SECONDS - start))s after up"
podman logs "$cp_name" >"$work/cp.log" 2>&1 || true
sed 's/^/    control-plane: /' "$work/cp.log"
nbx_expect "the control plane waited for the sidecar's /healthz" grep -q "sidecar ready after" "$work/cp.log"
nbx_expect "every call of the control plane succeeded (exit $code)" test "$code" = 0
nbx_expect "the sidecar's compose healthcheck passes" \
    podman exec "$sidecar" /usr/local/bin/nestbox-entrypoint --healthcheck 127.0.0.1:9090
# Private: every line of /proc/1/cgroup names its hierarchy's root.
sidecar_isolated() {
    [[ $(podman inspect --format '{{.HostConfig.Privileged}}' "$sidecar") == true ]] &&
        ! podman exec "$sidecar" cat /proc/1/cgroup | grep -v ':/$'
}
nbx_expect "the sidecar runs privileged, in a private cgroup namespace" sidecar_isolated
nbx_expect "the workspace is on the named volume" \
    podman exec "$sidecar" test -f /mnt/workspace/demo/hello.py
if ((nbx_failures > 0)); then
    echo "--- the sidecar's log ---"
    podman logs "$sidecar" 2>&1 | tail -n 40
fi

nbx_log "compose test took $((SECONDS - begin))s, $nbx_failures failure(s)"
((nbx_failures == 0))
