#!/bin/bash
# The container image, for real: builds container/Dockerfile (the base image from debootstrap if
# absent: no registry), runs nestboxd in it with the privileges the deployment files give it,
# and drives it over HTTP as a control plane would.
#
#   container/test-image.sh SRCDIR
#
# Environment: NESTBOX_TEST_IMAGE (default localhost/nestbox-test:<hash of SRCDIR>, so that work
# trees do not build over each other's tag), NESTBOX_IMAGE_JOBS (ninja -j inside the build).
# Run by `meson test --suite container` (tests/container/meson.build). Needs root, podman, runc,
# debootstrap, curl, python3; a missing one is a failure.
set -euo pipefail

src=$(cd "${1:?usage: test-image.sh SRCDIR}" && pwd)
work=$(mktemp -d /var/tmp/nestbox-image-test-XXXXXX)
image=${NESTBOX_TEST_IMAGE:-localhost/nestbox-test:$(echo "$src" | md5sum | cut -c1-8)}
name=nestbox-test-$$
# shellcheck source=container/lib.sh
. "$src/container/lib.sh"

cleanup() {
    podman rm --ignore -f -t 0 "$name" "$name-cp" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

begin=$SECONDS
[[ $(id -u) == 0 ]] || nbx_die "needs root (podman with --privileged)"
nbx_require podman runc debootstrap curl python3
nbx_engine_setup
nbx_ensure_base
nbx_build_image

# --- the sidecar, as docker-compose and Kubernetes run it ------------------------------------------
token=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
echo "$token" >"$work/token"
mkdir -p "$work/shared"
echo "shared hello" >"$work/shared/hello.txt"
port=$(nbx_free_port)
start=$SECONDS
podman run -d --name "$name" --privileged --cgroupns=private \
    -p "127.0.0.1:$port:9090" \
    -v "$work/token:/run/secrets/nestbox-token:ro" \
    -v "$work/shared:/mnt/shared-readonly:ro" \
    -e NESTBOX_TOKEN_FILE=/run/secrets/nestbox-token \
    -e SHARED_DIRS=shared:/mnt/shared-readonly \
    "$image" >/dev/null
url=http://127.0.0.1:$port
auth=(-H "Authorization: Bearer $token")

# curl -s -o FILE -w STATUS; the status goes to stdout.
call() { curl -s -m 60 -o "$work/body" -w '%{http_code}' "$@"; }

status=
for _ in $(seq 60); do
    status=$(call "$url/healthz" || true)
    [[ $status == 200 || $status == 503 ]] && break
    sleep 1
done
nbx_log "/healthz answered $status after $((SECONDS - start))s"
if [[ $status != 200 ]]; then
    cat "$work/body" 2>/dev/null || true
    echo
    podman logs "$name" 2>&1 | tail -n 30
    nbx_die "nestboxd in the container is not healthy"
fi
cp "$work/body" "$work/healthz.json"
nbx_check "/healthz: a self-test sandbox ran" "$work/healthz.json" 'j["status"] == "ok"'
nbx_check "/healthz: cgroup limits are enforced in the container" "$work/healthz.json" \
    'j["isolation"]["cgroup"] in ("v1", "v2")'
nbx_check "/healthz: seccomp on" "$work/healthz.json" 'j["isolation"]["seccomp"] is True'
nbx_log "healthz: $(cat "$work/healthz.json")"

nbx_expect "nestboxd is PID 1 (the entrypoint exec'd it)" \
    test "$(podman exec "$name" cat /proc/1/comm)" = nestboxd

status=$(call -d '{"agent_id":"alice","command":"true"}' "$url/exec")
nbx_expect "/exec without the token: 401" test "$status" = 401

exec_as() { # AGENT COMMAND [EXTRA-JSON-FIELDS]
    python3 -c 'import json, sys; print(json.dumps(dict(agent_id=sys.argv[1], command=sys.argv[2],
        **json.loads(sys.argv[3]))))' "$1" "$2" "${3:-{\}}" >"$work/request.json"
    call "${auth[@]}" --data-binary "@$work/request.json" "$url/exec"
}

# shellcheck disable=SC2016 # expanded in the sandbox
status=$(exec_as alice 'echo hello from $(hostname); id -u; grep -E "^(Seccomp|CapEff|NoNewPrivs):" /proc/self/status; ls /mnt/workspace 2>&1; true')
cp "$work/body" "$work/exec.json"
nbx_check "/exec: runs, as the agent's own UID (not root)" "$work/exec.json" \
    'j["exit_code"] == 0 and j["stdout"].startswith("hello from ") and int(j["stdout"].split("\n")[1]) >= 1000'
nbx_check "/exec: seccomp filter, no capabilities, no_new_privs" "$work/exec.json" \
    '"Seccomp:\t2" in j["stdout"] and "CapEff:\t0000000000000000" in j["stdout"] and "NoNewPrivs:\t1" in j["stdout"]'
nbx_check "/exec: the workspaces' root is not visible" "$work/exec.json" \
    '"/mnt/workspace\x27: No such file or directory" in j["stdout"]'

# /workspace round trip: written over HTTP, read over HTTP and by a command, and not by another agent.
status=$(call "${auth[@]}" -d '{"agent_id":"alice","path":"notes/round.txt","content":"round trip\n"}' \
    "$url/workspace/write")
cp "$work/body" "$work/write.json"
nbx_check "/workspace/write" "$work/write.json" 'j["bytes_written"] == 11'
status=$(call "${auth[@]}" -d '{"agent_id":"alice","path":"notes/round.txt"}' "$url/workspace/read")
cp "$work/body" "$work/read.json"
nbx_check "/workspace/read returns what was written" "$work/read.json" 'j["content"] == "round trip\n"'
status=$(exec_as alice 'cat /workspace/notes/round.txt; stat -c %u /workspace/notes/round.txt; id -u')
cp "$work/body" "$work/exec-read.json"
nbx_check "the agent's command sees the file, owned by its UID" "$work/exec-read.json" \
    'j["stdout"].split("\n")[0] == "round trip" and j["stdout"].split("\n")[1] == j["stdout"].split("\n")[2]'
status=$(exec_as bob 'cat /workspace/notes/round.txt; ls -a /workspace; id -u')
cp "$work/body" "$work/exec-bob.json"
nbx_check "another agent does not see it" "$work/exec-bob.json" \
    'j["exit_code"] == 0 and "round trip" not in j["stdout"] and "notes" not in j["stdout"]'
status=$(call "${auth[@]}" -d '{"agent_id":"alice","path":"shared/hello.txt"}' "$url/workspace/read")
cp "$work/body" "$work/shared.json"
nbx_check "/workspace/read of a read-only shared dir (SHARED_DIRS)" "$work/shared.json" \
    'j["content"] == "shared hello\n"'

# Limits are enforced inside the container: the sandbox's cgroup is made there.
status=$(exec_as alice 'python3 -c "b = bytearray(256 << 20); print(len(b))"' \
    '{"cgroup": {"memory_mb": 48}, "timeout_sec": 60}')
cp "$work/body" "$work/oom.json"
nbx_check "a 256 MB allocation under memory_mb 48 is OOM-killed" "$work/oom.json" \
    'j["oom_killed"] is True and j["exit_code"] != 0'

# The agent-sandbox runtime's surface (its clients send X-Agent-Id; the router strips
# Authorization, so the token travels in X-Nestbox-Token).
compat=(-H "X-Nestbox-Token: $token" -H "X-Agent-Id: alice")
status=$(call "${compat[@]}" "$url/")
cp "$work/body" "$work/root.json"
nbx_check "compat: GET /" "$work/root.json" 'j == {"status": "ok", "message": "Sandbox Runtime is active."}'
status=$(call "${compat[@]}" -H 'Content-Type: application/json' \
    -d '{"command":"cat notes/round.txt"}' "$url/execute")
cp "$work/body" "$work/execute.json"
nbx_check "compat: POST /execute runs in the agent's workspace" "$work/execute.json" \
    'j["stdout"] == "round trip\n" and j["exit_code"] == 0'
status=$(call "${compat[@]}" "$url/exists/notes%2Fround%2Etxt")
cp "$work/body" "$work/exists.json"
nbx_check "compat: GET /exists/{path}" "$work/exists.json" 'j["exists"] is True'

# PID 1 reaps orphans: a process whose parent exits is reparented to nestboxd, which must reap it.
podman exec "$name" bash -c 'sleep 1 & exit 0'
sleep 3
zombies=$(podman exec "$name" bash -c 'grep -l "^State:.*Z" /proc/[0-9]*/status 2>/dev/null | wc -l')
nbx_expect "orphans reparented to PID 1 are reaped (zombies: $zombies)" test "$zombies" = 0

# --- the entrypoint's WAIT_FOR_SIDECAR, in a control-plane container in the sidecar's network ---
out=$(podman run --rm --name "$name-cp" --network "container:$name" \
    -e WAIT_FOR_SIDECAR=localhost:9090 "$image" bash -c 'echo control plane started' 2>&1) || true
nbx_expect "WAIT_FOR_SIDECAR: waits for /healthz 200, then runs the command" \
    grep -q "^control plane started" <<<"$out"
start=$SECONDS
rc=0
out=$(podman run --rm --name "$name-cp" --network "container:$name" \
    -e WAIT_FOR_SIDECAR=127.0.0.1:9 -e WAIT_FOR_SIDECAR_TIMEOUT=3 "$image" \
    bash -c 'echo control plane started' 2>&1) || rc=$?
took=$((SECONDS - start))
nbx_expect "WAIT_FOR_SIDECAR: gives up after the timeout (${took}s, exit $rc) without starting" \
    test "$rc" = 1 -a "$took" -lt 30 -a -n "$(grep 'did not answer 200 within 3s' <<<"$out")" \
    -a -z "$(grep '^control plane started' <<<"$out")"

# --- stopping: SIGTERM to PID 1 ends nestboxd cleanly ---------------------------------------------
start=$SECONDS
podman stop -t 20 "$name" >/dev/null
took=$((SECONDS - start))
code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
nbx_expect "podman stop: nestboxd exits 0 on SIGTERM (exit $code after ${took}s)" \
    test "$code" = 0 -a "$took" -lt 15
if ((nbx_failures > 0)); then
    echo "--- nestboxd's log ---"
    podman logs "$name" 2>&1 | tail -n 40
fi

nbx_log "container image test took $((SECONDS - begin))s, $nbx_failures failure(s)"
((nbx_failures == 0))
