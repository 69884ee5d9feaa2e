#!/usr/bin/env bash
# Fails when nestbox(1) and the options nestbox accepts drift apart:
#  - every long option `nestbox --help` prints has an entry in the OPTIONS section of the man
#    page, and every entry there is an option nestbox accepts;
#  - every other `--option` the given documents mention is an option nestbox accepts;
#  - the man page's .TH line carries the version `nestbox --version` prints.
#
#   options.sh NESTBOX MAN_PAGE [DOCUMENT...]
set -euo pipefail

nestbox=$1
page=$2
shift 2
fail=0

# The option column of --help: "  --bind SRC DEST x 2   ..." and "  -h,--help   ...".
mapfile -t help_options < <("$nestbox" --help |
    sed -nE 's/^  (-[a-zA-Z], ?)?(--[a-z][a-z0-9-]*).*/\2/p' | sort -u)
if ((${#help_options[@]} < 10)); then
    echo "options.sh: read only ${#help_options[@]} options from '$nestbox --help'" >&2
    exit 1
fi

# The tags of the .TP/.TQ entries in the man page's OPTIONS section, with roff's \- as -.
mapfile -t page_options < <(awk '
    /^\.SH / { in_options = ($2 == "OPTIONS") }
    in_options && tag { print }
    { tag = in_options && ($1 == ".TP" || $1 == ".TQ") }
' "$page" | sed 's/\\-/-/g' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)

missing=$(comm -23 <(printf '%s\n' "${help_options[@]}") <(printf '%s\n' "${page_options[@]}") |
    tr '\n' ' ')
extra=$(comm -13 <(printf '%s\n' "${help_options[@]}") <(printf '%s\n' "${page_options[@]}") |
    tr '\n' ' ')
if [[ -n $missing ]]; then
    echo "$page: options in 'nestbox --help' without an entry under OPTIONS: $missing" >&2
    fail=1
fi
if [[ -n $extra ]]; then
    echo "$page: entries under OPTIONS that 'nestbox --help' does not list: $extra" >&2
    fail=1
fi

# Every --option mentioned anywhere (examples, prose, other documents) must exist; roff
# comments do not count.
for doc in "$page" "$@"; do
    unknown=$(grep -v '^\.\\"' "$doc" | sed 's/\\-/-/g' |
        { grep -oE -- '--[a-z][a-z0-9-]*' || true; } | sort -u |
        comm -23 - <(printf '%s\n' "${help_options[@]}") | tr '\n' ' ')
    if [[ -n $unknown ]]; then
        echo "$doc: mentions options nestbox does not have: $unknown" >&2
        fail=1
    fi
done

version=$("$nestbox" --version)
if ! grep -qE "^\.TH .*\"${version}\"" "$page"; then
    echo "$page: the .TH line does not name \"$version\" (from nestbox --version)" >&2
    fail=1
fi

if ((fail == 0)); then
    echo "options.sh: ${#help_options[@]} options documented in $page"
fi
exit "$fail"
