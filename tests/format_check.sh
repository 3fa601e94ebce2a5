#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# format_check.sh SOURCE_DIR - every C file git tracks is formatted by the
# committed .clang-format (clang-format 14, Debian's). Fails listing the
# files that are not; `make format` fixes them.
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || { echo "clang-format is not installed" >&2; exit 1; }
bad=()
while IFS= read -r f; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.c' '*.h')
if ((${#bad[@]})); then
    printf 'not formatted (run make format): %s\n' "${bad[@]}" >&2
    exit 1
fi
echo "all $(git ls-files '*.c' '*.h' | wc -l) C files formatted"
