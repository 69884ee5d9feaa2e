#!/usr/bin/env bash
# Runs clang-tidy with the repository's .clang-tidy over every translation unit in the build's
# compile_commands.json (generated sources excluded), two at a time. Any finding fails.
set -uo pipefail
source_root=$1
build_root=$2
cd "$source_root"
mapfile -t files < <(grep -o '"file": "[^"]*"' "$build_root/compile_commands.json" |
    sed 's/"file": "//; s/"$//' | grep -v 'default_seccomp_bpf' | sed 's|^\.\./||' | sort -u)
output=$(printf '%s\n' "${files[@]}" |
    xargs -P 2 -n 4 clang-tidy --quiet --extra-arg=-Wno-unknown-warning-option -p "$build_root" 2>&1)
status=$?
printf '%s\n' "$output" | grep -v -e 'warnings* generated' -e '^Suppressed' -e '^Use -header-filter'
[ $status -eq 0 ] && echo "clang-tidy: ${#files[@]} files clean"
exit $status
