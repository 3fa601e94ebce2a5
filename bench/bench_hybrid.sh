#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_hybrid.sh BUILD_DIR - the hybrid store's overshoot with 3 simulated
# nodes at sync intervals of 10 and 50 ms, on the generated trace of
# bench/bench_hybrid.c (200 clients, 120 s, seed 18; its parameters are in
# that file's comment), replayed on the trace's clock through the store's
# own code on a real redis-server it starts (and stops by PID).
# Output: `name value unit` lines (no target is set for these figures).
set -euo pipefail
build=${1:-build-release}
bin=$build/bench/bench_hybrid
if [[ ! -x "$bin" ]]; then
    echo "bench_hybrid: $bin not built" >&2
    exit 1
fi
command -v redis-server > /dev/null || { echo "bench_hybrid: redis-server missing" >&2; exit 1; }
"$bin" --clients 200 --seconds 120 --seed 18 --nodes 3 --sync-ms 10,50
