#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# run.sh BUILD_DIR - `make bench`: the library benchmark (bench_table), then
# every executable bench/bench_*.sh, each given BUILD_DIR, so that server
# benchmarks are added as files without editing this script. Output: the
# `name value unit [MET|MISSED target...]` lines of docs/contracts.md §Interfaces.
# It does not build anything (the Makefile does) or judge the figures.
set -euo pipefail
build=${1:-build-release}
here=$(cd "$(dirname "$0")" && pwd)

echo "# machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [[ -x "$build/bench/bench_table" ]]; then
    "$build/bench/bench_table" "${SL_BENCH_SECONDS:-0.3}"
else
    echo "bench: $build/bench/bench_table not built" >&2
    exit 1
fi
status=0
for script in "$here"/bench_*.sh; do
    [[ -x "$script" ]] || continue
    echo "# $(basename "$script")"
    "$script" "$build" || { echo "bench: $(basename "$script") failed" >&2; status=1; }
done
exit $status
