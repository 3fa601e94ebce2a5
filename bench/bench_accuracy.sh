#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_accuracy.sh BUILD_DIR - the accuracy benchmark (bench/accuracy.c,
# docs/benchmarks.md §Accuracy): the generated trace with its documented
# parameters and seed through sliding_window with 1 (two counters), 2, 10
# and 60 sub-windows against the exact sliding_log. Trace time only: the
# figures do not depend on the machine or its load.
# Then the hybrid store (3 simulated nodes syncing every 10 and 50 ms of
# trace time through a real redis-server, bench/accuracy_hybrid.c) on two
# smaller traces of the same generator: the default limit with 200
# clients for 1 hour, and a fast one (100 per 10 s, 10 clients, 1 hour)
# where 50 ms is a visible share of a client's gaps. About 20 minutes:
# every sync is a real round trip.
set -euo pipefail
build=${1:-build-release}
b="$build/bench/bench_accuracy"
"$b"
echo "# the hybrid store, 3 nodes"
"$b" --clients 200 --hours 1 --decider sliding_window:1 --decider hybrid:3:10 \
    --decider hybrid:3:50
"$b" --requests 100 --period 10s --clients 10 --hours 1 --decider sliding_window:1 \
    --decider hybrid:3:10 --decider hybrid:3:50
