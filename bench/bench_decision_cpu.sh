#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_decision_cpu.sh BUILD_DIR - what a decision costs the server, against
# what redis-server spends on a plain INCR, and the latency of a decision at a
# fixed offered load.
#
# 1. CPU per command: the server's own CPU time (utime + stime from
#    /proc/PID/stat) over a redis-benchmark run, divided by the commands of
#    the run, so the figure does not depend on the load generator. sluiced
#    (one worker, memory store) answers CL.THROTTLE and SL.CHECK (a token
#    bucket rule), redis-server INCR; redis-benchmark -c 50 with and without
#    -P 16, over 100,000 and over 1,000,000 random keys (-r). Targets:
#    <= 0.85x INCR's CPU per command with -P 16, <= 0.9x without.
#    PING rows: sluiced's and redis-server's CPU per PING, utime and stime
#    apart, with and without -P 16 (the cost of the connection and reply
#    path that every command pays). Target: sluiced's user CPU per
#    CL.THROTTLE with -P 16 over 100,000 keys <= its user CPU per PING with
#    -P 16 + 0.25 us (what the decision adds in user space; the kernel's
#    share is the same connection path as PING's).
# 2. Latency, open loop (bench/oload: requests sent on a schedule, latency
#    counted from when each was due): first the most oload reaches against
#    sluiced, then p50/p99/p99.9 at 50 % and 90 % of it, for RESP SL.CHECK,
#    HTTP POST /v1/check and gRPC ShouldRateLimit over 100,000 keys, and
#    RESP over 1,000,000.
#    No target: the figures are recorded.
# 3. The same sluiced with server.io_uring: off (libuv's readiness loop: a
#    read and a write per connection per iteration) beside the one in its
#    default (io_uring where the kernel allows it), interleaved in the same
#    rounds: CL.THROTTLE's CPU per command in both and their ratio. No
#    target: it says what the io_uring connection layer is worth here.
# Pinned as docs/contracts.md §Interfaces says: the servers on CPU 0, the
# load generators on CPU 1. Each CPU figure is the median of SL_BENCH_ROUNDS
# (3) interleaved runs. Output: `name value unit` lines; ratios print MET or
# MISSED and the target. It does not build anything and kills only the
# servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
oload=$build/bench/oload
n1=${SL_BENCH_REQUESTS:-200000}       # commands per run without pipelining
n16=${SL_BENCH_REQUESTS_P16:-2000000} # with -P 16
rounds=${SL_BENCH_ROUNDS:-3}
lsecs=${SL_BENCH_LATENCY_SECONDS:-5}
[[ -x "$sluiced" && -x "$oload" ]] || { echo "bench_decision_cpu: $sluiced or $oload not built" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init bench_decision_cpu redis-server redis-benchmark redis-cli taskset curl

port=$(free_port)
per_user_rules
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $port, protocols: [resp, http1, grpc]}]
workers: 1
rules: {files: [rules.yaml], watch: false}
store: {max_bytes: 512MiB}
log: {level: info}
YAML
rport=$(free_port)
sed -e "s/port: $port,/port: $rport,/" "$tmp/sluice.yaml" >"$tmp/readiness.yaml"
echo "server: {io_uring: off}" >>"$tmp/readiness.yaml"
taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
sl_pid=$!
pids+=("$sl_pid")
taskset -c 0 "$sluiced" -c "$tmp/readiness.yaml" 2>"$tmp/readiness.log" &
rl_pid=$!
pids+=("$rl_pid")
rd_port=$(free_port)
start_redis "$rd_port"
rd_pid=${pids[-1]}
wait_redis "$port"
wait_redis "$rport"
# what each sluiced's connections go through (its server.io line)
echo "io_default $(sed -n 's/.*server\.io connections through //p' "$tmp/sluiced.log" | tr ' ' _)"
echo "io_off $(sed -n 's/.*server\.io connections through //p' "$tmp/readiness.log" | tr ' ' _)"

# Both must answer properly, or the figures mean nothing.
reply=$(redis-cli -p "$port" CL.THROTTLE key:sanity 15 30 60 | tr '\n' ' ')
[[ "$reply" == "0 16 15 -1 2 " ]] || { echo "bench_decision_cpu: CL.THROTTLE answered: $reply" >&2; exit 1; }
reply=$(redis-cli -p "$port" SL.CHECK bench 1 user sanity | head -1)
[[ "$reply" == "allow" ]] || { echo "bench_decision_cpu: SL.CHECK answered: $reply" >&2; exit 1; }

tck=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# cpu_us PID PORT PIPE N KEYS COMMAND... -> the server's CPU us per command;
# its user CPU alone per command goes to $tmp/utime.
cpu_us() {
    local pid=$1 p=$2 pipe=$3 n=$4 keys=$5 u0 s0 u1 s1 out
    shift 5
    read -r u0 s0 < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
    out=$(taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$p" -c 50 -n "$n" -r "$keys" -P "$pipe" \
        --csv "$@" 2>/dev/null | tail -1)
    read -r u1 s1 < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
    [[ -n "$out" ]] || { echo "bench_decision_cpu: redis-benchmark failed" >&2; exit 1; }
    awk -v u=$((u1 - u0)) -v t="$tck" -v n="$n" 'BEGIN { printf "%.3f", u / t * 1e6 / n }' >"$tmp/utime"
    awk -v c=$((u1 - u0 + s1 - s0)) -v t="$tck" -v n="$n" 'BEGIN { printf "%.3f", c / t * 1e6 / n }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
at_most() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "MET" : "MISSED" }'; }

th_user_100k_p16=()
for keys in 100000 1000000; do
    kname=$([[ $keys == 100000 ]] && echo 100k || echo 1m)
    for pipe in 1 16; do
        n=$n1 target=0.9
        [[ $pipe == 16 ]] && n=$n16 target=0.85
        th=() ck=() inc=() rd=()
        for _ in $(seq "$rounds"); do
            th+=("$(cpu_us "$sl_pid" "$port" "$pipe" "$n" "$keys" CL.THROTTLE key:__rand_int__ 15 30 60)")
            [[ $keys == 100000 && $pipe == 16 ]] && th_user_100k_p16+=("$(cat "$tmp/utime")")
            rd+=("$(cpu_us "$rl_pid" "$rport" "$pipe" "$n" "$keys" CL.THROTTLE key:__rand_int__ 15 30 60)")
            ck+=("$(cpu_us "$sl_pid" "$port" "$pipe" "$n" "$keys" SL.CHECK bench 1 user __rand_int__)")
            inc+=("$(cpu_us "$rd_pid" "$rd_port" "$pipe" "$n" "$keys" INCR key:__rand_int__)")
        done
        t=$(median "${th[@]}") k=$(median "${ck[@]}") i=$(median "${inc[@]}") rr=$(median "${rd[@]}")
        sfx="_${kname}_p${pipe}"
        echo "cpu_resp_cl_throttle$sfx $t us"
        echo "cpu_resp_cl_throttle_readiness$sfx $rr us"
        echo "cpu_cl_throttle_default_vs_readiness$sfx $(ratio "$t" "$rr") x"
        echo "cpu_resp_sl_check$sfx $k us"
        echo "cpu_redis_incr$sfx $i us"
        r=$(ratio "$t" "$i")
        echo "cpu_cl_throttle_vs_incr$sfx $r x $(at_most "$r" "$target") target<=$target"
        r=$(ratio "$k" "$i")
        echo "cpu_sl_check_vs_incr$sfx $r x $(at_most "$r" "$target") target<=$target"
    done
done

# PING: what a command costs that decides nothing (the connection, parsing
# and reply path alone), sluiced against redis-server, utime and stime apart.
# cpu_split PID PORT PIPE N -> "utime_us stime_us" per command
cpu_split() {
    local pid=$1 p=$2 a0 b0 a1 b1 out
    read -r a0 b0 < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
    out=$(taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$p" -c 50 -n "$4" -P "$3" --csv PING 2>/dev/null | tail -1)
    read -r a1 b1 < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
    [[ -n "$out" ]] || { echo "bench_decision_cpu: redis-benchmark PING failed" >&2; exit 1; }
    awk -v u=$((a1 - a0)) -v s=$((b1 - b0)) -v t="$tck" -v n="$4" \
        'BEGIN { printf "%.3f %.3f\n", u / t * 1e6 / n, s / t * 1e6 / n }'
}
[[ "$(redis-cli -p "$port" PING)" == PONG ]] || { echo "bench_decision_cpu: PING not answered" >&2; exit 1; }
for pipe in 1 16; do
    n=$n1
    [[ $pipe == 16 ]] && n=$n16
    su=() ss=() ru=() rs=()
    for _ in $(seq "$rounds"); do
        read -r a b < <(cpu_split "$sl_pid" "$port" "$pipe" "$n")
        su+=("$a") ss+=("$b")
        read -r a b < <(cpu_split "$rd_pid" "$rd_port" "$pipe" "$n")
        ru+=("$a") rs+=("$b")
    done
    [[ $pipe == 16 ]] && ping_user_p16=$(median "${su[@]}")
    echo "cpu_ping_sluiced_utime_p$pipe $(median "${su[@]}") us"
    echo "cpu_ping_sluiced_stime_p$pipe $(median "${ss[@]}") us"
    echo "cpu_ping_redis_utime_p$pipe $(median "${ru[@]}") us"
    echo "cpu_ping_redis_stime_p$pipe $(median "${rs[@]}") us"
done

# What a decision adds to PING in user space: CL.THROTTLE's user CPU per
# command (-P 16, 100,000 keys, the rounds above) over PING's (-P 16).
tu=$(median "${th_user_100k_p16[@]}")
above=$(awk -v a="$tu" -v b="$ping_user_p16" 'BEGIN { printf "%.3f", a - b }')
echo "cpu_cl_throttle_utime_100k_p16 $tu us"
echo "cpu_cl_throttle_utime_above_ping_100k_p16 $above us $(at_most "$above" 0.25) target<=0.25"
# Whether the state table's region got transparent huge pages (table_mem.c;
# none when THP is off): the kernel's count for the whole process.
echo "sluiced_anon_huge_pages $(awk '/^AnonHugePages:/ { kb += $2 } END { print kb + 0 }' \
    "/proc/$sl_pid/smaps") kB"

# Latency at 50 % and 90 % of the most oload reaches (its own connections).
lat() { # NAME PROTO KEYS
    local name=$1 proto=$2 keys=$3 max
    max=$(taskset -c 1 "$oload" --proto "$proto" --port "$port" --rate 5000000 --conns 16 \
        --seconds 3 --warmup 1 --keys "$keys" --name x | awk '/^x_achieved_rate / { print $2 }')
    echo "${name}_max $max req/s"
    for pct in 50 90; do
        taskset -c 1 "$oload" --proto "$proto" --port "$port" --rate $((max * pct / 100)) \
            --conns 16 --seconds "$lsecs" --warmup 1 --keys "$keys" --name "${name}_at${pct}" |
            grep -E "_(achieved_rate|p50|p99|p999|errors) "
    done
}
lat lat_resp_sl_check_100k resp 100000
lat lat_http_v1_check_100k http 100000
lat lat_grpc_rls_100k grpc 100000
lat lat_resp_sl_check_1m resp 1000000
