# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""soak_abuse.py PORT SECONDS - the bad clients of the soak run, bounded in
number and time, against sluiced on 127.0.0.1:PORT:

- idle: 200 connections opened and left silent (the header and idle
  timeouts close them; they reconnect);
- slow: 20 connections sending a request a few bytes a second (slowloris;
  the read timeout closes them; they reconnect);
- abusive: every 50 ms one of garbage, an oversized frame, a request whose
  replies are never read, a truncated RESP command, a malformed HTTP head.

Prints how many connections of each kind it made. It asserts nothing: the
soak script reads sluiced's RSS and the well-behaved clients' latency.
"""
import os
import random
import socket
import sys
import time

PORT, SECONDS = int(sys.argv[1]), float(sys.argv[2])
ADDR = ("127.0.0.1", PORT)
end = time.monotonic() + SECONDS
made = {"idle": 0, "slow": 0, "abusive": 0}


def connect():
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(ADDR)
    except BlockingIOError:
        pass
    return s


def alive(s):
    try:
        return s.recv(65536, socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


idle = [connect() for _ in range(200)]
made["idle"] += 200
slow = [[connect(), b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n"]
        for _ in range(20)]
made["slow"] += 20
ABUSE = [
    lambda s: s.sendall(os.urandom(4096)),
    lambda s: s.sendall(b"*1\r\n$2000000\r\n" + b"x" * 200000),
    lambda s: s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 200),  # never read
    lambda s: s.sendall(b"*3\r\n$8\r\nSL.CHECK\r\n$3\r\nap"),
    lambda s: s.sendall(b"GET / HTTP/1.1\r\nHost : x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
]
abusers = []
while time.monotonic() < end:
    for i, s in enumerate(idle):
        if not alive(s):
            s.close()
            idle[i] = connect()
            made["idle"] += 1
    for pair in slow:
        s, rest = pair
        if not alive(s):
            s.close()
            pair[0], pair[1] = connect(), b"POST /v1/check HTTP/1.1\r\nHost: x\r\n" \
                                          b"Content-Length: 900000\r\n\r\n"
            made["slow"] += 1
            continue
        try:
            n = s.send(rest[:3] if rest else b"{  ")
            pair[1] = rest[n:]
        except (BlockingIOError, OSError):
            pass
    s = socket.create_connection(ADDR, timeout=2)
    try:
        random.choice(ABUSE)(s)
    except OSError:
        pass
    abusers.append(s)
    made["abusive"] += 1
    if len(abusers) > 100:  # keep the non-readers open a while, then let them go
        abusers.pop(0).close()
    time.sleep(0.05)
for s in idle + [p[0] for p in slow] + abusers:
    s.close()
print(" ".join(f"soak_{k}_connections {v} count" for k, v in made.items()))
