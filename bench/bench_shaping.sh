#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_shaping.sh BUILD_DIR - how long a shaped client waits while another
# client on the same route has requests held: sluiced's proxy against
# nginx's `limit_req zone=... burst=4 delay=1`, in front of the same
# upstream (nginx answering `return 200`), in the same run.
#
# Both shape per client (the X-Client header) with a leaky bucket of 2/s,
# burst 4, the first excess request undelayed (sluiced: leaky_bucket
# requests 2, period 1s, burst 4, delay 1). Client A sends 5 requests, each
# on its own connection, 20 ms apart (held 0, 0, 0.5, 1 and 1.5 s); then
# client B sends 3, whose third gets B's own delay: 0.5 s less the 40 ms
# B's bucket drained since B's first, 0.46 s. Measured: the time from
# sending B's third request to its response, about 0.46 s when each client
# is delayed by its own limit and about 1.36 s when B waits behind A's
# queue (A's last leaves 1.5 s after A's first). Each round uses new client names, so buckets start empty.
#
# Output: `name value unit` lines, the median of SL_BENCH_ROUNDS (3)
# rounds: B's observed delay through sluiced and through nginx, the delay
# B's own limit gives, and sluiced's excess over it with MET or MISSED
# (target: within 0.1 s). A round takes about 2 s. It does not build
# anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
rounds=${SL_BENCH_ROUNDS:-3}
[[ -x "$sluiced" ]] || { echo "bench_shaping: $sluiced not built" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init bench_shaping nginx curl

up_port=$(free_port) ng_port=$(free_port) sl_port=$(free_port)

nginx_ok_conf "$tmp/upstream" "$up_port"
nginx_conf "$tmp/proxy" "
    upstream api {
        server 127.0.0.1:$up_port;
        keepalive 16;
    }
    limit_req_zone \$http_x_client zone=shape:1m rate=2r/s;
    limit_req_status 429;
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
    server {
        listen 127.0.0.1:$ng_port;
        location / {
            limit_req zone=shape burst=4 delay=1;
            proxy_pass http://api;
        }
    }"
cat >"$tmp/rules.yaml" <<YAML
domain: shape
descriptors:
  - key: client
    limits: [{algorithm: leaky_bucket, requests: 2, period: 1s, burst: 4, delay: 1}]
YAML
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [proxy]}]
workers: 1
log: {level: warn, access: "off"}
rules: {files: [rules.yaml]}
proxy:
  routes:
    - name: shaped
      domain: shape
      max_delay: 5s
      rate_limits: [{actions: [{request_headers: {header_name: X-Client, descriptor_key: client}}]}]
      upstream: {servers: ["127.0.0.1:$up_port"]}
YAML

nginx -p "$tmp/upstream" -c "$tmp/upstream/nginx.conf" 2>"$tmp/up.stderr" &
pids+=($!)
nginx -p "$tmp/proxy" -c "$tmp/proxy/nginx.conf" 2>"$tmp/ng.stderr" &
pids+=($!)
"$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
pids+=($!)
wait_http "$up_port" /
wait_http "$ng_port" /
wait_http "$sl_port" /

# round PORT TAG: B's third request's delay in seconds, through PORT.
round() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import socket, sys, threading, time

port, tag = int(sys.argv[1]), sys.argv[2]
got = {}

def answer(i, s):  # each response timed as it arrives, not in turn
    f = s.makefile("rb")
    status = int(f.readline().split()[1])
    got[i] = (status, time.monotonic())
    s.close()

sent, readers = [], []
for i, client in enumerate([f"A{tag}"] * 5 + [f"B{tag}"] * 3):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    t = time.monotonic()
    s.sendall(f"GET / HTTP/1.1\r\nHost: x\r\nX-Client: {client}\r\n\r\n".encode())
    sent.append((s, t))
    readers.append(threading.Thread(target=answer, args=(i, s)))
    readers[-1].start()
    time.sleep(0.02)
for th in readers:
    th.join()
got = [got[i] for i in range(len(sent))]
if any(status != 200 for status, _ in got):
    sys.exit(f"bench_shaping: unexpected answers {[st for st, _ in got]} on port {port}")
print(f"{got[-1][1] - sent[-1][1]:.3f}")
PY
}

sl=() ng=()
for r in $(seq "$rounds"); do
    sl+=("$(round "$sl_port" "sl$r")")
    ng+=("$(round "$ng_port" "ng$r")")
done
s=$(median "${sl[@]}") n=$(median "${ng[@]}")
echo "shaping_other_key_delay_sluiced $s s"
echo "shaping_other_key_delay_nginx $n s"
echo "shaping_other_key_delay_own_limit 0.460 s"
x=$(awk -v s="$s" 'BEGIN { printf "%.3f", s - 0.46 }')
echo "shaping_other_key_excess_sluiced $x s $(awk -v x="$x" 'BEGIN { print (x <= 0.1) ? "MET" : "MISSED" }') target<=0.1"
