#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_tls.sh BUILD_DIR - what TLS costs sluiced, against nginx serving
# the same certificates in the same run, and gRPC over TLS against gRPC in
# clear on the same sluiced:
#   handshakes   openssl s_time, one client, new connections for
#                SL_BENCH_TLS_SECONDS (5) each: full TLS 1.3 handshakes
#                with an ECDSA P-256 and with an RSA 2048 certificate, then
#                resumed ones (s_time -reuse: the first connection's
#                session offered again; TLS 1.2, where s_time resumes)
#   keep-alive   wrk -t1 -c64 over TLS: sluiced's POST /v1/check (a real
#                token bucket per user, 1,000 users) against nginx's
#                `return 200`, the ECDSA certificate
#   gRPC         h2load -c 50 -m 16 ShouldRateLimit, over TLS (ALPN h2)
#                and in clear (prior knowledge) on the same sluiced
# sluiced runs one worker and nginx one worker process, both with session
# tickets on; both pinned to CPU 0, every client to CPU 1. The figure is
# the server's own CPU time (utime+stime from /proc/PID/stat) per
# handshake, per request or per decision; beside it the rate the client
# reached (on two cores it often measures the client). Each figure is the
# median of SL_BENCH_ROUNDS (3) interleaved runs; a ratio is the median of
# the rounds' own ratios. Targets: CPU per
# handshake <= 1.1x nginx's, per keep-alive request <= 1.15x nginx's, gRPC
# over TLS <= 1.3x gRPC in clear per decision. Output: `name value unit`
# lines; ratios print MET or MISSED and the target. It does not build
# anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
secs=${SL_BENCH_TLS_SECONDS:-5}
rounds=${SL_BENCH_ROUNDS:-3}
here=$(cd "$(dirname "$0")" && pwd)
[[ -x "$sluiced" ]] || { echo "bench_tls: $sluiced not built" >&2; exit 1; }
. "$here/lib.sh"
bench_init bench_tls openssl wrk h2load nginx taskset curl protoc

# ------------------------------------------------------------ certificates
# A self-signed certificate of each kind, for 127.0.0.1 and localhost.
for kind in ec rsa; do
    if [[ $kind == ec ]]; then key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); else key=(-newkey rsa:2048); fi
    openssl req -x509 "${key[@]}" -nodes -days 2 -subj /CN=localhost \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$tmp/$kind.key" -out "$tmp/$kind.pem" 2>/dev/null
done

# ------------------------------------------------------------ servers
clear_port=$(free_port) ec_port=$(free_port) rsa_port=$(free_port)
per_user_rules
cat >"$tmp/sluice.yaml" <<YAML
listeners:
  - {address: 127.0.0.1, port: $clear_port, protocols: [http1, grpc]}
  - address: 127.0.0.1
    port: $ec_port
    protocols: [http1, grpc]
    tls: {cert_file: ec.pem, key_file: ec.key}
  - address: 127.0.0.1
    port: $rsa_port
    protocols: [http1]
    tls: {cert_file: rsa.pem, key_file: rsa.key}
workers: 1
rules: {files: [rules.yaml], watch: false}
store: {max_bytes: 256MiB}
log: {level: warn}
YAML
taskset -c 0 "$sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
sl_pid=$!
pids+=($!)

ng_ec=$(free_port) ng_rsa=$(free_port)
nginx_conf "$tmp/nginx" "
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets on;
    server {
        listen 127.0.0.1:$ng_ec ssl;
        ssl_certificate $tmp/ec.pem;
        ssl_certificate_key $tmp/ec.key;
        location / { return 200 \"ok\\n\"; }
    }
    server {
        listen 127.0.0.1:$ng_rsa ssl;
        ssl_certificate $tmp/rsa.pem;
        ssl_certificate_key $tmp/rsa.key;
        location / { return 200 \"ok\\n\"; }
    }"
taskset -c 0 nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" 2>"$tmp/nginx.stderr" &
ng_master=$!
pids+=($!)
wait_http "$clear_port" /readyz
for _ in $(seq 100); do
    curl -sfk -o /dev/null "https://127.0.0.1:$ng_ec/" && break
    sleep 0.05
done
ng_pid=$(pgrep -P "$ng_master" | head -1)
[[ -n "$ng_pid" ]] || { echo "bench_tls: nginx did not start" >&2; cat "$tmp/nginx.stderr" >&2; exit 1; }

tck=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# per T0 T1 N: microseconds of CPU per unit.
per() { awk -v c=$(($2 - $1)) -v t="$tck" -v n="$3" 'BEGIN { printf "%.2f", (n > 0) ? c / t * 1e6 / n : 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "MET" : "MISSED" }'; }
metric() {
    curl -sf "http://127.0.0.1:$clear_port/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}

# handshakes PID PORT [s_time options]: "handshakes/s us_cpu_per_handshake"
# (s_time counts the connections it completed).
handshakes() {
    local pid=$1 port=$2 t0 t1 out n
    shift 2
    t0=$(ticks "$pid")
    out=$(taskset -c 1 openssl s_time -connect "127.0.0.1:$port" -time "$secs" "$@" 2>&1 </dev/null)
    t1=$(ticks "$pid")
    n=$(awk '/connections in [0-9.]+ real seconds/ { n = $1 } END { print n + 0 }' <<<"$out")
    [[ "$n" -gt 0 ]] || { echo "bench_tls: s_time made no connection:" >&2; echo "$out" >&2; exit 1; }
    echo "$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }') $(per "$t0" "$t1" "$n")"
}

users_check_lua "$tmp/check.lua"

# keepalive PID URL [wrk options]: "req/s us_cpu_per_request"
keepalive() {
    local pid=$1 url=$2 t0 t1 out
    shift 2
    t0=$(ticks "$pid")
    out=$(taskset -c 1 wrk -t1 -c64 -d"${secs}s" "$@" "$url" 2>&1)
    t1=$(ticks "$pid")
    ! grep -q "Non-2xx\|Socket errors" <<<"$out" || { echo "bench_tls: wrk: $out" >&2; exit 1; }
    awk '/^Requests\/sec:/ { r = $2 } / requests in / { n = $1 } END { print r, n }' <<<"$out" |
        { read -r r n; echo "$r $(per "$t0" "$t1" "$n")"; }
}

# The framed RateLimitRequest h2load sends.
rls_request "$tmp/req.bin"

# grpc URL: "req/s us_cpu_per_decision" (decisions from /metrics).
grpc() {
    local t0 t1 d0 d1 out
    t0=$(ticks "$sl_pid") d0=$(metric sluice_check_duration_seconds_count)
    out=$(taskset -c 1 h2load -c 50 -m 16 -D "$secs" --npn-list=h2 -d "$tmp/req.bin" \
        -H 'content-type: application/grpc' -H 'te: trailers' \
        "$1/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")
    t1=$(ticks "$sl_pid") d1=$(metric sluice_check_duration_seconds_count)
    grep -q " 0 failed, 0 errored" <<<"$out" || { echo "bench_tls: h2load: $out" >&2; exit 1; }
    echo "$(awk '/^finished in/ { print $4 }' <<<"$out") $(per "$t0" "$t1" $((${d1%.*} - ${d0%.*})))"
}

declare -A rate cpu pair
add() { rate[$1]+="$2 " cpu[$1]+="$3 "; }
# pair A B: the ratio of this round's CPU figures of A and B (the machine's
# speed drifts between rounds; a ratio taken within one round does not).
pair() { pair[$1_$2]+="$(ratio "$(last "${cpu[$1]}")" "$(last "${cpu[$2]}")") "; }
last() { local a=($1); echo "${a[-1]}"; }
resumed0=$(metric sluice_tls_resumed_total || true)
for _ in $(seq "$rounds"); do
    read -r r c < <(handshakes "$sl_pid" "$ec_port" -new -tls1_3); add sl_ec "$r" "$c"
    read -r r c < <(handshakes "$ng_pid" "$ng_ec" -new -tls1_3); add ng_ec "$r" "$c"
    read -r r c < <(handshakes "$sl_pid" "$rsa_port" -new -tls1_3); add sl_rsa "$r" "$c"
    read -r r c < <(handshakes "$ng_pid" "$ng_rsa" -new -tls1_3); add ng_rsa "$r" "$c"
    read -r r c < <(handshakes "$sl_pid" "$ec_port" -reuse -tls1_2); add sl_re "$r" "$c"
    read -r r c < <(handshakes "$ng_pid" "$ng_ec" -reuse -tls1_2); add ng_re "$r" "$c"
    read -r r c < <(keepalive "$sl_pid" "https://127.0.0.1:$ec_port" -s "$tmp/check.lua"); add sl_ka "$r" "$c"
    read -r r c < <(keepalive "$ng_pid" "https://127.0.0.1:$ng_ec/"); add ng_ka "$r" "$c"
    read -r r c < <(grpc "https://127.0.0.1:$ec_port"); add g_tls "$r" "$c"
    read -r r c < <(grpc "http://127.0.0.1:$clear_port"); add g_clear "$r" "$c"
    pair sl_ec ng_ec; pair sl_rsa ng_rsa; pair sl_re ng_re; pair sl_ka ng_ka; pair g_tls g_clear
done
resumed1=$(metric sluice_tls_resumed_total || true)

m() { median ${1}; }
line() { # NAME KEY UNIT
    echo "$1_rate $(m "${rate[$2]}") $3"
    echo "$1_cpu $(m "${cpu[$2]}") us"
}
line tls_handshake_ecdsa_sluiced sl_ec handshakes/s
line tls_handshake_ecdsa_nginx ng_ec handshakes/s
r=$(m "${pair[sl_ec_ng_ec]}")
echo "tls_handshake_ecdsa_cpu_vs_nginx $r x $(verdict "$r" 1.1) target<=1.1"
line tls_handshake_rsa_sluiced sl_rsa handshakes/s
line tls_handshake_rsa_nginx ng_rsa handshakes/s
r=$(m "${pair[sl_rsa_ng_rsa]}")
echo "tls_handshake_rsa_cpu_vs_nginx $r x $(verdict "$r" 1.1) target<=1.1"
line tls_resumed_sluiced sl_re handshakes/s
line tls_resumed_nginx ng_re handshakes/s
r=$(m "${pair[sl_re_ng_re]}")
echo "tls_resumed_cpu_vs_nginx $r x $(verdict "$r" 1.1) target<=1.1"
if [[ -n "$resumed0" && -n "$resumed1" ]]; then
    echo "tls_resumed_counted_by_sluiced $(awk -v a="$resumed1" -v b="$resumed0" 'BEGIN { print a - b }') handshakes"
fi
line tls_keepalive_check_sluiced sl_ka req/s
line tls_keepalive_nginx_static ng_ka req/s
r=$(m "${pair[sl_ka_ng_ka]}")
echo "tls_keepalive_cpu_vs_nginx $r x $(verdict "$r" 1.15) target<=1.15"
line grpc_tls g_tls req/s
line grpc_clear g_clear req/s
r=$(m "${pair[g_tls_g_clear]}")
echo "grpc_tls_vs_clear_cpu $r x $(verdict "$r" 1.3) target<=1.3"
