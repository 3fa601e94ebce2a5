#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# count_proxy.sh BUILD_DIR... - instructions per proxied request, counted
# by callgrind (deterministic, unlike a time or a rate on a shared
# machine): for each build's sluiced (a Release build, say) and each path,
# sluiced runs under `valgrind --tool=callgrind` in front of a one-worker
# nginx answering `return 200`, with one worker, the readiness loop
# (server.io_uring: off, which valgrind runs) and no access log; a client
# sends N requests one after the other over one keep-alive connection,
# then sluiced stops on SIGTERM. The same again with 2N requests; the
# start, the stop and the first connection cost the same in both runs, so
# (Ir(2N) - Ir(N)) / N is what one more request costs. Paths:
#   /        a route without limits (proxy alone);
#   /allow/  a route whose every request is decided (remote_address,
#            a token bucket far above the load): the gate's allow path.
# Output: `BUILD PATH instructions-per-request` lines. N is
# SL_COUNT_PROXY_N (2000). It builds nothing and kills only the servers it
# started (by PID). Typical use: the build before a change and after it,
#   bench/count_proxy.sh /tmp/old/build-rel build-rel
set -euo pipefail
(($# >= 1)) || { echo "usage: count_proxy.sh BUILD_DIR..." >&2; exit 2; }
n=${SL_COUNT_PROXY_N:-2000}
. "$(dirname "$0")/lib.sh"
bench_init count_proxy valgrind nginx curl
for b in "$@"; do
    [[ -x "$b/server/sluiced" ]] || { echo "count_proxy: $b/server/sluiced not built" >&2; exit 1; }
done

up_port=$(free_port)
nginx_ok_conf "$tmp/upstream" "$up_port"
nginx -p "$tmp/upstream" -c "$tmp/upstream/nginx.conf" 2>"$tmp/up.stderr" &
pids+=($!)
wait_http "$up_port" /

cat >"$tmp/rules.yaml" <<YAML
domain: allow
descriptors:
  - key: remote_address
    limits: [{algorithm: token_bucket, requests: 100000000, period: 1s, burst: 100000000}]
YAML

# The client: COUNT requests of PATH over one connection, each answered 200.
cat >"$tmp/client.py" <<'PY'
import http.client, sys
port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
for i in range(count):
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"count_proxy: request {i} of {path} answered {r.status}")
c.close()
PY

# run BUILD PATH COUNT: the total instructions of one sluiced run.
run() {
    local build=$1 path=$2 count=$3 port out pid
    port=$(free_port)
    out=$tmp/callgrind.$RANDOM
    cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $port, protocols: [proxy]}]
workers: 1
server: {io_uring: "off"}
log: {level: warn, access: "off"}
rules: {files: [rules.yaml]}
proxy:
  keepalive: 4
  routes:
    - name: allow
      path_prefix: /allow/
      domain: allow
      rate_limits: [{actions: [{remote_address: {}}]}]
      upstream: {servers: ["127.0.0.1:$up_port"]}
    - name: api
      upstream: {servers: ["127.0.0.1:$up_port"]}
YAML
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$build/server/sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
    pid=$!
    pids+=($pid)
    for _ in $(seq 600); do # up to a minute for the start under valgrind
        curl -s -o /dev/null "http://127.0.0.1:$port$path" && break
        sleep 0.1
    done
    /usr/bin/python3 "$tmp/client.py" "$port" "$path" "$count"
    kill -TERM "$pid"
    wait "$pid" || true
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

for b in "$@"; do
    for path in / /allow/; do
        one=$(run "$b" "$path" "$n")
        two=$(run "$b" "$path" $((2 * n)))
        awk -v b="$b" -v p="$path" -v one="$one" -v two="$two" -v n="$n" \
            'BEGIN { printf "%s %s %.0f\n", b, p, (two - one) / n }'
    done
done
