#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_redis_store.sh BUILD_DIR - the Redis store at Redis's own speed: what
# a decision costs Redis, per engine, against the cheapest command and the
# usual hand-written limiter, and decisions/s through sluiced with each.
#
# Redis CPU per call: redis-server's utime+stime (/proc/PID/stat) over a run
# of redis-benchmark calls, in microseconds, for
#   incr       INCR key:__rand_int__ (the cheapest command that writes)
#   peer       the minimal Lua token bucket of bench/lib.sh, EVALSHA
#   module     SLUICE.CHECK of sluice-redis.so (BUILD_DIR/redis-module)
#   function   FCALL of the store's Functions library
#   evalsha    EVALSHA of the store's script
# each on one token_bucket limit (capacity 15, 1 per 2 s) as the store sends
# it, with the caller's time (store.clock's default; the peer reads Redis's
# TIME). Before each measured run the database is emptied and the same
# command warms up the same 100,000 keys, so every case is measured on a
# steady keyspace (no dict growth) and every check writes its key.
# Through sluiced: CL.THROTTLE (gcra) on sluiced with store.type: redis and
# store.redis.engine module, function, script; Redis's CPU per decision,
# sluiced's own CPU per decision (its utime+stime) and Redis's calls per
# decision (INFO commandstats) beside the rate. Then the same through a
# TLS link to Redis (redis-server's --tls-port, certificates made here,
# store.redis.tls with ca_file), and, with SL_BENCH_BEFORE set to another
# build's sluiced, that binary in the same rounds (a before/after of a
# change to the store: both measured against the same Redis, interleaved).
#
# Pinned as docs/benchmarks.md says: redis-server and sluiced on CPU 0,
# redis-benchmark on CPU 1; 50 clients, 100,000 random keys, -P 16. Each
# figure is the median of SL_BENCH_ROUNDS (3) interleaved rounds.
# Targets (MET or MISSED printed with the target):
#   module Redis CPU per call <= 1.5 x INCR's
#   script path (function, evalsha) Redis CPU per call <= 1.0 x the peer's
#   decisions/s through sluiced with the module >= 1.0 x redis-benchmark
#   calling the peer directly
#   sluiced CPU per decision over TLS <= 1.25 x over clear text, per engine
#   with SL_BENCH_BEFORE: sluiced and Redis CPU per decision <= 1.03 x the
#   before binary's, per engine
# It does not build anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
here=$(cd "$(dirname "$0")" && pwd)
sluiced=$build/server/sluiced
module=$(cd "$build" && pwd)/redis-module/sluice-redis.so
lua_dir=$build/store
n_fast=${SL_BENCH_REQUESTS_FAST:-1000000} # INCR, the module
n_lua=${SL_BENCH_REQUESTS_LUA:-300000}    # the Lua paths
n_sl=${SL_BENCH_REQUESTS_P16:-1000000}    # through sluiced
. "$here/lib.sh"
bench_init bench_redis_store redis-server redis-benchmark redis-cli taskset python3 openssl
for f in "$sluiced" "$module" "$lua_dir/redis_lua.c.eval.lua" "$lua_dir/redis_lua.c.fn.lua"; do
    [[ -e "$f" ]] || { echo "bench_redis_store: $f missing (build $build first)" >&2; exit 1; }
done

before=${SL_BENCH_BEFORE:-}
[[ -z "$before" || -x "$before" ]] || { echo "bench_redis_store: SL_BENCH_BEFORE=$before is not a program" >&2; exit 1; }
# A CA and a certificate for 127.0.0.1, for Redis's TLS port.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
    -keyout "$tmp/ca.key" -out "$tmp/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
    -keyout "$tmp/redis.key" -out "$tmp/redis.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$tmp/ext"
openssl x509 -req -in "$tmp/redis.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
    -days 2 -extfile "$tmp/ext" -out "$tmp/redis.crt" 2>/dev/null

rd_port=$(free_port)
tls_port=$(free_port)
taskset -c 0 redis-server --port "$rd_port" --bind 127.0.0.1 --save '' --appendonly no \
    --tls-port "$tls_port" --tls-cert-file "$tmp/redis.crt" --tls-key-file "$tmp/redis.key" \
    --tls-ca-cert-file "$tmp/ca.crt" --tls-auth-clients no \
    --dir "$tmp" --logfile "$tmp/redis.log" --loadmodule "$module" &
rd_pid=$!
pids+=("$rd_pid")
wait_redis "$rd_port"
rcli() { redis-cli -p "$rd_port" "$@"; }

peer=$(lua_token_bucket "$rd_port")
fn=$(rcli -x FUNCTION LOAD <"$lua_dir/redis_lua.c.fn.lua")
sha=$(rcli -x SCRIPT LOAD <"$lua_dir/redis_lua.c.eval.lua")
# One token_bucket limit as redis_plan.c sends it: 1 per 2 s, capacity 15
# (reduced: a = 2000000 us, b = 1, c = 15); the caller's time, 1 s slack.
now_us=$(($(date +%s) * 1000000))
conf="1000,bench"
item="0,1,0,0,0,2000000,1,15,0"

# The figures mean nothing if a path fails: each must answer properly.
expect() {
    local want=$1 got
    shift
    got=$("$@" | head -3 | tail -2 | tr '\n' ' ')
    [[ "$got" == "$want" ]] || { echo "bench_redis_store: $* answered: $got" >&2; exit 1; }
}
expect "1 14 " rcli EVALSHA "$peer" 1 tb:sanity 15 0.5
expect "0 14 " rcli SLUICE.CHECK 1 sl:sanity:m "$now_us" "$conf" "$item"
expect "0 14 " rcli FCALL "$fn" 1 sl:sanity:f check "$now_us" "$conf" "$item"
expect "0 14 " rcli EVALSHA "$sha" 1 sl:sanity:s check "$now_us" "$conf" "$item"
expect "0 13 " rcli SLUICE.CHECK 1 sl:sanity:f "$now_us" "$conf" "$item" # one state, two paths

# run PORT N COMMAND... -> requests per second (redis-benchmark CSV; the
# command may hold commas, hence a CSV reader)
run() {
    local port=$1 n=$2
    shift 2
    taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$n" -r 100000 -P 16 \
        --csv "$@" 2>/dev/null |
        python3 -c 'import csv, sys; print(list(csv.reader(sys.stdin))[-1][1])'
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# cpu N COMMAND... -> redis-server's CPU us per call over N calls, after
# emptying the database and warming the same keys up with N/4 calls
cpu() {
    local n=$1 t0 t1
    shift
    rcli FLUSHALL >/dev/null
    run "$rd_port" $((n / 4)) "$@" >/dev/null
    t0=$(ticks "$rd_pid")
    run "$rd_port" "$n" "$@" >/dev/null
    t1=$(ticks "$rd_pid")
    awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$n" \
        'BEGIN { printf "%.3f", d / hz * 1e6 / n }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
at_most() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "MET" : "MISSED" }'; }
at_least() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t) ? "MET" : "MISSED" }'; }
calls() {
    local c
    c=$(rcli INFO commandstats | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p")
    echo "${c:-0}"
}

# sluiced ($3: its binary) with store.redis.engine $1 on CPU 0, over TLS
# when $4 is "tls", its RESP port in $sl_port; ready once Redis decides
# through $2 (its engine's command) and a fresh key gets redis-cell's
# README answer.
start_sluiced() {
    local reply c0 redis="port: $rd_port"
    sl_port=$(free_port)
    [[ "${4:-}" == tls ]] && redis="port: $tls_port, tls: {ca_file: $tmp/ca.crt}"
    cat >"$tmp/sluice-$1.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [resp]}]
workers: 1
store: {type: redis, redis: {$redis, engine: $1, timeout: 2s, max_in_flight: 4096}}
log: {level: warn}
YAML
    taskset -c 0 "$3" -c "$tmp/sluice-$1.yaml" 2>"$tmp/sluiced-$1.log" &
    sl_pid=$!
    wait_redis "$sl_port"
    for i in $(seq 200); do
        c0=$(calls "$2")
        reply=$(redis-cli -p "$sl_port" CL.THROTTLE "key:sanity:$1:$i" 15 30 60 | tr '\n' ' ')
        [[ "$(calls "$2")" != "$c0" && "$reply" == "0 16 15 -1 2 " ]] && return 0
        sleep 0.05
    done
    echo "bench_redis_store: sluiced ($1) never decided through $2: $reply" >&2
    exit 1
}
stop_sluiced() { kill "$sl_pid"; wait "$sl_pid" 2>/dev/null || true; }

# through ENGINE CMD BINARY [tls] -> "rps redis_us_per_decision
# calls_per_decision sluiced_us_per_decision"
through() {
    local engine=$1 cmd=$2 t0 t1 s0 s1 c0 c1 rps
    start_sluiced "$engine" "$cmd" "$3" "${4:-}"
    rcli FLUSHALL >/dev/null
    run "$sl_port" $((n_sl / 4)) CL.THROTTLE key:__rand_int__ 15 30 60 >/dev/null
    c0=$(calls "$cmd")
    t0=$(ticks "$rd_pid")
    s0=$(ticks "$sl_pid")
    rps=$(run "$sl_port" "$n_sl" CL.THROTTLE key:__rand_int__ 15 30 60)
    t1=$(ticks "$rd_pid")
    s1=$(ticks "$sl_pid")
    c1=$(calls "$cmd")
    stop_sluiced
    awk -v r="$rps" -v d=$((t1 - t0)) -v s=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" -v n="$n_sl" \
        -v c=$((c1 - c0)) 'BEGIN { printf "%s %.3f %.3f %.3f\n", r, d / hz * 1e6 / n, c / n, s / hz * 1e6 / n }'
}

rounds=${SL_BENCH_ROUNDS:-3}
declare -A cpus
for _ in $(seq "$rounds"); do
    cpus[incr]+=" $(cpu "$n_fast" INCR key:__rand_int__)"
    cpus[peer]+=" $(cpu "$n_lua" EVALSHA "$peer" 1 tb:__rand_int__ 15 0.5)"
    cpus[module]+=" $(cpu "$n_fast" SLUICE.CHECK 1 sl:__rand_int__ "$now_us" "$conf" "$item")"
    cpus[function]+=" $(cpu "$n_lua" FCALL "$fn" 1 sl:__rand_int__ check "$now_us" "$conf" "$item")"
    cpus[evalsha]+=" $(cpu "$n_lua" EVALSHA "$sha" 1 sl:__rand_int__ check "$now_us" "$conf" "$item")"
    rcli FLUSHALL >/dev/null
    cpus[peer_rps]+=" $(run "$rd_port" "$n_lua" EVALSHA "$peer" 1 tb:__rand_int__ 15 0.5)"
    for e in module function script; do
        cmd=$([[ $e == module ]] && echo SLUICE.CHECK || { [[ $e == function ]] && echo fcall || echo evalsha; })
        read -r rps us per sus < <(through "$e" "$cmd" "$sluiced")
        cpus[sl_$e]+=" $rps"
        cpus[sl_us_$e]+=" $us"
        cpus[sl_per_$e]+=" $per"
        cpus[sl_own_$e]+=" $sus"
        read -r rps us per sus < <(through "$e" "$cmd" "$sluiced" tls)
        cpus[tls_$e]+=" $rps"
        cpus[tls_us_$e]+=" $us"
        cpus[tls_own_$e]+=" $sus"
        if [[ -n "$before" ]]; then
            read -r rps us per sus < <(through "$e" "$cmd" "$before")
            cpus[before_$e]+=" $rps"
            cpus[before_us_$e]+=" $us"
            cpus[before_own_$e]+=" $sus"
        fi
    done
done
med() { median ${cpus[$1]}; }

for k in incr peer module function evalsha; do
    echo "redis_cpu_us_per_call_$k $(med "$k") us"
done
r=$(ratio "$(med module)" "$(med incr)")
echo "redis_cpu_module_vs_incr $r x $(at_most "$r" 1.5) target<=1.5"
for k in function evalsha; do
    r=$(ratio "$(med "$k")" "$(med peer)")
    echo "redis_cpu_${k}_vs_peer $r x $(at_most "$r" 1.0) target<=1.0"
done
peer_rps=$(med peer_rps)
echo "redis_peer_direct_p16 $peer_rps decisions/s"
for e in module function script; do
    echo "redis_store_${e}_p16 $(med "sl_$e") decisions/s"
    echo "redis_store_${e}_redis_cpu_us_per_decision $(med "sl_us_$e") us"
    echo "redis_store_${e}_calls_per_decision $(med "sl_per_$e") calls"
done
r=$(ratio "$(med sl_module)" "$peer_rps")
echo "redis_store_module_vs_peer_direct $r x $(at_least "$r" 1.0) target>=1.0"
for e in function script; do
    echo "redis_store_${e}_vs_peer_direct $(ratio "$(med "sl_$e")" "$peer_rps") x"
done
for e in module function script; do
    echo "redis_store_${e}_sluiced_cpu_us_per_decision $(med "sl_own_$e") us"
    echo "redis_store_${e}_tls_p16 $(med "tls_$e") decisions/s"
    echo "redis_store_${e}_tls_sluiced_cpu_us_per_decision $(med "tls_own_$e") us"
    echo "redis_store_${e}_tls_redis_cpu_us_per_decision $(med "tls_us_$e") us"
    r=$(ratio "$(med "tls_own_$e")" "$(med "sl_own_$e")")
    echo "redis_store_${e}_tls_vs_clear_sluiced_cpu $r x $(at_most "$r" 1.25) target<=1.25"
    if [[ -n "$before" ]]; then
        echo "redis_store_${e}_before_p16 $(med "before_$e") decisions/s"
        echo "redis_store_${e}_before_sluiced_cpu_us_per_decision $(med "before_own_$e") us"
        echo "redis_store_${e}_before_redis_cpu_us_per_decision $(med "before_us_$e") us"
        r=$(ratio "$(med "sl_own_$e")" "$(med "before_own_$e")")
        echo "redis_store_${e}_after_vs_before_sluiced_cpu $r x $(at_most "$r" 1.03) target<=1.03"
        r=$(ratio "$(med "sl_us_$e")" "$(med "before_us_$e")")
        echo "redis_store_${e}_after_vs_before_redis_cpu $r x $(at_most "$r" 1.03) target<=1.03"
    fi
done
