#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_accuracy.sh BUILD_DIR - the accuracy benchmark (bench/accuracy.c,
# docs/benchmarks.md §Accuracy): the generated trace with its documented
# parameters and seed through sliding_window with 1 (two counters), 2, 10
# and 60 sub-windows against the exact sliding_log. Trace time only: the
# figures do not depend on the machine or its load.
set -euo pipefail
build=${1:-build-release}
exec "$build/bench/bench_accuracy"
