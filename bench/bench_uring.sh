#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_uring.sh BUILD_DIR - would an io_uring loop pay on this kernel?
# Runs BUILD_DIR/bench/uring_probe pinned to CPU 0: the server side's CPU
# per request with a read() and a write() per connection against one
# io_uring_enter() per loop iteration (docs/benchmarks.md). No target, no
# server started.
set -euo pipefail
build=${1:-build-release}
probe=$build/bench/uring_probe
if [[ ! -x "$probe" ]]; then
    echo "bench_uring: $probe not built (liburing-dev missing when $build was configured)" >&2
    exit 1
fi
taskset -c 0 "$probe" "${SL_BENCH_URING_ROUNDS:-20000}"
