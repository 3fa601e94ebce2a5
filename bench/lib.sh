# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# lib.sh - what the server benchmark scripts (bench/bench_*.sh) share;
# sourced, never run. Every server it starts listens on 127.0.0.1 and is
# killed by PID when the script exits.
#
#   bench_init NAME TOOL...   fail unless every TOOL is installed; make $tmp;
#                             kill every PID in $pids and remove $tmp on exit
#   free_port                 a free loopback TCP port
#   wait_redis PORT           until a RESP server answers PING on PORT
#   wait_http PORT PATH       until GET PATH answers 2xx on PORT
#   start_redis PORT          a redis-server (no persistence) pinned to CPU 0
#   per_user_rules            write $tmp/rules.yaml: domain "bench", a token
#                             bucket per `user` too large to ever deny
#   lua_token_bucket PORT     load the peer token bucket (capacity ARGV[1],
#                             ARGV[2] tokens/s, Redis's clock) and print its
#                             SHA; how rate limiting is usually done in Redis
#   median V...               the median of the values
#   nginx_conf DIR BODY       write DIR/nginx.conf: one worker, no access log,
#                             temporary files under DIR, BODY in its http block
#   nginx_ok_conf DIR PORT    nginx_conf answering `return 200 "ok"` on PORT
#   users_check_lua FILE      a wrk script: POST /v1/check, domain "bench",
#                             1,000 users cycled
#   rls_request FILE          the framed gRPC RateLimitRequest (domain
#                             "bench", user u1) h2load sends

bench_init() {
    bench_name=$1
    shift
    for tool in "$@"; do
        command -v "$tool" >/dev/null ||
            { echo "$bench_name: $tool missing (scripts/deps.sh bench)" >&2; exit 1; }
    done
    tmp=$(mktemp -d)
    pids=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}

# A port free now and not handed out before in this run (the kernel often
# gives a just-closed port again: two servers of one bench would share it).
free_port() {
    /usr/bin/python3 - "$tmp/ports.handed_out" <<'PY'
import socket, sys
path = sys.argv[1]
try:
    seen = set(open(path).read().split())
except OSError:
    seen = set()
while True:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = str(s.getsockname()[1])
    s.close()
    if port not in seen:
        break
with open(path, "a") as f:
    f.write(port + "\n")
print(port)
PY
}

per_user_rules() {
    cat >"$tmp/rules.yaml" <<YAML
domain: bench
descriptors:
  - key: user
    limits:
      - {name: per_user, algorithm: token_bucket, requests: 1000000000, period: 1s}
YAML
}

wait_redis() {
    for _ in $(seq 100); do redis-cli -p "$1" PING >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "$bench_name: nothing answers on port $1" >&2
    exit 1
}

wait_http() {
    for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$1$2" && return 0; sleep 0.05; done
    echo "$bench_name: nothing answers on port $1" >&2
    exit 1
}

start_redis() {
    taskset -c 0 redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$tmp" --logfile "$tmp/redis-$1.log" &
    pids+=($!)
    wait_redis "$1"
}

lua_token_bucket() {
    redis-cli -p "$1" SCRIPT LOAD "
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
return {allowed, math.floor(tokens)}"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

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

nginx_ok_conf() {
    nginx_conf "$1" "
    server {
        listen 127.0.0.1:$2;
        location / { return 200 \"ok\\n\"; }
    }"
}

users_check_lua() {
    cat >"$1" <<'LUA'
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
    n = (n + 1) % 1000
    return wrk.format(nil, "/v1/check",  nil,
        '{"domain":"bench","descriptors":[{"user":"u' .. n .. '"}]}')
end
LUA
}

# protoc --encode from the text format, behind gRPC's 5-byte prefix.
rls_request() {
    local proto
    proto="$(dirname "${BASH_SOURCE[0]}")/../server/grpc/proto"
    printf 'domain: "bench"\ndescriptors { entries { key: "user" value: "u1" } }\n' |
        protoc -I"$proto" --encode=envoy.service.ratelimit.v3.RateLimitRequest \
            envoy/service/ratelimit/v3/rls.proto >"$1.msg"
    /usr/bin/python3 -c 'import sys; m = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(b"\0" + len(m).to_bytes(4, "big") + m)' \
        "$1.msg" "$1"
}
