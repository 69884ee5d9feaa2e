#!/usr/bin/env bash
# The benchmarks of docs/benchmarks.md, in one run, printed as markdown:
#   1. launcher start-up: nestbox (default sandbox with memory, pids and cpu limits) against
#      bwrap --unshare-all --die-with-parent with an equivalent root, and bare unshare (the floor),
#      interleaved round by round;
#   2. nestboxd: /exec latency next to the launcher alone, sustained /exec throughput with 16
#      clients, /exec-stream throughput against the command alone, and the server's memory.
# Usage: bench/run.sh [BUILD_DIR]   (as root; needs bwrap and wrk: apt-get install bubblewrap wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
nestbox=$PWD/$build/launcher/nestbox
nestboxd=$PWD/$build/src/server/nestboxd
spawn_bench=$PWD/$build/bench/spawn_bench
rounds=${ROUNDS:-300}
for tool in bwrap wrk curl unshare; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is missing (apt-get install bubblewrap wrk curl)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/nestbox-bench-XXXXXX)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/ws" && chown 10001:10001 "$work/ws"

echo "## Launcher start-up ($rounds interleaved rounds)"
echo
bwrap_root="--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin --symlink usr/lib /lib
 --symlink usr/lib64 /lib64 --symlink usr/lib32 /lib32 --ro-bind-try /opt /opt
 --ro-bind-try /etc/ld.so.cache /etc/ld.so.cache --ro-bind-try /etc/ssl /etc/ssl
 --ro-bind-try /etc/alternatives /etc/alternatives --ro-bind-try /etc/resolv.conf /etc/resolv.conf
 --ro-bind-try /etc/hosts /etc/hosts --ro-bind-try /etc/nsswitch.conf /etc/nsswitch.conf
 --ro-bind-try /etc/localtime /etc/localtime --proc /proc --dev /dev --tmpfs /tmp"
limits="--memory 512M --pids 256 --cpu 100"
"$spawn_bench" "$rounds" 20 \
    "nestbox (limits)" "$nestbox $limits true" \
    "bwrap" "bwrap --unshare-all --die-with-parent $bwrap_root true" \
    "unshare" "unshare --mount --pid --net --ipc --uts --fork true" \
    "nestbox (no limits)" "$nestbox true" \
    "nestbox (server's policy)" "$nestbox --uid 10001 --gid 10001 --workspace $work/ws $limits --timeout 120 true" \
    | tee "$work/launcher.md"
median() { awk -F'|' -v l=" $1 " '$2 == l { gsub(/ /, "", $3); print $3 }' "$work/launcher.md"; }
nb=$(median "nestbox (limits)"); bw=$(median "bwrap"); us=$(median "unshare")
echo
awk -v a="$nb" -v b="$bw" -v c="$us" 'BEGIN { printf "nestbox / bwrap = **%.2f** (target <= 0.70); nestbox / unshare = **%.2f** (target <= 1.20)\n", a / b, a / c }'

echo
echo "## nestboxd"
echo
port=$((20000 + RANDOM % 20000))
"$nestboxd" --listen "127.0.0.1:$port" --workspace-root "$work/workspaces" --max-concurrent 32 \
    --max-output 512M --max-body 1M --log-level warn 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do curl -sf "localhost:$port/healthz" >/dev/null && break; sleep 0.1; done
idle_kb=$(awk '/VmRSS/ { print $2 }' "/proc/$server_pid/status")
curl -s "localhost:$port/exec" -d '{"agent_id":"bench","argv":["true"]}' >/dev/null  # creates the agent

wrk -t1 -c1 -d15s --latency -s bench/exec.lua "http://127.0.0.1:$port/exec" >"$work/latency.txt"
p50=$(awk '$1 == "50%" { print $2 }' "$work/latency.txt")
p99=$(awk '$1 == "99%" { print $2 }' "$work/latency.txt")
wrk -t2 -c16 -d30s -s bench/exec.lua "http://127.0.0.1:$port/exec" >"$work/throughput.txt"
rps=$(awk '/Requests\/sec/ { print $2 }' "$work/throughput.txt")
non2xx=$(awk '/Non-2xx/ { print $5 }' "$work/throughput.txt"); non2xx=${non2xx:-0}
sockerr=$(awk '/Socket errors/ { print }' "$work/throughput.txt")

# Two kinds of output: `yes`, the worst case for JSON (every other byte is a newline, escaped), and
# 76-column text lines (base64), closer to what commands print.
bytes=268435456
stream() {  # PRODUCER -> "seconds alone, seconds through /exec-stream"
    local alone streamed
    alone=$( { /usr/bin/time -f %e sh -c "$1 >/dev/null"; } 2>&1 )
    streamed=$(curl -s -N -o /dev/null -w '%{time_total}' "localhost:$port/exec-stream" \
        -d "{\"agent_id\":\"bench\",\"command\":\"$1\",\"max_output_bytes\":$bytes,\"timeout_sec\":300}")
    echo "$alone $streamed"
}
read -r yes_alone yes_streamed <<<"$(stream "yes | head -c $bytes")"
read -r text_alone text_streamed <<<"$(stream "base64 -w 76 /dev/zero | head -c $bytes")"
peak_kb=$(awk '/VmHWM/ { print $2 }' "/proc/$server_pid/status")

to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /s$/) n *= 1000; print n }'; }
server_nb=$(median "nestbox (server's policy)")
echo "| measure | value | target |"
echo "|---|---:|---|"
echo "| /exec of true, p50 | $(to_ms "$p50") ms | |"
echo "| /exec of true, p99 | $(to_ms "$p99") ms | |"
echo "| nestbox alone with the server's policy, median | $server_nb ms | |"
awk -v a="$(to_ms "$p50")" -v b="$server_nb" 'BEGIN { printf "| /exec p50 / nestbox alone | **%.2f** | <= 1.15 |\n", a / b }'
echo "| sustained /exec, 16 clients, 30 s | **$rps** req/s | >= 300 req/s |"
echo "| non-2xx responses | $non2xx | 0 |"
[ -n "$sockerr" ] && echo "| socket errors | $sockerr | none |"
stream_rows() {  # NAME ALONE STREAMED
    awk -v name="$1" -v n="$bytes" -v a="$2" -v s="$3" 'BEGIN {
        printf "| 256 MiB of %s alone (piped to /dev/null) | %.0f MB/s | |\n", name, n / a / 1e6
        printf "| 256 MiB of %s through /exec-stream | %.0f MB/s | |\n", name, n / s / 1e6
        printf "| /exec-stream / alone, %s | **%.2f** | >= 0.50 |\n", name, a / s }'
}
stream_rows "yes" "$yes_alone" "$yes_streamed"
stream_rows "text lines" "$text_alone" "$text_streamed"
echo "| server RSS, idle | $((idle_kb / 1024)) MiB | <= 16 MiB |"
echo "| server peak RSS (after all of the above) | $((peak_kb / 1024)) MiB | < 32 MiB |"
