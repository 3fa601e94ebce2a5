#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# fuzz.sh BUILD_DIR SECONDS - run every libFuzzer driver on its committed seed
# corpus (fuzz/corpus/NAME) for SECONDS each; new inputs go to a scratch
# directory, never into the committed corpus.
set -euo pipefail
build=${1:-build}
secs=${2:-60}
shopt -s nullglob
status=0
for bin in "$build"/fuzz/fuzz_*; do
    [[ -x "$bin" ]] || continue
    name=$(basename "$bin")
    scratch=$(mktemp -d)
    echo "fuzz: $name for ${secs}s"
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        $( [[ -f fuzz/$name.dict ]] && echo "-dict=fuzz/$name.dict" ) \
        "$scratch" "fuzz/corpus/$name" || status=1
    rm -rf "$scratch"
done
exit $status
