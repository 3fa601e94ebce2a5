#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
#
# ab_decision_cpu.sh SLUICED_A SLUICED_B [ROUNDS] - two builds of sluiced
# against each other, and redis-server's INCR beside them: the server's
# own CPU (utime + stime from /proc) per command over `redis-benchmark -c
# 50 -P 16 -r 100000`, for CL.THROTTLE and SL.CHECK (a token bucket rule),
# A and B interleaved round by round so the machine's drift falls on both.
# Servers on CPU 0, redis-benchmark on CPU 1; each figure is measured over
# SL_BENCH_REQUESTS_P16 commands (2,000,000) after a quarter as many to
# warm the table. Not part of `make bench`: it is the before/after tool
# for a change to the decision path (docs/benchmarks.md quotes it).
#
# Prints a line per round and per figure the median of A, of B, and B/A.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 SLUICED_A SLUICED_B [ROUNDS]" >&2; exit 2; }
a_bin=$(realpath "$1")
b_bin=$(realpath "$2")
rounds=${3:-5}
n=${SL_BENCH_REQUESTS_P16:-2000000}
[[ -x "$a_bin" && -x "$b_bin" ]] || { echo "ab_decision_cpu: $a_bin or $b_bin not executable" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init ab_decision_cpu redis-server redis-benchmark redis-cli taskset

per_user_rules
start_sluiced() { # BIN NAME -> port in $port_NAME, pid in $pid_NAME
    local p
    p=$(free_port)
    cat >"$tmp/$2.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $p, protocols: [resp]}]
workers: 1
rules: {files: [rules.yaml], watch: false}
store: {max_bytes: 512MiB}
log: {level: warn}
YAML
    taskset -c 0 "$1" -c "$tmp/$2.yaml" 2>"$tmp/$2.log" &
    pids+=($!)
    printf -v "pid_$2" %s "$!"
    printf -v "port_$2" %s "$p"
    wait_redis "$p"
}
start_sluiced "$a_bin" a
start_sluiced "$b_bin" b
rd_port=$(free_port)
start_redis "$rd_port"
rd_pid=${pids[-1]}

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
cpu_us() { # PID PORT COMMAND... -> the server's CPU us per command
    local pid=$1 port=$2 t0 t1
    shift 2
    taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n $((n / 4)) -r 100000 -P 16 \
        -q "$@" >/dev/null 2>&1
    t0=$(ticks "$pid")
    taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$n" -r 100000 -P 16 \
        -q "$@" >/dev/null 2>&1
    t1=$(ticks "$pid")
    awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "%.3f", d / hz * 1e6 / n }'
}

declare -A v
th=(CL.THROTTLE key:__rand_int__ 15 30 60)
ck=(SL.CHECK bench 1 user __rand_int__)
for r in $(seq "$rounds"); do
    line="round $r"
    for x in a b; do
        pid_var=pid_$x port_var=port_$x
        t=$(cpu_us "${!pid_var}" "${!port_var}" "${th[@]}")
        c=$(cpu_us "${!pid_var}" "${!port_var}" "${ck[@]}")
        v[th_$x]+=" $t"
        v[ck_$x]+=" $c"
        line+=" cl_throttle_$x $t sl_check_$x $c"
    done
    i=$(cpu_us "$rd_pid" "$rd_port" INCR key:__rand_int__)
    v[incr]+=" $i"
    echo "$line incr $i"
done
for f in th ck; do
    name=$([[ $f == th ]] && echo cl_throttle || echo sl_check)
    ma=$(median ${v[${f}_a]}) mb=$(median ${v[${f}_b]}) mi=$(median ${v[incr]})
    echo "${name}_p16 A $ma us B $mb us B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", b / a }')" \
        "A/INCR $(awk -v a="$ma" -v i="$mi" 'BEGIN { printf "%.2f", a / i }')" \
        "B/INCR $(awk -v b="$mb" -v i="$mi" 'BEGIN { printf "%.2f", b / i }')"
done
