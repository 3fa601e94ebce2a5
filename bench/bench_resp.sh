#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_resp.sh BUILD_DIR - sluiced's CL.THROTTLE against its peers, all
# driven by redis-benchmark with the same settings (50 clients, 100,000
# random keys, without and with -P 16): INCR on a redis-server started here,
# and a token bucket as a Lua script (EVALSHA) in that redis-server.
# Pinned as docs/contracts.md §Interfaces says: the server side (sluiced with one worker, or
# redis-server) on CPU 0, redis-benchmark on CPU 1.
# Output: `name value unit` lines; ratios print MET or MISSED and the target.
# Each figure is the median of SL_BENCH_ROUNDS (3) interleaved runs.
# It does not build anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
n1=${SL_BENCH_REQUESTS:-300000}    # requests per run without pipelining
n16=${SL_BENCH_REQUESTS_P16:-2000000} # with -P 16
[[ -x "$sluiced" ]] || { echo "bench_resp: $sluiced not built" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init bench_resp redis-server redis-benchmark redis-cli taskset

sl_port=$(free_port)
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [resp]}]
workers: 1
store: {max_bytes: 256MiB}
log: {level: warn}
YAML
taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
pids+=($!)
rd_port=$(free_port)
start_redis "$rd_port"
wait_redis "$sl_port"

# Token bucket (capacity 15, 0.5 token/s) in Lua, reading Redis's clock.
sha=$(lua_token_bucket "$rd_port")

# The figures mean nothing if the commands fail: both must answer properly.
reply=$(redis-cli -p "$sl_port" CL.THROTTLE key:sanity 15 30 60 | tr '\n' ' ')
[[ "$reply" == "0 16 15 -1 2 " ]] || { echo "bench_resp: CL.THROTTLE answered: $reply" >&2; exit 1; }
reply=$(redis-cli -p "$rd_port" EVALSHA "$sha" 1 tb:sanity 15 0.5 | tr '\n' ' ')
[[ "$reply" == "1 14 " ]] || { echo "bench_resp: the Lua bucket answered: $reply" >&2; exit 1; }

# rps PORT PIPELINE N COMMAND... -> requests per second (redis-benchmark CSV)
rps() {
    local port=$1 pipe=$2 n=$3
    shift 3
    taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$n" -r 100000 -P "$pipe" \
        --csv "$@" 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t) ? "MET" : "MISSED" }'; }


# Each figure is the median of $rounds runs, the three servers taking turns,
# so that a burst of other load on the machine hits all of them alike.
rounds=${SL_BENCH_ROUNDS:-3}
for pipe in 1 16; do
    n=$n1
    [[ $pipe == 16 ]] && n=$n16
    sls=() incrs=() luas=()
    for _ in $(seq "$rounds"); do
        sls+=("$(rps "$sl_port" "$pipe" "$n" CL.THROTTLE key:__rand_int__ 15 30 60)")
        incrs+=("$(rps "$rd_port" "$pipe" "$n" INCR key:__rand_int__)")
        luas+=("$(rps "$rd_port" "$pipe" "$n" EVALSHA "$sha" 1 tb:__rand_int__ 15 0.5)")
    done
    sl=$(median "${sls[@]}") incr=$(median "${incrs[@]}") lua=$(median "${luas[@]}")
    sfx=$([[ $pipe == 1 ]] && echo "" || echo "_p$pipe")
    echo "resp_cl_throttle${sfx} $sl req/s"
    echo "redis_incr${sfx} $incr req/s"
    echo "redis_lua_token_bucket${sfx} $lua req/s"
    r=$(ratio "$sl" "$incr")
    echo "resp_cl_throttle_vs_redis_incr${sfx} $r x $(verdict "$r" 1.0) >=1.0"
    r=$(ratio "$sl" "$lua")
    echo "resp_cl_throttle_vs_redis_lua${sfx} $r x $(verdict "$r" 1.5) >=1.5"
done
