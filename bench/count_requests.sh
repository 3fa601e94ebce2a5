#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
#
# count_requests.sh SLUICED_A SLUICED_B [N] - instructions per request of two
# builds of sluiced, counted by valgrind's callgrind: for RESP (`SL.CHECK`,
# pipelined 16 at a time) and HTTP/1.1 (`POST /v1/check`, keep-alive, 16 in
# flight), a token bucket rule per user over 1,000 users. Each build runs
# twice per protocol, serving N and then 2N requests from one connection;
# (instructions of the 2N run - of the N run) / N is the figure, so the
# start, the rules and the shutdown cancel out. Instruction counts do not
# move with the machine's load (they do not see cache misses or the
# kernel's share: bench/ab_decision_cpu.sh times those). One worker,
# server.io_uring off (valgrind does not follow io_uring), loopback, free
# ports; each server stopped by its PID.
#
# Not part of `make bench`: the before/after tool for a change to the
# decision path or a room (docs/benchmarks.md quotes it). Prints per
# protocol the instructions per request of A and B, and B/A.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 SLUICED_A SLUICED_B [N]" >&2; exit 2; }
a_bin=$(realpath "$1")
b_bin=$(realpath "$2")
n=${3:-20000}
command -v valgrind >/dev/null || { echo "count_requests: valgrind missing (scripts/deps.sh bench)" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init count_requests valgrind

per_user_rules
# Requests of the client below: RESP or HTTP, `count` of them, `depth` in
# flight, read back whole before it exits.
cat >"$tmp/client.py" <<'PY'
import socket, sys
proto, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
depth = 16
s = socket.create_connection(("127.0.0.1", port))
def req(i):
    user = b"u%d" % (i % 1000)
    if proto == "resp":
        args = [b"SL.CHECK", b"bench", b"1", b"user", user]
        return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    body = b'{"domain":"bench","descriptors":[[{"key":"user","value":"' + user + b'"}]]}'
    return (b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)
# An answer's first bytes: RESP's reply to SL.CHECK is an array of three
# (its verdict first), HTTP's a status line. Counted across reads.
mark = b"*3\r\n$5\r\n" if proto == "resp" else b"HTTP/1.1 "
sent = got = 0
tail = b""
while got < count:
    while sent < count and sent - got < depth:
        s.sendall(req(sent)); sent += 1
    data = s.recv(1 << 16)
    if not data:
        sys.exit("closed after %d answers" % got)
    buf = tail + data
    got += buf.count(mark)
    tail = buf[-(len(mark) - 1):]
    if mark in tail:  # counted already; keep none of it
        tail = b""
PY
run() { # BIN PROTO COUNT -> instructions of the whole run
    local p out pid
    p=$(free_port)
    out="$tmp/cg.$RANDOM"
    cat >"$tmp/c.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $p, protocols: [$2]}]
workers: 1
server: {io_uring: "off"}
rules: {files: [rules.yaml], watch: false}
store: {max_bytes: 64MiB}
log: {level: warn}
YAML
    valgrind --tool=callgrind --callgrind-out-file="$out" "$1" -c "$tmp/c.yaml" \
        2>"$tmp/vg.log" &
    pid=$!
    pids+=($pid)
    for _ in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break
        sleep 0.1
    done
    /usr/bin/python3 "$tmp/client.py" "$2" "$p" "$3"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    awk '/^summary:/ { print $2 }' "$out"
}
for proto in resp http1; do
    a1=$(run "$a_bin" "$proto" "$n"); a2=$(run "$a_bin" "$proto" $((2 * n)))
    b1=$(run "$b_bin" "$proto" "$n"); b2=$(run "$b_bin" "$proto" $((2 * n)))
    awk -v p="$proto" -v n="$n" -v a1="$a1" -v a2="$a2" -v b1="$b1" -v b2="$b2" 'BEGIN {
        a = (a2 - a1) / n; b = (b2 - b1) / n
        printf "instructions_per_request.%s A %.0f B %.0f B/A %.3f\n", p, a, b, b / a }'
done
