#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_grpc.sh BUILD_DIR - what a decision costs the server, by protocol:
# sluiced's CPU time (utime+stime from /proc/PID/stat) divided by the
# decisions it served (sluice_check_duration_seconds_count from /metrics),
# so the figure does not depend on the load generator (utime alone is
# printed beside it: the rest, stime, is the kernel's). Same run, same
# sluiced (one worker), same rule, one key, one listener for the
# protocols; each run type below is one row group (PREFIX_*):
#   grpc_rls                   gRPC ShouldRateLimit, h2load -c 50 -m 16
#                              (framed request, prior knowledge)
#   resp_sl_check_p16          RESP SL.CHECK, redis-benchmark -c 50 -P 16
#   http_v1_check              HTTP POST /v1/check, wrk -t1 -c64 (keep-alive)
#   grpc_rls_same_client       gRPC ShouldRateLimit and RESP SL.CHECK, both
#   resp_sl_check_same_client  from BUILD_DIR/bench/oload --closed --conns 50
#                              --inflight 16 (50 connections, 16 requests in
#                              flight on each, refilled after every read)
# Why both gRPC/RESP pairs: h2load on its one core cannot keep sluiced busy
# at 16 streams a connection, redis-benchmark can. A half-idle server sleeps
# in epoll_wait and is woken again and again, and those sleeps and wake-ups
# (context switches, the kernel's and the loop's) are charged to its
# decisions, so the h2load/redis-benchmark ratio partly compares an idle
# server with a busy one. The same-client pair drives both protocols with one
# generator of one cost and the same in-flight semantics; the first pair
# stays for continuity with the figures recorded before.
# Rows per group: PREFIX_rps (the generator's answers/s), PREFIX_cpu_per_decision
# and PREFIX_utime_per_decision (us), and, so that a reader sees whether the
# server was saturated, PREFIX_server_busy (sluiced's CPU seconds over the
# run's wall seconds: 1.00 = its core never idle) and
# PREFIX_server_vol_ctxsw_per_1k_decisions (voluntary context switches,
# summed over /proc/PID/task/*/status, per 1,000 decisions: how often it
# went to sleep for want of work).
# Pinned as docs/contracts.md §Interfaces says: sluiced on CPU 0, the load
# generator on CPU 1. Each figure is the median of SL_BENCH_ROUNDS (3)
# interleaved rounds (each round runs every group once) of
# SL_BENCH_GRPC_SECONDS (5) seconds. Target: gRPC's CPU per decision <= 1.5x
# RESP's, printed with MET or MISSED for each pair: the h2load and
# redis-benchmark pair (grpc_vs_resp_cpu_per_decision, the one the target
# was set on) and the same-client pair
# (grpc_vs_resp_cpu_per_decision_same_client). Output: `name value unit`
# lines, the ratios with MET or MISSED and the target. Any failed call,
# error reply or non-2xx fails the script. It does not build anything and
# kills only the server it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
oload=$build/bench/oload
secs=${SL_BENCH_GRPC_SECONDS:-5}
rounds=${SL_BENCH_ROUNDS:-3}
here=$(cd "$(dirname "$0")" && pwd)
[[ -x "$sluiced" && -x "$oload" ]] || { echo "bench_grpc: $sluiced or $oload not built" >&2; exit 1; }
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
vol_ctxsw() { cat /proc/"$pid"/task/*/status | awk '/^voluntary_ctxt_switches:/ { s += $2 } END { print s }'; }
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
# oload --closed PROTO: it exits 1 on any error reply or unanswered request.
run_same() {
    local out
    out=$(taskset -c 1 "$oload" --closed --proto "$1" --port "$port" --conns 50 --inflight 16 \
        --seconds "$secs" --keys 1 --name same) || { echo "bench_grpc: oload $1: $out" >&2; exit 1; }
    grep -q "^same_errors 0 " <<<"$out" || { echo "bench_grpc: oload $1: $out" >&2; exit 1; }
    awk '/^same_closed_rate / { print $2 }' <<<"$out"
}
run_grpc_same() { run_same grpc; }
run_resp_same() { run_same resp; }

# measure NAME: one run; appends req/s, us/decision (CPU and user), the
# server's busy fraction and its voluntary context switches per 1,000
# decisions to NAME's arrays.
tck=$(getconf CLK_TCK)
measure() {
    local c0 d0 rps c1 d1 u0 u1 v0 v1 t0 t1 d
    c0=$(cpu_ticks) u0=$(utime_ticks) v0=$(vol_ctxsw) t0=$(date +%s.%N) d0=$(decisions)
    rps=$("run_$1")
    t1=$(date +%s.%N) c1=$(cpu_ticks) u1=$(utime_ticks) v1=$(vol_ctxsw) d1=$(decisions)
    d=$(awk -v a="$d1" -v b="$d0" 'BEGIN { print a - b }')
    eval "${1}_rps+=(\"$rps\")"
    eval "${1}_user+=(\"$(awk -v c=$((u1 - u0)) -v t="$tck" -v d="$d" 'BEGIN { printf "%.3f", c / t * 1e6 / d }')\")"
    eval "${1}_us+=(\"$(awk -v c=$((c1 - c0)) -v t="$tck" -v d="$d" 'BEGIN { printf "%.3f", c / t * 1e6 / d }')\")"
    eval "${1}_busy+=(\"$(awk -v c=$((c1 - c0)) -v t="$tck" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", c / t / (b - a) }')\")"
    eval "${1}_csw+=(\"$(awk -v v=$((v1 - v0)) -v d="$d" 'BEGIN { printf "%.2f", v * 1000 / d }')\")"
}

runs=(grpc resp http grpc_same resp_same)
for r in "${runs[@]}"; do eval "${r}_rps=() ${r}_us=() ${r}_user=() ${r}_busy=() ${r}_csw=()"; done
for _ in $(seq "$rounds"); do
    for r in "${runs[@]}"; do measure "$r"; done
done
# group RUN PREFIX: a run group's rows (the medians of its rounds).
group() {
    local -n rps=${1}_rps us=${1}_us user=${1}_user busy=${1}_busy csw=${1}_csw
    echo "${2}_rps $(median "${rps[@]}") req/s"
    echo "${2}_cpu_per_decision $(median "${us[@]}") us"
    echo "${2}_utime_per_decision $(median "${user[@]}") us"
    echo "${2}_server_busy $(median "${busy[@]}") cores"
    echo "${2}_server_vol_ctxsw_per_1k_decisions $(median "${csw[@]}") count"
}
g=$(median "${grpc_us[@]}") r=$(median "${resp_us[@]}") h=$(median "${http_us[@]}")
gs=$(median "${grpc_same_us[@]}") rs=$(median "${resp_same_us[@]}")
group grpc grpc_rls
group resp resp_sl_check_p16
group http http_v1_check
group grpc_same grpc_rls_same_client
group resp_same resp_sl_check_same_client
ratio=$(awk -v a="$g" -v b="$r" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v x="$ratio" 'BEGIN { print (x <= 1.5) ? "MET" : "MISSED" }')
echo "grpc_vs_resp_cpu_per_decision $ratio x $verdict target<=1.5"
echo "http_vs_resp_cpu_per_decision $(awk -v a="$h" -v b="$r" 'BEGIN { printf "%.2f", a / b }') x"
ratio=$(awk -v a="$gs" -v b="$rs" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v x="$ratio" 'BEGIN { print (x <= 1.5) ? "MET" : "MISSED" }')
echo "grpc_vs_resp_cpu_per_decision_same_client $ratio x $verdict target<=1.5"
