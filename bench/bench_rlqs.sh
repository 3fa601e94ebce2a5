#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_rlqs.sh BUILD_DIR - what Envoy's rate limit quota service (RLQS,
# StreamRateLimitQuotas) costs one sluiced worker: E simulated Envoys
# (bench/rlqs_load.c), one long-lived stream each, at most 100 a
# connection, each reporting the same B buckets ({user: u0} .. {user:
# u<B-1>}, so every bucket's limit is divided among E members) once every
# SL_BENCH_RLQS_INTERVAL (1) second, 10 requests a second per bucket each.
# One step per SL_BENCH_RLQS_STEPS ("100x100 1000x100", ExB), each run
# twice, each run on a fresh sluiced (one worker, the grpc listener,
# domain "bench" with a token bucket per `user`):
#   divided  the limit is half the Envoys' demand (E x 5 a second), so
#            every pool is short and the division decides the shares;
#   ample    the limit (1e9 a second) is far above it: every demand is met.
# sluiced is pinned to CPU 0, the client to CPU 1; SL_BENCH_RLQS_WARMUP (3)
# seconds, then SL_BENCH_RLQS_SECONDS (10) measured. Per run, with the
# prefix rlqs_<E>x<B>_<divided|ample>_:
#   reports_per_second, bucket_reports_per_second   what the Envoys sent
#   server_cpu                 sluiced's utime+stime (/proc/PID/stat) over
#                              the measured window, in cores
#   server_cpu_per_report      that CPU over the reports sent meanwhile
#   server_cpu_per_bucket_report  the same over the bucket usages
#   server_rss_per_bucket      VmRSS growth from before the first connection
#                              to the end of the window, over E x B
#   streams_open_at_end, envoys_all_assigned   out of E
#   reports_late (a report due while the previous one could not be sent:
#   the server is not reading), actions_received, stream_errors,
#   rst_stream, goaway, connection_errors, bad_messages
#   reports_accepted           yes when sluiced's
#                              sluice_rlqs_reported_requests_total grew by
#                              exactly the requests the Envoys reported
#   report_wait_max            the longest a report waited to be sent (the
#                              server not reading: its connection window
#                              shut), late_window_gap_max the longest the
#                              server gave a shut connection no window
# and for 1000x100 at a 1 s interval the lines ..._sustained MET|MISSED:
# every stream open at the end, every Envoy assigned every bucket, every
# report accepted, no stream or connection error, sluiced's CPU below 1
# core; and ..._report_delay MET|MISSED: no report waited more than 1 s.
# SLUICED=path runs another sluiced binary (e.g. a branch's build). If the
# server does not serve RLQS (it refuses the config keys or the method), it
# says so and exits 1. It does not build anything and kills only the
# servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=${SLUICED:-$build/server/sluiced}
load=$build/bench/rlqs_load
steps=${SL_BENCH_RLQS_STEPS:-100x100 1000x100}
interval=${SL_BENCH_RLQS_INTERVAL:-1}
secs=${SL_BENCH_RLQS_SECONDS:-10}
warmup=${SL_BENCH_RLQS_WARMUP:-3}
here=$(cd "$(dirname "$0")" && pwd)
[[ -x "$sluiced" ]] || { echo "bench_rlqs: $sluiced not built" >&2; exit 1; }
[[ -x "$load" ]] || { echo "bench_rlqs: $load not built" >&2; exit 1; }
. "$here/lib.sh"
bench_init bench_rlqs taskset curl timeout

demand=10 # requests a second each Envoy reports per bucket

# rules LIMIT: domain "bench", a token bucket per `user` of LIMIT requests a
# second (burst twice that).
rules() {
    cat >"$tmp/rules.yaml" <<YAML
domain: bench
descriptors:
  - key: user
    limits:
      - {name: per_user, algorithm: token_bucket, requests: $1, period: 1s, burst: $((2 * $1))}
YAML
}

# start_sluiced [B]: a fresh sluiced on a new port for B buckets a stream
# (the default limits take 1,024); sets $port and $pid. Exits 1 when it will
# not start with the RLQS keys (a build without RLQS).
start_sluiced() {
    local b=${1:-1} more=""
    ((b <= 1024)) || more=", rlqs_max_buckets_per_stream: $b, max_message_bytes: $((b * 128))"
    port=$(free_port)
    cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $port, protocols: [grpc, http1]}]
workers: 1
rules: {files: [rules.yaml], watch: false}
log: {level: warn}
grpc: {rlqs_max_streams_per_connection: 100$more}
YAML
    taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "bench_rlqs: $sluiced did not start with grpc.rlqs_max_streams_per_connection" \
                "(does it serve RLQS?):" >&2
            sed 's/^/  /' "$tmp/sluiced.log" >&2
            exit 1
        fi
        sleep 0.05
    done
    echo "bench_rlqs: nothing answers on port $port" >&2
    exit 1
}

stop_sluiced() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

reported() {
    { curl -sf "http://127.0.0.1:$port/metrics" || true; } |
        awk '/^sluice_rlqs_reported_requests_total/ { n += $2; found = 1 } END { print found ? n : -1 }'
}

# value FILE NAME: the figure NAME of rlqs_load's output in FILE.
value() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }

# One Envoy, one bucket: does this server serve StreamRateLimitQuotas?
rules 1000
start_sluiced
if ! timeout 20 taskset -c 1 "$load" --port "$port" --envoys 1 --buckets 1 --interval 0.5 \
    --seconds 1 --warmup 0 >"$tmp/probe.out" 2>"$tmp/probe.err" ||
    [[ "$(value "$tmp/probe.out" rlqs_envoys_all_assigned)" != 1 ]]; then
    echo "bench_rlqs: $sluiced does not serve RLQS (no assignment on StreamRateLimitQuotas):" >&2
    sed 's/^/  /' "$tmp/probe.err" >&2
    exit 1
fi
stop_sluiced

status=0
for step in $steps; do
    e=${step%x*} b=${step#*x}
    for case in divided ample; do
        name=rlqs_${e}x${b}_$case
        if [[ $case == divided ]]; then rules $((e * demand / 2)); else rules 1000000000; fi
        start_sluiced "$b"
        r0=$(reported)
        out=$tmp/$name.out
        if ! timeout $((${secs%.*} + ${warmup%.*} + 30)) taskset -c 1 "$load" --port "$port" \
            --envoys "$e" --buckets "$b" --demand "$demand" --interval "$interval" \
            --seconds "$secs" --warmup "$warmup" \
            --pid "$pid" --name "$name" >"$out" 2>"$tmp/$name.err"; then
            echo "bench_rlqs: $name: the load client failed:" >&2
            sed 's/^/  /' "$tmp/$name.err" >&2
            status=1
        fi
        r1=$(reported)
        stop_sluiced
        sent=$(value "$out" "${name}_requests_reported")
        accepted=no
        [[ -n "$sent" && "$r0" != -1 && $((r1 - r0)) == "$sent" ]] && accepted=yes
        reports=$(value "$out" "${name}_reports_measured")
        [[ -n "$reports" ]] || { status=1; continue; }
        echo "${name}_reports_per_second $(awk -v r="$reports" -v s="$secs" 'BEGIN { printf "%.0f", r / s }') reports/s"
        echo "${name}_bucket_reports_per_second $(awk -v r="$reports" -v b="$b" -v s="$secs" 'BEGIN { printf "%.0f", r * b / s }') usages/s"
        grep -E "^${name}_(server_cpu|server_cpu_per_report|server_cpu_per_bucket_report|server_rss_per_bucket) " "$out"
        for f in streams_open_at_end envoys_all_assigned; do
            echo "${name}_$f $(value "$out" "${name}_$f") of_$e"
        done
        grep -E "^${name}_(reports_late|report_wait_max|late_window_gap_max|stream_errors|rst_stream|goaway|connection_errors|bad_messages|actions_received) " "$out"
        echo "${name}_reports_accepted $accepted ($((r1 - r0)) of $sent requests reported)"
        if [[ "$e" == 1000 && "$b" == 100 && "$interval" == 1 ]]; then
            cpu=$(value "$out" "${name}_server_cpu")
            ok=$(awk -v o="$(value "$out" "${name}_streams_open_at_end")" \
                -v a="$(value "$out" "${name}_envoys_all_assigned")" \
                    -v x="$(value "$out" "${name}_stream_errors")" \
                -v y="$(value "$out" "${name}_connection_errors")" \
                -v z="$(value "$out" "${name}_bad_messages")" -v c="${cpu:-9}" -v acc="$accepted" \
                'BEGIN { print (o == 1000 && a == 1000 && x == 0 && y == 0 && z == 0 &&
                               acc == "yes" && c < 1) ? "MET" : "MISSED" }')
            echo "${name}_sustained ${cpu:-?} cores $ok target: 1000 Envoys x 100 buckets every 1s on one worker, all streams open and assigned, every report accepted, no error, CPU<1 core"
            w=$(value "$out" "${name}_report_wait_max")
            echo "${name}_report_delay ${w:-?} ms $(awk -v w="${w:-1e9}" 'BEGIN { print (w <= 1000) ? "MET" : "MISSED" }') target<=1000ms (no report waits an interval to be sent)"
        fi
    done
done
exit $status
