#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# fuzz.sh BUILD_DIR SECONDS [RUNS] - run every libFuzzer driver on its
# committed seed corpus (fuzz/corpus/NAME) for SECONDS each or, when RUNS is
# given, for RUNS executions each (the figure docs/security.md reports); new
# inputs go to a scratch directory, never into the committed corpus, and a
# crashing input is saved as BUILD_DIR/fuzz-artifacts/NAME-crash-... Ends with
# one line per fuzzer: executions, seconds, coverage (edges) and crashes.
set -euo pipefail
build=${1:-build}
secs=${2:-60}
runs=${3:-}
shopt -s nullglob
status=0
summary=()
for bin in "$build"/fuzz/fuzz_*; do
    [[ -x "$bin" ]] || continue
    name=$(basename "$bin")
    scratch=$(mktemp -d)
    log=$(mktemp)
    if [[ -n "$runs" ]]; then
        echo "fuzz: $name for $runs executions"
        limit=(-runs="$runs")
    else
        echo "fuzz: $name for ${secs}s"
        limit=(-max_total_time="$secs")
    fi
    crashed=0
    mkdir -p "$build/fuzz-artifacts"
    "$bin" "${limit[@]}" -artifact_prefix="$build/fuzz-artifacts/$name-" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        $( [[ -f fuzz/$name.dict ]] && echo "-dict=fuzz/$name.dict" ) \
        "$scratch" "fuzz/corpus/$name" >"$log" 2>&1 || { status=1; crashed=1; }
    tail -n 12 "$log"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    summary+=("$(printf '%-22s %12s execs %6ss  cov %6s edges  crashes %d' \
        "$name" "${execs:-?}" "${took:-?}" "${cov:-?}" "$crashed")")
    rm -rf "$scratch" "$log"
done
echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
exit $status
