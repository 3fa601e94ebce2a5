#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_proxy.sh BUILD_DIR - sluiced as a reverse proxy against nginx in
# front of the same upstream, in the same run: the upstream is nginx
# answering `return 200`; both proxies keep a keep-alive pool to it, run
# one worker and log nothing. Three paths, each its own location/route:
#   /        proxy_pass alone: nothing limited;
#   /allow/  a token bucket per client (remote_address; nginx limit_req
#            over $binary_remote_addr) of 100000/s, burst 1000: no request
#            is over it;
#   /reject/ the same of 1 per minute: every request but the first is over
#            it and answered 429 (nginx: limit_req_status 429).
# The server side (upstream and the proxy measured) is pinned to CPU 0,
# wrk to CPU 1 (64 connections, 1 thread, SL_BENCH_PROXY_SECONDS (10)
# seconds each). Output: `name value unit` lines: req/s and the proxy's
# CPU time per request (utime+stime from /proc/PID/stat over the run, the
# upstream excluded), each the median of SL_BENCH_ROUNDS (3) interleaved
# runs, and the ratios with MET or MISSED and their target (>= 1.0: req/s
# sluiced/nginx, and CPU per request nginx/sluiced on the limit paths). It
# does not build anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
secs=${SL_BENCH_PROXY_SECONDS:-10}
rounds=${SL_BENCH_ROUNDS:-3}
[[ -x "$sluiced" ]] || { echo "bench_proxy: $sluiced not built" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init bench_proxy wrk nginx taskset curl

up_port=$(free_port) ng_port=$(free_port) sl_port=$(free_port)


nginx_ok_conf "$tmp/upstream" "$up_port"
nginx_conf "$tmp/proxy" "
    upstream api {
        server 127.0.0.1:$up_port;
        keepalive 64;
        keepalive_requests 100000000;
    }
    limit_req_zone \$binary_remote_addr zone=allow:10m rate=100000r/s;
    limit_req_zone \$binary_remote_addr zone=reject:10m rate=1r/m;
    limit_req_status 429;
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
    server {
        listen 127.0.0.1:$ng_port;
        location / {
            proxy_pass http://api;
        }
        location /allow/ {
            limit_req zone=allow burst=1000 nodelay;
            proxy_pass http://api;
        }
        location /reject/ {
            limit_req zone=reject;
            proxy_pass http://api;
        }
    }"
cat >"$tmp/rules.yaml" <<YAML
domain: allow
descriptors:
  - key: remote_address
    limits: [{algorithm: token_bucket, requests: 100000, period: 1s, burst: 1000}]
---
domain: reject
descriptors:
  - key: remote_address
    limits: [{algorithm: token_bucket, requests: 1, period: 1m}]
YAML
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [proxy]}]
workers: 1
log: {level: warn, access: "off"}
rules: {files: [rules.yaml]}
proxy:
  keepalive: 64
  routes:
    - name: allow
      path_prefix: /allow/
      domain: allow
      rate_limits: [{actions: [{remote_address: {}}]}]
      upstream: {servers: ["127.0.0.1:$up_port"]}
    - name: reject
      path_prefix: /reject/
      domain: reject
      rate_limits: [{actions: [{remote_address: {}}]}]
      upstream: {servers: ["127.0.0.1:$up_port"]}
    - name: api
      upstream: {servers: ["127.0.0.1:$up_port"]}
YAML

taskset -c 0 nginx -p "$tmp/upstream" -c "$tmp/upstream/nginx.conf" 2>"$tmp/up.stderr" &
pids+=($!)
taskset -c 0 nginx -p "$tmp/proxy" -c "$tmp/proxy/nginx.conf" 2>"$tmp/ng.stderr" &
pids+=($!)
taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
sl_pid=$!
pids+=($sl_pid)
wait_http "$up_port" /
wait_http "$ng_port" /
wait_http "$sl_port" /
# nginx's master forks the worker that does the work: measure that one.
ng_worker=$(pgrep -P "$(cat "$tmp/proxy/nginx.pid")" | head -1)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# One wrk run against PORT and PATH, measuring PID: "req/s us-per-request".
# WANT: 2xx (any other answer fails the run) or 429 (every answer but a
# few, the bucket's refills, must be non-2xx).
run() {
    local port=$1 pid=$2 path=$3 want=$4 out t0 t1 n bad
    t0=$(cpu_ticks "$pid")
    out=$(taskset -c 1 wrk -t1 -c64 -d"${secs}s" "http://127.0.0.1:$port$path")
    t1=$(cpu_ticks "$pid")
    n=$(awk '/ requests in / { print $1 }' <<<"$out")
    bad=$(awk '/Non-2xx/ { print $5 }' <<<"$out")
    if grep -q "Socket errors" <<<"$out" || { [[ $want == 2xx ]] && [[ -n $bad ]]; } ||
        { [[ $want == 429 ]] && (( ${bad:-0} < n - 5 )); }; then
        echo "bench_proxy: unexpected answers during the run of $path ($want wanted):" >&2
        echo "$out" >&2
        exit 1
    fi
    awk -v rps="$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")" -v n="$n" \
        -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%s %.2f\n", rps, ticks / hz * 1e6 / n }'
}

# A request over each limit path first, so that every measured run finds
# the reject bucket empty.
curl -s -o /dev/null "http://127.0.0.1:$sl_port/reject/"
curl -s -o /dev/null "http://127.0.0.1:$ng_port/reject/"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" 'BEGIN { print (r >= 1.0) ? "MET" : "MISSED" }'; }

# measure NAME PATH WANT: interleaved rounds of sluiced and nginx on PATH.
measure() {
    local name=$1 path=$2 want=$3 sl_rps=() sl_cpu=() ng_rps=() ng_cpu=() r c sl ng slc ngc
    for _ in $(seq "$rounds"); do
        read -r r c < <(run "$sl_port" "$sl_pid" "$path" "$want")
        sl_rps+=("$r") sl_cpu+=("$c")
        read -r r c < <(run "$ng_port" "$ng_worker" "$path" "$want")
        ng_rps+=("$r") ng_cpu+=("$c")
    done
    sl=$(median "${sl_rps[@]}") ng=$(median "${ng_rps[@]}")
    slc=$(median "${sl_cpu[@]}") ngc=$(median "${ng_cpu[@]}")
    echo "${name}_sluiced_rps $sl req/s"
    echo "${name}_sluiced_cpu_per_req $slc us"
    echo "${name}_nginx_rps $ng req/s"
    echo "${name}_nginx_cpu_per_req $ngc us"
    r=$(ratio "$sl" "$ng")
    echo "${name}_sluiced_vs_nginx $r x $(verdict "$r") target>=1.0"
    if [[ $name != proxy ]]; then
        r=$(ratio "$ngc" "$slc")
        echo "${name}_cpu_nginx_vs_sluiced $r x $(verdict "$r") target>=1.0"
    fi
}

measure proxy / 2xx
measure proxy_limit_allow /allow/ 2xx
measure proxy_limit_reject /reject/ 429
