#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
#
# ab_table_count.sh BUILD_A BUILD_B [CHECKS] - instructions per
# sl_table_check of two builds of the library (build trees holding
# lib/libsluice.a), counted by valgrind's callgrind over bench/table_count.c
# built against each: hot (1,000 keys), keys_1m (1,000,000 keys) and flood
# (a full table, every check a new key, another evicted). Instruction counts
# do not move with the machine's load, so one run of each is the figure;
# they do not see cache misses (the flood's extra line of the summary, for
# one), which bench_table's timed figures do.
#
# Not part of `make bench`: the before/after tool for a change to the
# table's hot path (docs/benchmarks.md quotes it). Prints per workload the
# instructions per check of A and of B, and B/A.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BUILD_A BUILD_B [CHECKS]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
checks=${3:-200000}
command -v valgrind >/dev/null || { echo "ab_table_count: valgrind missing (scripts/deps.sh bench)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in A B; do
    build=$1
    [[ $side == B ]] && build=$2
    lib="$build/lib/libsluice.a"
    [[ -f "$lib" ]] || { echo "ab_table_count: no $lib" >&2; exit 1; }
    # The header the library was built from: its source tree's, found from
    # the build's cache (a build of another checkout has its own).
    home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
    cc -O2 -I"$home/include" "$src/bench/table_count.c" "$lib" -lpthread -lm -o "$tmp/count_$side"
done
per_check() { # BIN WORKLOAD -> instructions per check
    valgrind --tool=callgrind --toggle-collect=counted_checks \
        --callgrind-out-file="$tmp/cg.out" "$1" "$2" "$checks" >/dev/null 2>"$tmp/vg.err"
    awk -v n="$checks" '/^summary:/ { printf "%.1f", $2 / n }' "$tmp/cg.out"
}
for w in hot keys_1m flood; do
    a=$(per_check "$tmp/count_A" "$w")
    b=$(per_check "$tmp/count_B" "$w")
    awk -v w="$w" -v a="$a" -v b="$b" \
        'BEGIN { printf "table_instructions_per_check.%s A %s B %s B/A %.3f\n", w, a, b, b / a }'
done
