#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_grpc.sh BUILD_DIR - what a decision costs the server, by protocol:
# sluiced's CPU time (utime+stime from /proc/PID/stat) divided by the
# decisions it served (sluice_check_duration_seconds_count from /metrics),
# so the figure does not depend on the load generator (utime alone is
# printed beside it: the rest, stime, is the kernel's). Same run, same
# sluiced (one worker), same rule and key, one listener for the three
# protocols:
#   gRPC ShouldRateLimit  h2load -c 50 -m 16 (framed request, prior knowledge)
#   RESP SL.CHECK         redis-benchmark -c 50 -P 16
#   HTTP POST /v1/check   wrk -t1 -c64 (keep-alive)
# Pinned as docs/contracts.md §Interfaces says: sluiced on CPU 0, the load
# generator on CPU 1. Each figure is the median of SL_BENCH_ROUNDS (3)
# interleaved runs of SL_BENCH_GRPC_SECONDS (5) seconds. Target: gRPC's
# CPU per decision <= 1.5x RESP's. Output: `name value unit` lines, the ratio
# with MET or MISSED and the target. It does not build anything and kills
# only the server it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
secs=${SL_BENCH_GRPC_SECONDS:-5}
rounds=${SL_BENCH_ROUNDS:-3}
here=$(cd "$(dirname "$0")" && pwd)
[[ -x "$sluiced" ]] || { echo "bench_grpc: $sluiced not built" >&2; exit 1; }
. "$here/lib.sh"
bench_init bench_grpc h2load redis-benchmark wrk taskset curl protoc

port=$(free_port)
per_user_rules
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $port, protocols: [grpc, resp, http1]}]
workers: 1
rules: {files: [rules.yaml], watch: false}
log: {level: warn}
YAML
taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
pid=$!
pids+=("$pid")
wait_http "$port" /readyz

# The framed RateLimitRequest h2load sends (lib.sh).
rls_request "$tmp/req.bin"
cat >"$tmp/check.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"domain":"bench","descriptors":[{"user":"u1"}]}'
LUA

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
utime_ticks() { awk '{ print $14 }' "/proc/$pid/stat"; }
decisions() {
    curl -sf "http://127.0.0.1:$port/metrics" |
        awk '/^sluice_check_duration_seconds_count / { print $2 }'
}

# Each runner prints the load generator's req/s; it fails on any error.
run_grpc() {
    local out
    out=$(taskset -c 1 h2load -c 50 -m 16 -D "$secs" -d "$tmp/req.bin" \
        -H 'content-type: application/grpc' -H 'te: trailers' \
        "http://127.0.0.1:$port/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")
    grep -q " 0 failed, 0 errored" <<<"$out" || { echo "bench_grpc: h2load: $out" >&2; exit 1; }
    awk '/^finished in/ { print $4 }' <<<"$out"
}
run_resp() {
    local n=$((secs * 400000))
    taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$n" -P 16 --csv \
        SL.CHECK bench 1 user u1 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'
}
run_http() {
    local out
    out=$(taskset -c 1 wrk -t1 -c64 -d"${secs}s" -s "$tmp/check.lua" "http://127.0.0.1:$port/v1/check")
    ! grep -q "Non-2xx" <<<"$out" || { echo "bench_grpc: wrk: $out" >&2; exit 1; }
    awk '/^Requests\/sec:/ { print $2 }' <<<"$out"
}

# measure NAME: one run; appends req/s and us/decision to NAME's arrays.
tck=$(getconf CLK_TCK)
measure() {
    local c0 d0 rps c1 d1 u0 u1
    c0=$(cpu_ticks) u0=$(utime_ticks) d0=$(decisions)
    rps=$("run_$1")
    c1=$(cpu_ticks) u1=$(utime_ticks) d1=$(decisions)
    eval "${1}_rps+=(\"$rps\")"
    eval "${1}_user+=(\"$(awk -v c=$((u1 - u0)) -v t="$tck" -v d="$(awk -v a="$d1" -v b="$d0" 'BEGIN { print a - b }')" \
        'BEGIN { printf "%.3f", c / t * 1e6 / d }')\")"
    eval "${1}_us+=(\"$(awk -v c=$((c1 - c0)) -v t="$tck" -v d="$(awk -v a="$d1" -v b="$d0" 'BEGIN { print a - b }')" \
        'BEGIN { printf "%.3f", c / t * 1e6 / d }')\")"
}

grpc_rps=() grpc_us=() grpc_user=() resp_rps=() resp_us=() resp_user=() http_rps=() http_us=() http_user=()
for _ in $(seq "$rounds"); do
    measure grpc
    measure resp
    measure http
done
g=$(median "${grpc_us[@]}") r=$(median "${resp_us[@]}") h=$(median "${http_us[@]}")
echo "grpc_rls_rps $(median "${grpc_rps[@]}") req/s"
echo "grpc_rls_cpu_per_decision $g us"
echo "grpc_rls_utime_per_decision $(median "${grpc_user[@]}") us"
echo "resp_sl_check_p16_rps $(median "${resp_rps[@]}") req/s"
echo "resp_sl_check_p16_cpu_per_decision $r us"
echo "resp_sl_check_p16_utime_per_decision $(median "${resp_user[@]}") us"
echo "http_v1_check_rps $(median "${http_rps[@]}") req/s"
echo "http_v1_check_cpu_per_decision $h us"
echo "http_v1_check_utime_per_decision $(median "${http_user[@]}") us"
ratio=$(awk -v a="$g" -v b="$r" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v x="$ratio" 'BEGIN { print (x <= 1.5) ? "MET" : "MISSED" }')
echo "grpc_vs_resp_cpu_per_decision $ratio x $verdict target<=1.5"
echo "http_vs_resp_cpu_per_decision $(awk -v a="$h" -v b="$r" 'BEGIN { printf "%.2f", a / b }') x"
