#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_proxy.sh BUILD_DIR - sluiced as a reverse proxy against nginx's
# proxy_pass in front of the same upstream, in the same run: the upstream
# is nginx answering `return 200`; both proxies keep a keep-alive pool to
# it, run one worker, log nothing and limit nothing. The server side
# (upstream and the proxy measured) is pinned to CPU 0, wrk to CPU 1
# (64 connections, 1 thread, SL_BENCH_PROXY_SECONDS (10) seconds each).
# Output: `name value unit` lines: req/s and the proxy's CPU time per
# request (utime+stime from /proc/PID/stat over the run, the upstream
# excluded), each the median of SL_BENCH_ROUNDS (3) interleaved runs, and
# the ratio with MET or MISSED and its target (>= 1.0). It does not build
# anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
secs=${SL_BENCH_PROXY_SECONDS:-10}
rounds=${SL_BENCH_ROUNDS:-3}
[[ -x "$sluiced" ]] || { echo "bench_proxy: $sluiced not built" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init bench_proxy wrk nginx taskset curl

up_port=$(free_port) ng_port=$(free_port) sl_port=$(free_port)

# nginx_conf DIR BODY: a one-worker nginx whose http block holds BODY.
nginx_conf() {
    mkdir -p "$1"
    cat >"$1/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $1/body;
    proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fastcgi;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
    keepalive_requests 100000000;
$2
}
NGINX
}

nginx_conf "$tmp/upstream" "
    server {
        listen 127.0.0.1:$up_port;
        location / { return 200 \"ok\n\"; }
    }"
nginx_conf "$tmp/proxy" "
    upstream api {
        server 127.0.0.1:$up_port;
        keepalive 64;
        keepalive_requests 100000000;
    }
    server {
        listen 127.0.0.1:$ng_port;
        location / {
            proxy_pass http://api;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }"
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [proxy]}]
workers: 1
log: {level: warn, access: "off"}
proxy:
  keepalive: 64
  routes:
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

# One wrk run against PORT, measuring PID: "req/s us-per-request".
run() {
    local port=$1 pid=$2 out t0 t1 n
    t0=$(cpu_ticks "$pid")
    out=$(taskset -c 1 wrk -t1 -c64 -d"${secs}s" "http://127.0.0.1:$port/")
    t1=$(cpu_ticks "$pid")
    if grep -q "Non-2xx\|Socket errors" <<<"$out"; then
        echo "bench_proxy: errors during the run:" >&2
        echo "$out" >&2
        exit 1
    fi
    n=$(awk '/ requests in / { print $1 }' <<<"$out")
    awk -v rps="$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")" -v n="$n" \
        -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%s %.2f\n", rps, ticks / hz * 1e6 / n }'
}

sl_rps=() sl_cpu=() ng_rps=() ng_cpu=()
for _ in $(seq "$rounds"); do
    read -r r c < <(run "$sl_port" "$sl_pid")
    sl_rps+=("$r") sl_cpu+=("$c")
    read -r r c < <(run "$ng_port" "$ng_worker")
    ng_rps+=("$r") ng_cpu+=("$c")
done
sl=$(median "${sl_rps[@]}") ng=$(median "${ng_rps[@]}")
echo "proxy_sluiced_rps $sl req/s"
echo "proxy_sluiced_cpu_per_req $(median "${sl_cpu[@]}") us"
echo "proxy_nginx_rps $ng req/s"
echo "proxy_nginx_cpu_per_req $(median "${ng_cpu[@]}") us"
r=$(awk -v a="$sl" -v b="$ng" 'BEGIN { printf "%.2f", a / b }')
echo "proxy_sluiced_vs_nginx $r x $(awk -v r="$r" 'BEGIN { print (r >= 1.0) ? "MET" : "MISSED" }') target>=1.0"
