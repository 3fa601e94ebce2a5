#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_peers.sh BUILD_DIR - sluiced against the two Go rate limit services
# people run beside Envoy, on the same rule, the same descriptors and the
# same load client (bench/oload, open loop, gRPC over HTTP/2 with prior
# knowledge, 16 connections, keys k0..k99999 drawn at random):
#
# 1. envoyproxy/ratelimit (RateLimitService/ShouldRateLimit, its own YAML
#    in the RUNTIME_ROOT/RUNTIME_SUBDIRECTORY layout, BACKEND_TYPE=redis over
#    TCP, USE_STATSD=false; without and with LOCAL_CACHE_SIZE_IN_BYTES) and
#    sluiced's gRPC listener with the same YAML file (Envoy's `rate_limit`:
#    a fixed window of 1,000,000,000 an hour per `user`, never denied), with
#    store.type redis (engine module, engine function) on the same
#    redis-server, and with its memory store.
# 2. gubernator v2 (V1/GetRateLimits: a token bucket of 1,000,000,000 a
#    second per key, `oload --api gubernator`), one node, and three nodes
#    (member-list on loopback) with behavior GLOBAL, the load on the first;
#    against sluiced's memory store with the same token bucket
#    (bench/lib.sh per_user_rules) over ShouldRateLimit.
#
# For each case, a fresh set of servers (redis-server too) pinned to CPU 0,
# oload on CPU 1:
#   *_rps              decisions/s oload reaches (it offers far more)
#   *_cpu_us           CPU per decision of the whole service: utime+stime
#                      (/proc/PID/stat) of every process of the case (the
#                      service, its Redis, every gubernator node) over the
#                      decisions oload counted
#   *_utime_us, *_stime_us   the same, apart
#   *_rss_mib_per_100k_keys  growth of the summed VmRSS of those processes
#                      over a fill that sends each of the 100,000 keys at
#                      least once (oload --order sequential); it includes
#                      what the process grows by under load at all (its
#                      connections' buffers, a Go heap's slack)
#   *_p50/p99/p999     open-loop latency at one fixed rate for all cases of a
#                      comparison: half the slowest case's median rate
# Targets (MET or MISSED, with the target):
#   sluiced + Redis (module, function) CPU/decision <= 0.33 x ratelimit + Redis
#   sluiced memory CPU/decision <= 0.1 x ratelimit + Redis
#   sluiced memory CPU/decision <= 0.33 x gubernator single node
# The peers are built by bench/peers/build.sh into BUILD_DIR/peers (Go from
# the module proxy, versions pinned there); a peer that does not build is
# reported and its comparison left out, not failed. Each figure is the
# median of SL_BENCH_ROUNDS (3) rounds; each rate and CPU figure one run of
# SL_BENCH_PEERS_SECONDS (3) s after 1 s of warm-up, after the fill (at most
# a few seconds of fill per case at these services' rates); the latency is
# one run per case after the rounds. SL_BENCH_PEERS_ONLY=ratelimit or gubernator runs one
# half. It kills only the processes it started (by PID).
set -euo pipefail
build=${1:-build-release}
here=$(cd "$(dirname "$0")" && pwd)
sluiced=$build/server/sluiced
oload=$build/bench/oload
module=$(cd "$build" && pwd)/redis-module/sluice-redis.so
secs=${SL_BENCH_PEERS_SECONDS:-3}
rounds=${SL_BENCH_ROUNDS:-3}
only=${SL_BENCH_PEERS_ONLY:-}
keys=100000
for f in "$sluiced" "$oload" "$module"; do
    [[ -e "$f" ]] || { echo "bench_peers: $f missing (build $build first)" >&2; exit 1; }
done
. "$here/lib.sh"
bench_init bench_peers redis-server redis-cli taskset curl python3 unshare hostname

peers=$(cd "$build" && pwd)/peers
"$here/peers/build.sh" "$peers" || true
have() { [[ -x "$peers/$1" ]]; }

# The rule both services read: envoyproxy/ratelimit's format, which sluiced
# reads as it is.
mkdir -p "$tmp/rt/current/ratelimit/config"
cat >"$tmp/rt/current/ratelimit/config/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
YAML
cp "$tmp/rt/current/ratelimit/config/bench.yaml" "$tmp/fixed.yaml"
per_user_rules # $tmp/rules.yaml: the token bucket gubernator is compared on
# The fleet's trace: a token bucket that denies (capacity and rate
# trace_limit), as gubernator's TOKEN_BUCKET of trace_limit per second.
trace_limit=100 sync_ms=50
cat >"$tmp/trace.yaml" <<YAML
domain: bench
descriptors:
  - key: user
    limits:
      - {name: trace, algorithm: token_bucket, requests: $trace_limit, period: 1s}
YAML

# One call through grpcio (python3-grpcio) must be answered OK, with no
# over-limit or error in it, or the figures mean nothing: oload reads no
# grpc-status.
sanity() { # PORT rls|gubernator
    /usr/bin/python3 - "$@" <<'PY'
import sys, grpc
port, api = sys.argv[1], sys.argv[2]
ch = grpc.insecure_channel("127.0.0.1:" + port)
def varint(b, i):
    v = s = 0
    while True:
        v |= (b[i] & 0x7f) << s; s += 7; i += 1
        if not b[i - 1] & 0x80: return v, i
def fields(b):
    i, out = 0, []
    while i < len(b):
        tag, i = varint(b, i)
        if tag & 7 == 0: v, i = varint(b, i)
        elif tag & 7 == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        else: raise SystemExit("unexpected wire type")
        out.append((tag >> 3, v))
    return out
if api == "rls":
    req = bytes.fromhex("0a0562656e6368") + b"\x12\x0d\x0a\x0b\x0a\x04user\x12\x03k42"
    resp = ch.unary_unary("/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")(req, timeout=5)
    ok = (1, 1) in fields(resp)  # overall_code OK
else:
    r = b"\x0a\x05bench\x12\x03k42\x18\x01\x20\x80\x94\xeb\xdc\x03\x28\xe8\x07"
    resp = ch.unary_unary("/pb.gubernator.V1/GetRateLimits")(b"\x0a" + bytes([len(r)]) + r, timeout=5)
    one = dict(fields(dict(fields(resp))[1]))
    ok = one.get(1, 0) == 0 and 5 not in one  # UNDER_LIMIT, no error
if not ok:
    raise SystemExit("answer: " + resp.hex())
PY
}

wait_grpc() { # PORT API
    for _ in $(seq 100); do sanity "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
    sanity "$1" "$2" || true
    echo "bench_peers: nothing answers $2 properly on port $1" >&2
    exit 1
}

# Each start_* adds the PIDs whose CPU and memory count to case_pids and
# sets case_port and case_api.
spawn() { # LOG COMMAND...: start pinned to CPU 0, its PID counted
    local log=$1
    shift
    taskset -c 0 "$@" >"$log" 2>&1 &
    pids+=($!)
    case_pids+=($!)
}

start_redis_case() {
    rd_port=$(free_port)
    spawn "$tmp/redis.log" redis-server --port "$rd_port" --bind 127.0.0.1 --save '' \
        --appendonly no --dir "$tmp" --loadmodule "$module"
    wait_redis "$rd_port"
}

start_ratelimit() { # LOCAL_CACHE_BYTES
    start_redis_case
    case_port=$(free_port) case_api=rls
    spawn "$tmp/ratelimit.log" env RUNTIME_ROOT="$tmp/rt/current" RUNTIME_SUBDIRECTORY=ratelimit \
        RUNTIME_WATCH_ROOT=false BACKEND_TYPE=redis REDIS_SOCKET_TYPE=tcp \
        REDIS_URL="127.0.0.1:$rd_port" USE_STATSD=false LOCAL_CACHE_SIZE_IN_BYTES="$1" \
        HOST=127.0.0.1 PORT="$(free_port)" GRPC_HOST=127.0.0.1 GRPC_PORT="$case_port" \
        DEBUG_HOST=127.0.0.1 DEBUG_PORT="$(free_port)" LOG_LEVEL=WARN "$peers/ratelimit"
    wait_grpc "$case_port" rls
}

start_sluiced() { # RULES_FILE STORE_YAML [NODE]
    local node=${3:-0}
    case_port=$(free_port) case_api=rls
    cat >"$tmp/sluice-$node.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $case_port, protocols: [grpc]}]
workers: 1
rules: {files: [$1], watch: false}
store: $2
log: {level: warn}
YAML
    spawn "$tmp/sluiced-$node.log" "$sluiced" -c "$tmp/sluice-$node.yaml"
    wait_grpc "$case_port" rls
    fleet+=("127.0.0.1:$case_port")
}

# Three sluiced with the hybrid store on one redis-server: each decides in
# its own table and syncs with Redis every sync_interval.
start_hybrid() { # RULES_FILE
    local i
    start_redis_case
    for i in 0 1 2; do
        start_sluiced "$1" "{type: hybrid, redis: {port: $rd_port, timeout: 2s}, hybrid: {sync_interval: ${sync_ms}ms, max_keys: 262144}}" "$i"
    done
}

# Node i listens on 127.0.0.(i+1): gubernator's member-list keeps one peer
# per IP address, and memberlist names a node after the host, so each node
# gets its own UTS namespace (unshare, as root) and host name.
start_gubernator() { # NODES
    local i ip grpc_port http_ports=() ml_port
    grpc_port=$(free_port)
    ml_port=$(free_port)
    for i in $(seq 0 $(($1 - 1))); do
        ip=127.0.0.$((i + 1))
        http_ports+=("$(free_port)")
        spawn "$tmp/gubernator-$i.log" env GUBER_GRPC_ADDRESS="$ip:$grpc_port" \
            GUBER_HTTP_ADDRESS="$ip:${http_ports[i]}" GUBER_ADVERTISE_ADDRESS="$ip:$grpc_port" \
            GUBER_INSTANCE_ID="bench$i" GUBER_CACHE_SIZE=$((4 * keys)) \
            GUBER_PEER_DISCOVERY_TYPE=member-list GUBER_MEMBERLIST_ADDRESS="$ip:$ml_port" \
            GUBER_MEMBERLIST_BIND_ADDRESS="$ip:$ml_port" \
            GUBER_MEMBERLIST_KNOWN_NODES="127.0.0.1:$ml_port" GUBER_LOG_LEVEL=warn \
            unshare --uts sh -c 'hostname "$0" && exec "$@"' "bench$i" "$peers/gubernator"
    done
    case_port=$grpc_port case_api=gubernator
    wait_grpc "$case_port" gubernator
    for i in $(seq 0 $(($1 - 1))); do fleet+=("127.0.0.$((i + 1)):$grpc_port"); done
    # every node must have found the others before the load starts
    for i in $(seq 0 $(($1 - 1))); do
        for _ in $(seq 200); do
            curl -s "http://127.0.0.$((i + 1)):${http_ports[i]}/v1/HealthCheck" |
                grep -q "\"peer_count\":$1[,}]" && continue 2
            sleep 0.1
        done
        echo "bench_peers: gubernator node $i never saw $1 peers" >&2
        exit 1
    done
}

start_case() { # NAME
    case_pids=() fleet=()
    case $1 in
    rl_redis) start_ratelimit 0 ;;
    rl_redis_local_cache) start_ratelimit $((64 << 20)) ;;
    sl_redis_module | sl_redis_function)
        start_redis_case
        start_sluiced fixed.yaml "{type: redis, redis: {port: $rd_port, engine: ${1#sl_redis_}, timeout: 2s, max_in_flight: 4096}}"
        ;;
    sl_memory) start_sluiced fixed.yaml "{max_bytes: 256MiB}" ;;
    sl_memory_token_bucket) start_sluiced rules.yaml "{max_bytes: 256MiB}" ;;
    sl_hybrid_3) start_hybrid rules.yaml ;;
    gubernator_1) start_gubernator 1 ;;
    gubernator_3_global) start_gubernator 3 ;;
    trace_sl_memory) start_sluiced trace.yaml "{max_bytes: 256MiB}" ;;
    trace_sl_hybrid_3) start_hybrid trace.yaml ;;
    trace_gubernator_1) start_gubernator 1 ;;
    trace_gubernator_3_global) start_gubernator 3 ;;
    esac
    behavior=0
    [[ $1 == *gubernator_3_global ]] && behavior=2
    return 0
}

# stop_case: SIGTERM to every process of the case at once, SIGKILL to what
# is still there after 10 s (a GLOBAL gubernator node's graceful leave takes
# about a minute, which measured nothing), then reap them, all by PID.
stop_case() {
    local p i
    for p in "${case_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for i in $(seq 100); do
        for p in "${case_pids[@]}"; do kill -0 "$p" 2>/dev/null && break; done
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    for p in "${case_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}

tck=$(getconf CLK_TCK)
ticks() { # utime stime, summed over case_pids
    local p u=0 s=0
    for p in "${case_pids[@]}"; do
        read -r a b < <(awk '{ print $14, $15 }' "/proc/$p/stat")
        u=$((u + a)) s=$((s + b))
    done
    echo "$u $s"
}
rss_kib() {
    local p t=0
    for p in "${case_pids[@]}"; do t=$((t + $(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status"))); done
    echo "$t"
}
load1() { # HOST:PORT RATE SECONDS NAME CONNS [OPTION VALUE...] -> oload's lines
    local at=$1 rate=$2 s=$3 name=$4 conns=$5
    shift 5
    taskset -c 1 "$oload" --proto grpc --host "${at%:*}" --port "${at##*:}" --rate "$rate" \
        --conns "$conns" --seconds "$s" --warmup 1 --keys "$keys" --name "$name" --api "$case_api" \
        --behavior "$behavior" "$@"
}
# fill_load SECONDS: every key in order, through the first node only (a
# fleet's other nodes learn a key from it: gubernator's owner, the hybrid
# store's Redis).
fill_load() {
    load1 "${fleet[0]:-127.0.0.1:$case_port}" 5000000 "$1" x 16 --warmup 0 --order sequential
}
# load RATE SECONDS NAME [OPTION VALUE...] -> oload's lines. A case of
# several nodes gets one oload per node at once, RATE and the 16
# connections dealt among them; their lines are summed (rates, counts) or
# the worst kept (latency percentiles).
load() {
    local rate=$1 s=$2 name=$3 n=${#fleet[@]} i lp=()
    shift 3
    if ((n <= 1)); then
        load1 "127.0.0.1:$case_port" "$rate" "$s" "$name" 16 "$@"
        return
    fi
    for i in "${!fleet[@]}"; do
        load1 "${fleet[i]}" $((rate / n)) "$s" "$name" $((16 / n)) "$@" >"$tmp/load.$i" &
        lp+=($!)
    done
    for i in "${lp[@]}"; do wait "$i"; done
    cat "$tmp"/load.* | awk '
        { u[$1] = $3; if (!($1 in v)) { order[++k] = $1; v[$1] = $2 }
          else if ($1 ~ /_p[0-9]+$/) { if ($2 > v[$1]) v[$1] = $2 }
          else v[$1] += $2 }
        END { for (i = 1; i <= k; i++) print order[i], v[order[i]], u[order[i]] }'
    rm -f "$tmp"/load.*
}
field() { awk -v k="$1_$2" '$1 == k { print $2 }' <<<"$3"; }

# run NAME: a fresh case; its memory for the 100,000 keys (VmRSS before and
# after a fill that sends every key at least once, in order, for as long as
# a 1 s probe says it takes, with a third to spare), then one saturated run
# over random keys on that steady keyspace; appends to NAME's figures.
declare -A fig
run() {
    local name=$1 u0 s0 u1 s1 r0 r1 out n fill
    start_case "$name"
    r0=$(rss_kib)
    out=$(fill_load 1)
    fill=$(awk -v r="$(field x achieved_rate "$out")" -v k="$keys" 'BEGIN { printf "%.1f", k / r * 1.33 + 1 }')
    out=$(fill_load "$fill")
    [[ "$(field x answered "$out")" -ge "$keys" ]] || { echo "bench_peers: $name: the fill fell short: $out" >&2; exit 1; }
    r1=$(rss_kib)
    read -r u0 s0 < <(ticks)
    out=$(load 5000000 "$secs" x)
    read -r u1 s1 < <(ticks)
    stop_case
    [[ "$(field x errors "$out")" == 0 ]] || { echo "bench_peers: $name: $out" >&2; exit 1; }
    n=$(field x answered "$out")
    fig[${name}_rps]+=" $(field x achieved_rate "$out")"
    read -r u s < <(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v n="$n" -v t="$tck" \
        'BEGIN { printf "%.3f %.3f\n", u / t * 1e6 / n, s / t * 1e6 / n }')
    fig[${name}_utime_us]+=" $u"
    fig[${name}_stime_us]+=" $s"
    fig[${name}_cpu_us]+=" $(awk -v a="$u" -v b="$s" 'BEGIN { printf "%.3f", a + b }')"
    fig[${name}_rss_mib_per_100k_keys]+=" $(awk -v r=$((r1 - r0)) 'BEGIN { printf "%.1f", r / 1024 }')"
}
med() { median ${fig[$1]}; }
most() { printf '%s\n' "$@" | sort -g | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
at_most() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "MET" : "MISSED" }'; }

# latency RATE NAME...: p50/p99/p99.9 of each case at RATE
latency() {
    local rate=$1 name out
    shift
    for name in "$@"; do
        start_case "$name"
        out=$(load "$rate" "$secs" "peers_${name}_lat")
        stop_case
        grep -E "_(offered_rate|p50|p99|p999|errors) " <<<"$out"
    done
}

report() { # NAME...
    local name
    for name in "$@"; do
        echo "peers_${name}_rps $(med "${name}_rps") decisions/s"
        echo "peers_${name}_cpu_us_per_decision $(med "${name}_cpu_us") us"
        echo "peers_${name}_utime_us_per_decision $(med "${name}_utime_us") us"
        echo "peers_${name}_stime_us_per_decision $(med "${name}_stime_us") us"
        echo "peers_${name}_rss_mib_per_100k_keys $(med "${name}_rss_mib_per_100k_keys") MiB"
    done
}

slowest_half() { # NAME... -> half the lowest median rate
    local name low=
    for name in "$@"; do
        low=$(awk -v a="$(med "${name}_rps")" -v b="$low" 'BEGIN { print (b == "" || a < b) ? a : b }')
    done
    awk -v r="$low" 'BEGIN { printf "%d", r / 2 }'
}

target() { # NAME OVER PEER MAX
    local r
    r=$(ratio "$(med "${2}_cpu_us")" "$(med "${3}_cpu_us")")
    echo "peers_${1} $r x $(at_most "$r" "$4") target<=$4"
}

# fleet_trace: the same bursty trace (trace.py: 4 keys, bursts of 150
# requests per key every 0.5 s dealt round robin over the nodes, 10 s; 3x
# the limit) through one exact node (sluiced's memory store), gubernator on
# one node, three gubernator nodes with GLOBAL and three sluiced with the
# hybrid store on one Redis; what each admitted of a key beyond the exact
# most (limit + limit x span), beside the hybrid store's stated bound for
# the trace: the other N - 1 nodes each admit at most a capacity and
# 2(I + d) of refill that a node has not yet read (docs/distributed.md,
# "How far the fleet can overshoot"), with d the largest of 200 PING round
# trips to the case's Redis.
fleet_trace() {
    local c out d api k v
    for _ in $(seq "$rounds"); do
        for c in trace_sl_memory trace_gubernator_1 trace_gubernator_3_global trace_sl_hybrid_3; do
            start_case "$c"
            api=rls
            [[ $c == trace_gubernator* ]] && api=gubernator:$behavior
            out=$(taskset -c 1 /usr/bin/python3 "$here/peers/trace.py" "$api" \
                "$(IFS=,; echo "${fleet[*]}")" x --keys 4 --limit "$trace_limit" --seconds 10 \
                --every 0.5 --burst 150)
            if [[ $c == trace_sl_hybrid_3 ]]; then
                d=$(/usr/bin/python3 - "$rd_port" <<'PY'
import sys, time, redis
r = redis.Redis(port=int(sys.argv[1]))
worst = 0.0
for _ in range(200):
    t = time.monotonic(); r.ping(); worst = max(worst, time.monotonic() - t)
print("%.6f" % worst)
PY
)
                fig[trace_rtt_s]+=" $d"
            fi
            stop_case
            fig[${c}_overshoot]+=" $(field x overshoot_max "$out")"
            fig[${c}_admitted]+=" $(field x admitted_max_per_key "$out")"
            fig[${c}_exact]+=" $(field x exact_max_per_key "$out")"
            fig[${c}_late]+=" $(field x schedule_late_max "$out")"
        done
    done
    for c in trace_sl_memory trace_gubernator_1 trace_gubernator_3_global trace_sl_hybrid_3; do
        echo "peers_${c}_admitted_max_per_key $(med "${c}_admitted") requests (exact at most $(med "${c}_exact"))"
        echo "peers_${c}_overshoot_max $(med "${c}_overshoot") requests"
        # Every round's, and the worst: a fleet's overshoot varies with
        # where its bursts fall against its broadcasts or syncs.
        k=0
        for v in ${fig[${c}_overshoot]}; do
            echo "peers_${c}_overshoot_round$((++k)) $v requests"
        done
        echo "peers_${c}_overshoot_worst $(most ${fig[${c}_overshoot]}) requests"
        echo "peers_${c}_schedule_late_max $(med "${c}_late") s"
    done
    local o within=MET
    [[ -n "${fig[trace_sl_hybrid_3_overshoot]:-}" ]] || within=MISSED
    d=$(med trace_rtt_s)
    echo "peers_trace_sl_hybrid_3_stated_bound $(trace_bound "$d") requests (N=3, I=${sync_ms} ms, d=$d s)"
    # A bound holds in every round or not at all: each round's overshoot
    # against the bound with that round's d.
    while read -r o d; do
        [[ $(at_most "$o" "$(trace_bound "$d")") == MET ]] || within=MISSED
    done < <(paste -d ' ' <(printf '%s\n' ${fig[trace_sl_hybrid_3_overshoot]}) \
        <(printf '%s\n' ${fig[trace_rtt_s]}))
    echo "peers_trace_sl_hybrid_3_within_bound $within (every round)"
}
# trace_bound D: the hybrid fleet's stated overshoot bound for the trace
# with a Redis round trip of D seconds, (N - 1)(C + r * 2(I + D)), N = 3.
trace_bound() {
    awk -v l="$trace_limit" -v i="$sync_ms" -v d="$1" 'BEGIN { printf "%.1f", 2 * (l + l * 2 * (i / 1000 + d)) }'
}

if [[ "$only" != gubernator ]]; then
    if have ratelimit; then
        cases=(rl_redis rl_redis_local_cache sl_redis_module sl_redis_function sl_memory)
    else
        echo "bench_peers: envoyproxy/ratelimit not built: sluiced alone" >&2
        cases=(sl_redis_module sl_redis_function sl_memory)
    fi
    for _ in $(seq "$rounds"); do
        for c in "${cases[@]}"; do run "$c"; done
    done
    report "${cases[@]}"
    latency "$(slowest_half "${cases[@]}")" "${cases[@]}"
    if have ratelimit; then
        target sl_redis_module_vs_ratelimit_cpu sl_redis_module rl_redis 0.33
        target sl_redis_function_vs_ratelimit_cpu sl_redis_function rl_redis 0.33
        target sl_memory_vs_ratelimit_cpu sl_memory rl_redis 0.1
        echo "peers_sl_memory_vs_ratelimit_local_cache_cpu $(ratio "$(med sl_memory_cpu_us)" "$(med rl_redis_local_cache_cpu_us)") x"
    fi
fi

if [[ "$only" != ratelimit ]]; then
    if have gubernator; then
        cases=(gubernator_1 gubernator_3_global sl_memory_token_bucket sl_hybrid_3)
        for _ in $(seq "$rounds"); do
            for c in "${cases[@]}"; do run "$c"; done
        done
        report "${cases[@]}"
        latency "$(slowest_half "${cases[@]}")" "${cases[@]}"
        target sl_memory_token_bucket_vs_gubernator_1_cpu sl_memory_token_bucket gubernator_1 0.33
        echo "peers_sl_memory_token_bucket_vs_gubernator_3_global_cpu $(ratio "$(med sl_memory_token_bucket_cpu_us)" "$(med gubernator_3_global_cpu_us)") x"
        echo "peers_sl_hybrid_3_vs_gubernator_3_global_cpu $(ratio "$(med sl_hybrid_3_cpu_us)" "$(med gubernator_3_global_cpu_us)") x"
        fleet_trace
    else
        echo "bench_peers: gubernator not built: its comparison left out" >&2
    fi
fi
