#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_http.sh BUILD_DIR - sluiced's POST /v1/check over HTTP/1.1 against
# nginx answering a static `return 200` on the same machine in the same run,
# both driven by wrk with the same settings (64 connections, 1 thread,
# SL_BENCH_HTTP_SECONDS (10) seconds each, keep-alive). sluiced decides a
# real rule (a token bucket per user, 1,000 users cycled by the wrk Lua
# script) with one worker; nginx runs one worker process.
# Pinned as docs/contracts.md §Interfaces says: the server side on CPU 0, wrk on CPU 1.
# Beside each rate, the server's own CPU time per request (utime + stime of
# sluiced, or of nginx's worker, from /proc/PID/stat over the run, divided by
# the requests wrk counted), and wrk's own CPU use: when wrk keeps CPU 1
# busy the rate measures wrk, and the CPU per request is the server's
# figure. nginx is also driven by the very requests sluiced gets (the same
# Lua script, POST /v1/check with its JSON body, which nginx reads and
# discards before its `return 200`): the load generator's work per request
# is then the same on both sides. That ratio has no target.
# Output: `name value unit` lines; the ratio prints MET or MISSED and the
# target (>= 1.0). Each figure is the median of SL_BENCH_ROUNDS (3)
# interleaved runs. It does not build anything and kills only the servers
# it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
secs=${SL_BENCH_HTTP_SECONDS:-10}
rounds=${SL_BENCH_ROUNDS:-3}
[[ -x "$sluiced" ]] || { echo "bench_http: $sluiced not built" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init bench_http wrk nginx taskset curl

sl_port=$(free_port)
cat >"$tmp/rules.yaml" <<YAML
domain: bench
descriptors:
  - key: user
    limits:
      - name: per_user
        algorithm: token_bucket
        requests: 1000000
        period: 1s
YAML
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [http1]}]
workers: 1
rules: {files: [rules.yaml], watch: false}
store: {max_bytes: 256MiB}
log: {level: warn}
YAML
taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
sl_pid=$!
pids+=($!)

ng_port=$(free_port)
nginx_ok_conf "$tmp/nginx" "$ng_port"
taskset -c 0 nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" 2>"$tmp/nginx.stderr" &
ng_master=$!
pids+=($!)
wait_http "$sl_port" /healthz
wait_http "$ng_port" /
ng_pid=$(pgrep -P "$ng_master" | head -1)
tck=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

users_check_lua "$tmp/check.lua"

# One wrk run (wrk on CPU 1, 64 connections) against the server PID:
# "req/s cpu_us_per_request wrk_cpu_percent" (wrk's user + system time
# over the run's length, from bash's `time`).
rps() {
    local pid=$1 out c0 c1 w
    shift
    c0=$(ticks "$pid")
    w=$( { TIMEFORMAT='%R %U %S'; time taskset -c 1 wrk -t1 -c64 -d"${secs}s" "$@" >"$tmp/wrk.out" 2>&1; } 2>&1)
    out=$(cat "$tmp/wrk.out")
    c1=$(ticks "$pid")
    if grep -q "Non-2xx" <<<"$out"; then
        echo "bench_http: non-2xx answers during the run:" >&2
        echo "$out" >&2
        exit 1
    fi
    awk -v c=$((c1 - c0)) -v t="$tck" -v w="$w" '/^Requests\/sec:/ { r = $2 }
        / requests in / { n = $1 }
        END { split(w, x, " "); printf "%s %.3f %.0f\n", r, c / t * 1e6 / n, (x[2] + x[3]) / x[1] * 100 }' <<<"$out"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t) ? "MET" : "MISSED" }'; }

sls=() ngs=() slc=() ngc=() slw=() ngw=() nss=() nsc=() nsw=()
for _ in $(seq "$rounds"); do
    out=$(rps "$sl_pid" -s "$tmp/check.lua" "http://127.0.0.1:$sl_port")
    read -r r c w <<<"$out"
    sls+=("$r") slc+=("$c") slw+=("$w")
    out=$(rps "$ng_pid" "http://127.0.0.1:$ng_port/")
    read -r r c w <<<"$out"
    ngs+=("$r") ngc+=("$c") ngw+=("$w")
    out=$(rps "$ng_pid" -s "$tmp/check.lua" "http://127.0.0.1:$ng_port")
    read -r r c w <<<"$out"
    nss+=("$r") nsc+=("$c") nsw+=("$w")
done
sl=$(median "${sls[@]}") ng=$(median "${ngs[@]}")
echo "http_check_rps $sl req/s"
echo "http_nginx_static_rps $ng req/s"
echo "http_check_cpu_per_request $(median "${slc[@]}") us"
echo "http_nginx_static_cpu_per_request $(median "${ngc[@]}") us"
r=$(ratio "$sl" "$ng")
echo "http_check_vs_nginx_static $r x $(verdict "$r" 1.0) target>=1.0"
echo "http_check_vs_nginx_static_cpu $(ratio "$(median "${slc[@]}")" "$(median "${ngc[@]}")") x"
echo "http_wrk_cpu_check $(median "${slw[@]}") %"
echo "http_wrk_cpu_nginx_static $(median "${ngw[@]}") %"
ns=$(median "${nss[@]}")
echo "http_nginx_same_request_rps $ns req/s"
echo "http_nginx_same_request_cpu_per_request $(median "${nsc[@]}") us"
echo "http_wrk_cpu_nginx_same_request $(median "${nsw[@]}") %"
echo "http_check_vs_nginx_same_request $(ratio "$sl" "$ns") x"
echo "http_check_vs_nginx_same_request_cpu $(ratio "$(median "${slc[@]}")" "$(median "${nsc[@]}")") x"
