#!/bin/bash
# nestbox's container entrypoint, for the nestboxd sidecar and for the control plane next to it.
#
#   nestbox-entrypoint [COMMAND [ARG...]]     waits for WAIT_FOR_SIDECAR if set, then exec's COMMAND
#                                             (default: nestboxd; a first argument starting with
#                                             '-' is taken as nestboxd's flags)
#   nestbox-entrypoint --healthcheck [HOST:PORT]
#                                             one GET /healthz (default 127.0.0.1:9090): exit 0 on
#                                             200, else 1; for a compose healthcheck
#
# Environment:
#   WAIT_FOR_SIDECAR=HOST:PORT   before starting, poll http://HOST:PORT/healthz until it answers
#                                200 (the sidecar ran its self-test sandbox). HOST may be a name,
#                                an IPv4 address or [IPv6].
#   WAIT_FOR_SIDECAR_TIMEOUT=S   give up after S seconds (default 60) and exit 1 without starting
#                                COMMAND: a control plane that started anyway would hand its agents
#                                a sidecar that cannot run their commands.
#
# It runs as PID 1 and exec's COMMAND, which becomes PID 1 in its place (nestboxd reaps orphans as
# PID 1). It needs bash and coreutils only: the probe is HTTP over bash's /dev/tcp, so the
# control plane's image needs neither curl nor python. Every attempt is bounded by `timeout`,
# since a connect to an address that drops packets would otherwise block for minutes.
set -euo pipefail

prog=nestbox-entrypoint

# Prints the HTTP status of GET http://HOST:PORT/healthz, or nothing if there was no answer.
healthz_status() {
    local host=$1 port=$2
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 5 bash -c '
        host=$1 port=$2
        exec 3<>"/dev/tcp/$host/$port" || exit 1
        authority=$host
        [[ $host == *:* ]] && authority="[$host]"
        printf "GET /healthz HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n" \
            "$authority" "$port" >&3
        IFS= read -r line <&3 || exit 1
        [[ $line =~ ^HTTP/1\.[01]\ ([0-9]{3}) ]] && echo "${BASH_REMATCH[1]}"
    ' probe "$host" "$port" 2>/dev/null || true
}

# Splits HOST:PORT (or [V6]:PORT) into the globals host and port; exits 2 on anything else.
parse_target() {
    local target=$1
    if [[ $target =~ ^\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})$ ]] ||
        [[ $target =~ ^([^:/[:space:]]+):([0-9]{1,5})$ ]]; then
        host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}
    else
        echo "$prog: '$target' is not HOST:PORT" >&2
        exit 2
    fi
}

if [[ ${1:-} == --healthcheck ]]; then
    parse_target "${2:-127.0.0.1:9090}"
    [[ $(healthz_status "$host" "$port") == 200 ]]
    exit
fi

if [[ $# -eq 0 ]]; then
    set -- nestboxd
elif [[ $1 == -* ]]; then
    set -- nestboxd "$@"
fi

if [[ -n ${WAIT_FOR_SIDECAR:-} ]]; then
    parse_target "$WAIT_FOR_SIDECAR"
    limit=${WAIT_FOR_SIDECAR_TIMEOUT:-60}
    if ! [[ $limit =~ ^[0-9]+$ ]]; then
        echo "$prog: WAIT_FOR_SIDECAR_TIMEOUT='$limit' is not a number of seconds" >&2
        exit 2
    fi
    # As PID 1 a signal without a handler is ignored; stopping the container must not wait for
    # the timeout.
    trap 'exit 143' TERM
    trap 'exit 130' INT
    echo "$prog: waiting up to ${limit}s for http://$WAIT_FOR_SIDECAR/healthz"
    start=$SECONDS
    last=
    while :; do
        last=$(healthz_status "$host" "$port")
        [[ $last == 200 ]] && break
        if ((SECONDS - start >= limit)); then
            echo "$prog: http://$WAIT_FOR_SIDECAR/healthz did not answer 200 within ${limit}s" \
                "(last: ${last:-no answer}); not starting $*" >&2
            exit 1
        fi
        sleep 1
    done
    echo "$prog: sidecar ready after $((SECONDS - start))s"
    trap - TERM INT
fi

exec "$@"
