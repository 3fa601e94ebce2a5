#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_redis_store.sh BUILD_DIR - decisions/s with the Redis store # against the peer the issue names: a token bucket in Lua in the same
# redis-server, driven directly by redis-benchmark (EVALSHA), same run.
#   redis_lua_token_bucket_peer   the peer script, EVALSHA straight to Redis
#   redis_sluice_script_tb        the store's script (store/lua/*.lua), one token_bucket limit,
#                                 EVALSHA straight to Redis (the script's cost)
#   redis_store_cl_throttle       CL.THROTTLE through sluiced with the Redis
#                                 store (only when this sluiced has it wired)
# Pinned as docs/contracts.md §Interfaces says: redis-server and sluiced together on CPU 0,
# redis-benchmark on CPU 1; 50 clients, 100,000 random keys, -P 16.
# Each figure is the median of SL_BENCH_ROUNDS (3) interleaved runs.
# Output: `name value unit` lines (no target is set for these figures yet).
# It does not build anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
here=$(cd "$(dirname "$0")" && pwd)
sluiced=$build/server/sluiced
n=${SL_BENCH_REQUESTS_P16:-1000000}
. "$here/lib.sh"
bench_init bench_redis_store redis-server redis-benchmark redis-cli taskset

rd_port=$(free_port)
start_redis "$rd_port"

# The peer: a token bucket (capacity 15, 0.5 token/s) in Lua on Redis's clock.
peer=$(lua_token_bucket "$rd_port")
ours=$(cat "$here"/../store/lua/[0-9]*.lua | redis-cli -p "$rd_port" -x SCRIPT LOAD)
# One token_bucket limit, 1 per 2 s, capacity 15 (reduced: p=2 s, r=1),
# Redis's clock, as store/redis/lua/00_prelude.lua's calling convention says.
ours_args=(check redis 1000 bench 1 0 1 0 0 0 2000000 1 15 0)

# The figures mean nothing if the scripts fail: both must answer properly.
reply=$(redis-cli -p "$rd_port" EVALSHA "$peer" 1 tb:sanity 15 0.5 | tr '\n' ' ')
[[ "$reply" == "1 14 " ]] || { echo "bench_redis_store: the peer answered: $reply" >&2; exit 1; }
reply=$(redis-cli -p "$rd_port" EVALSHA "$ours" 1 sl:sanity "${ours_args[@]}" | sed -n '2,3p' | tr '\n' ' ')
[[ "$reply" == "0 14 " ]] || { echo "bench_redis_store: the store's script answered: $reply" >&2; exit 1; }

sl_port=
if [[ -x "$sluiced" ]] && "$sluiced" --help 2>&1 | grep -q 'store.redis.host'; then
    sl_port=$(free_port)
    cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [resp]}]
workers: 1
store: {type: redis, redis: {port: $rd_port, timeout: 2s, max_in_flight: 4096}}
log: {level: warn}
YAML
    taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
    pids+=($!)
    wait_redis "$sl_port"
    reply=$(redis-cli -p "$sl_port" CL.THROTTLE key:sanity 15 30 60 | tr '\n' ' ')
    [[ "$reply" == "0 16 15 -1 2 " ]] || { echo "bench_redis_store: CL.THROTTLE answered: $reply" >&2; exit 1; }
else
    echo "# bench_redis_store: this sluiced has no store.type redis; the through-sluiced figure is not measured"
fi

rps() {
    local port=$1
    shift
    taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$n" -r 100000 -P 16 \
        --csv "$@" 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

evalsha_calls() {
    redis-cli -p "$rd_port" INFO commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p'
}

rounds=${SL_BENCH_ROUNDS:-3}
peers=() scripts=() stores=() per=()
for _ in $(seq "$rounds"); do
    peers+=("$(rps "$rd_port" EVALSHA "$peer" 1 tb:__rand_int__ 15 0.5)")
    scripts+=("$(rps "$rd_port" EVALSHA "$ours" 1 sl:__rand_int__ "${ours_args[@]}")")
    if [[ -n "$sl_port" ]]; then
        # A figure through sluiced counts only if Redis decided: script
        # calls per decision must be 1 (a policy answer would be 0).
        redis-cli -p "$rd_port" CONFIG RESETSTAT >/dev/null
        stores+=("$(rps "$sl_port" CL.THROTTLE key:__rand_int__ 15 30 60)")
        per+=("$(awk -v c="$(evalsha_calls)" -v n="$n" 'BEGIN { printf "%.3f", c / n }')")
    fi
done
peer_rps=$(median "${peers[@]}")
script_rps=$(median "${scripts[@]}")
echo "redis_lua_token_bucket_peer_p16 $peer_rps decisions/s"
echo "redis_sluice_script_tb_p16 $script_rps decisions/s"
echo "redis_sluice_script_vs_peer_p16 $(ratio "$script_rps" "$peer_rps") x"
if [[ -n "$sl_port" ]]; then
    store_rps=$(median "${stores[@]}")
    echo "redis_store_cl_throttle_p16 $store_rps decisions/s"
    echo "redis_store_script_calls_per_decision $(median "${per[@]}") calls"
    echo "redis_store_vs_peer_p16 $(ratio "$store_rps" "$peer_rps") x"
fi
