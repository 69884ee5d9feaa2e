# shellcheck shell=bash disable=SC2154
# Shared by container/test-image.sh and container/test-compose.sh (sourced, not run): the engine
# set-up for this kind of machine, the base image and the image build.
#
# Needs: $src (the repository), $work (a scratch directory the caller removes).

nbx_log() { echo "[$(date +%T)] $*"; }
nbx_die() {
    echo "FAIL: $*" >&2
    exit 1
}

# Every tool the tests need; a missing one fails, never skips (the only way to skip is the meson
# option, which says so).
nbx_require() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null ||
            nbx_die "$tool not found (apt-get install podman buildah podman-compose debootstrap runc curl)"
    done
}

# podman, configured for this machine without touching /etc/containers: a containers.conf of our
# own in CONTAINERS_CONF, read by podman and by podman-compose's podman alike.
#  - default_ulimits: podman 4.3 lowers its own RLIMIT_NPROC to 32768 when it starts, then asks the
#    OCI runtime to set the container's to the host's limit (here 96365), which needs
#    CAP_SYS_RESOURCE; without it, every container fails with "crun: setrlimit `RLIMIT_NPROC`:
#    Operation not permitted" (--ulimit with the host's values too). Limits no higher than what
#    podman itself runs with can always be set.
#  - runtime: crun 1.8 refuses hybrid cgroup hosts ("cgroups in hybrid mode not supported, drop
#    all controllers from cgroupv2"); runc supports them.
# (containers.conf's cgroupns = "private" is not applied by podman 4.3 on a cgroup v1 or hybrid
# host, where its default is the host's namespace: the tests pass --cgroupns=private themselves.)
nbx_engine_setup() {
    local nofile nproc runtime=""
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    [[ $nofile == unlimited ]] && nofile=1048576
    if [[ $nproc == unlimited ]] || ((nproc > 32768)); then nproc=32768; fi
    if [[ $(stat -fc %T /sys/fs/cgroup) != cgroup2fs ]]; then runtime=runc; fi
    {
        echo "[containers]"
        echo "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
        if [[ -n $runtime ]]; then
            echo "[engine]"
            echo "runtime = \"$runtime\""
        fi
    } >"$work/containers.conf"
    export CONTAINERS_CONF=$work/containers.conf
    nbx_log "podman $(podman version --format '{{.Client.Version}}'), runtime ${runtime:-default}," \
        "cgroups $(stat -fc %T /sys/fs/cgroup), CONTAINERS_CONF=$CONTAINERS_CONF"
}

# The base image: imported from debootstrap once, then reused (podman keeps it).
nbx_ensure_base() {
    if podman image exists docker.io/library/debian:bookworm-slim; then
        nbx_log "base image docker.io/library/debian:bookworm-slim present"
    else
        "$src/container/import-base.sh" || nbx_die "could not make the base image"
    fi
}

# Builds container/Dockerfile unchanged into $image (podman's layer cache makes a rebuild of
# unchanged sources take seconds).
nbx_build_image() {
    local start=$SECONDS old
    old=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
    nbx_log "building $image from $src/container/Dockerfile"
    if ! podman build --quiet -f "$src/container/Dockerfile" \
        ${NESTBOX_IMAGE_JOBS:+--build-arg NINJA_JOBS="$NESTBOX_IMAGE_JOBS"} \
        -t "$image" "$src" >"$work/build.log" 2>&1; then
        tail -n 40 "$work/build.log" >&2
        nbx_die "podman build failed (log above)"
    fi
    nbx_log "image built in $((SECONDS - start))s: $(podman image inspect --format '{{.Size}}' "$image" |
        awk '{printf "%d MB", $1 / 1e6}')"
    # The image this one replaces (the sources changed) would stay behind untagged, 400 MB each
    # time. The build stage's layers stay: they are the cache of the next build.
    if [[ -n $old && $old != $(podman image inspect --format '{{.Id}}' "$image") ]]; then
        podman rmi "$old" >/dev/null 2>&1 || true
    fi
}

# A loopback port nothing listens on.
nbx_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nbx_check NAME FILE EXPR: EXPR, a Python expression over j (the JSON in FILE), must be true.
nbx_failures=0
nbx_check() {
    local name=$1 file=$2 expr=$3
    if python3 - "$file" "$expr" <<'EOF'; then
import json, sys
try:
    with open(sys.argv[1]) as f:
        j = json.load(f)
except Exception as e:
    print(f"    not JSON: {e}")
    sys.exit(1)
ok = False
try:
    ok = bool(eval(sys.argv[2], {"j": j}))
except Exception as e:
    print(f"    {type(e).__name__}: {e}")
if not ok:
    print("    got: " + json.dumps(j)[:2000])
sys.exit(0 if ok else 1)
EOF
        echo "ok   $name"
    else
        echo "FAIL $name (expected: $expr)"
        nbx_failures=$((nbx_failures + 1))
    fi
}

# nbx_expect NAME COMMAND...: COMMAND must succeed.
nbx_expect() {
    local name=$1
    shift
    if "$@"; then
        echo "ok   $name"
    else
        echo "FAIL $name"
        nbx_failures=$((nbx_failures + 1))
    fi
}
