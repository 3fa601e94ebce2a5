#!/usr/bin/env bash
# bench_resp.sh BUILD_DIR - sluiced's CL.THROTTLE against its peers, all
# driven by redis-benchmark with the same settings (50 clients, 100,000
# random keys, without and with -P 16): INCR on a redis-server started here,
# and a token bucket as a Lua script (EVALSHA) in that redis-server.
# Pinned as CONTRACTS C5 says: the server side (sluiced with one worker, or
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
for tool in redis-server redis-benchmark redis-cli taskset; do
    command -v $tool >/dev/null || { echo "bench_resp: $tool missing (scripts/deps.sh bench)" >&2; exit 1; }
done

tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 100); do redis-cli -p "$1" PING >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "bench_resp: nothing answers on port $1" >&2; exit 1
}

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
taskset -c 0 redis-server --port "$rd_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$tmp" --logfile "$tmp/redis.log" &
pids+=($!)
wait_port "$sl_port"
wait_port "$rd_port"

# Token bucket (capacity 15, 0.5 token/s) in Lua, reading Redis's clock.
sha=$(redis-cli -p "$rd_port" SCRIPT LOAD "
local cap, rate = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local s = redis.call('HMGET', KEYS[1], 't', 'v')
local last, tokens = tonumber(s[1]) or now, tonumber(s[2]) or cap
tokens = math.min(cap, tokens + (now - last) * rate)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 't', now, 'v', tokens)
redis.call('EXPIRE', KEYS[1], math.ceil(cap / rate) + 1)
return {allowed, math.floor(tokens)}")

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

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

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
