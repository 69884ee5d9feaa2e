#!/usr/bin/env bash
# Fails when a man page does not render cleanly: any groff warning (-ww: all of them) at the
# width man(1) uses on an 80-column terminal or in groff's default typesetter output, a rendered
# line wider than 80 columns, or a table without the '\" t line that tells man(1) to run tbl.
#
#   render.sh PAGE...
set -euo pipefail

if ! command -v groff >/dev/null; then
    echo "render.sh: groff not found (Debian package groff-base)" >&2
    exit 1
fi

fail=0
for page in "$@"; do
    if grep -q '^\.TS' "$page" && [[ $(head -n 1 "$page") != "'\\\" t" ]]; then
        echo "$page: has a table but its first line is not '\\\" t" >&2
        fail=1
    fi
    # The typesetter (ps) and the terminal at 80 columns (man-db sets LL=78n there).
    for device in "-Tps" "-Tutf8 -rLL=78n -rLT=78n"; do
        # shellcheck disable=SC2086  # $device is two or three words on purpose
        warnings=$(LC_ALL=C.UTF-8 groff -t -man -ww -z $device "$page" 2>&1 >/dev/null || true)
        if [[ -n $warnings ]]; then
            echo "$page ($device): $warnings" >&2
            fail=1
        fi
    done
    wide=$(LC_ALL=C.UTF-8 groff -t -man -Tutf8 -rLL=78n -rLT=78n -P-cbou "$page" 2>/dev/null |
        LC_ALL=C.UTF-8 grep -nE '^.{81,}' || true)
    if [[ -n $wide ]]; then
        echo "$page: rendered lines wider than 80 columns:" >&2
        echo "$wide" >&2
        fail=1
    fi
done
if ((fail == 0)); then
    echo "render.sh: $# pages render without warnings"
fi
exit "$fail"
