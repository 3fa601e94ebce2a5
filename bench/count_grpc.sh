#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
#
# count_grpc.sh SLUICED_A [SLUICED_B] [N] - user-space instructions per
# command of one or two builds of sluiced, counted by valgrind's callgrind
# on the server alone, for what bench_grpc.sh and bench_decision_cpu.sh time:
#   grpc_rls         ShouldRateLimit, domain "bench", user u1 (h2load, one
#                    connection, 16 streams in flight)
#   resp_sl_check    SL.CHECK bench 1 user u1 (redis-benchmark -c 1 -P 16)
#   resp_cl_throttle CL.THROTTLE over 100,000 random keys (-P 16)
#   resp_ping        PING (-P 16): the connection, parsing and reply path
# One sluiced per build (one worker, memory store, server.io_uring off as
# valgrind does not follow io_uring) serves them in turn: N/4 commands to
# warm up (the CL.THROTTLE warm-up is 500,000 commands, so that nearly every
# key exists and the table has grown before counting),
# the counters zeroed (callgrind_control -z), N commands (20,000), the
# counters dumped. Instruction counts do not move with the machine's load;
# they do not see the kernel or cache misses (bench_grpc.sh and
# bench_decision_cpu.sh time those). With SL_COUNT_KEEP=DIR the dumps are
# kept there for callgrind_annotate.
#
# Not part of `make bench`: the before/after tool for the gRPC room and
# the RESP path. Prints per build and command the instructions per command,
# grpc_rls / resp_sl_check, resp_cl_throttle - resp_ping, and with two
# builds B/A per command.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 SLUICED_A [SLUICED_B] [N]" >&2; exit 2; }
bins=("$(realpath "$1")")
[[ $# -ge 2 && ! "$2" =~ ^[0-9]+$ ]] && { bins+=("$(realpath "$2")"); shift; }
n=${2:-20000}
n=$((n / 16 * 16))
. "$(dirname "$0")/lib.sh"
bench_init count_grpc valgrind callgrind_control h2load redis-benchmark redis-cli protoc
per_user_rules
rls_request "$tmp/req.bin"
url_path=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit

# load NAME PORT COUNT
load() {
    local out
    case $1 in
    grpc_rls)
        out=$(h2load -n "$3" -c 1 -m 16 -d "$tmp/req.bin" -H 'content-type: application/grpc' \
            -H 'te: trailers' "http://127.0.0.1:$2$url_path")
        grep -q " 0 failed, 0 errored" <<<"$out" || { echo "count_grpc: h2load: $out" >&2; exit 1; }
        ;;
    resp_sl_check) redis-benchmark -p "$2" -c 1 -P 16 -n "$3" -q SL.CHECK bench 1 user u1 >/dev/null ;;
    resp_cl_throttle)
        redis-benchmark -p "$2" -c 1 -P 16 -n "$3" -r 100000 -q CL.THROTTLE key:__rand_int__ 15 30 60 \
            >/dev/null
        ;;
    resp_ping) redis-benchmark -p "$2" -c 1 -P 16 -n "$3" -q PING >/dev/null ;;
    esac
}

names=(grpc_rls resp_sl_check resp_cl_throttle resp_ping)
declare -A v
for b in "${!bins[@]}"; do
    label=$([[ $b == 0 ]] && echo A || echo B)
    p=$(free_port)
    cat >"$tmp/c.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $p, protocols: [resp, grpc]}]
workers: 1
server: {io_uring: "off"}
rules: {files: [rules.yaml], watch: false}
store: {max_bytes: 256MiB}
log: {level: warn}
YAML
    cg="$tmp/cg.$label"
    valgrind --tool=callgrind --callgrind-out-file="$cg" "${bins[$b]}" -c "$tmp/c.yaml" \
        2>"$tmp/vg.$label.log" &
    pid=$!
    pids+=($pid)
    for _ in $(seq 600); do # valgrind starts slowly
        redis-cli -p "$p" PING >/dev/null 2>&1 && break
        sleep 0.1
    done
    wait_redis "$p"
    k=0
    for name in "${names[@]}"; do
        warm=$((n / 4))
        [[ $name == resp_cl_throttle ]] && warm=500000 # all but 0.7 % of the keys
        load "$name" "$p" "$warm"
        callgrind_control -z "$pid" >/dev/null 2>&1
        load "$name" "$p" "$n"
        callgrind_control -d "$pid" >/dev/null 2>&1
        k=$((k + 1))
        dump="$cg.$k"
        for _ in $(seq 100); do [[ -s "$dump" ]] && grep -q '^totals:' "$dump" && break; sleep 0.1; done
        v[$label.$name]=$(awk -v n="$n" '/^totals:/ { printf "%.0f", $2 / n }' "$dump")
        [[ -n "${SL_COUNT_KEEP:-}" ]] && cp "$dump" "$SL_COUNT_KEEP/callgrind.$label.$name"
        echo "instructions_per_command.$name $label ${v[$label.$name]}"
    done
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    awk -v g="${v[$label.grpc_rls]}" -v r="${v[$label.resp_sl_check]}" \
        -v t="${v[$label.resp_cl_throttle]}" -v q="${v[$label.resp_ping]}" -v l="$label" 'BEGIN {
        printf "grpc_rls_vs_resp_sl_check %s %.2f x\n", l, g / r
        printf "resp_cl_throttle_above_ping %s %d instructions\n", l, t - q }'
done
if ((${#bins[@]} == 2)); then
    for name in "${names[@]}"; do
        awk -v a="${v[A.$name]}" -v b="${v[B.$name]}" -v m="$name" \
            'BEGIN { printf "instructions_per_command.%s B/A %.3f\n", m, b / a }'
    done
fi
