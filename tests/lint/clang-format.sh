#!/usr/bin/env bash
# Fails if any C++ source in the repository is not formatted by the repository's .clang-format.
set -euo pipefail
cd "$1"
mapfile -t files < <(find src launcher policy tests bench -name '*.cpp' -o -name '*.hpp' 2>/dev/null | sort)
clang-format --dry-run -Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
