#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# symbols_check.sh HEADER LIBRARY CC [HEADER...] - the shared library exports
# exactly the functions the HEADERs declare (sluice.h, and the headers
# installed beside it): no internal symbol leaks into the ABI, and no
# declared function is missing or hidden. The declarations are read by the
# compiler (gcc's -aux-info lists every function prototype with the file
# it is in), not by pattern matching on the header's text.
set -euo pipefail
header=$1 lib=$2 cc=$3
headers=("$header" "${@:4}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '#include "%s"\n' "${headers[@]}" >"$tmp/decl.c"
"$cc" -fsyntax-only -aux-info "$tmp/aux" "$tmp/decl.c"
# Lines look like: /* /path/sluice.h:51:NC */ extern const char *sl_strerror (int);
# The name is the first identifier followed by " (" after the comment: a
# parameter that is itself a function pointer ("void (*)(...)") comes later.
for h in "${headers[@]}"; do grep -F "/* $h:" "$tmp/aux"; done | sed -E 's/^\/\*[^*]*\*\/ //; s/^[^(]* \**([A-Za-z_][A-Za-z0-9_]*) \(.*/\1/' |
    sort -u >"$tmp/declared"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TWVDBRi]$/ { print $3 }' | sed 's/@.*//' |
    sort -u >"$tmp/exported"

n=$(wc -l <"$tmp/declared")
if ((n < 10)); then
    echo "only $n functions found in ${headers[*]}: the declaration reader is broken" >&2
    exit 1
fi
if ! diff -u --label "declared in $(basename -a "${headers[@]}" | paste -sd' ')" --label "exported by $(basename "$lib")" \
    "$tmp/declared" "$tmp/exported"; then
    echo "'-' lines: declared but not exported (missing SL_API or not defined);" \
        "'+' lines: exported but not declared (an internal symbol leaks)" >&2
    exit 1
fi
echo "$n functions declared, the same $n exported"
