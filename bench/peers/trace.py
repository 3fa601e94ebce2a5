#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""trace.py - one bursty trace through a fleet of rate limiters, counting
what the fleet admitted of each key (bench/bench_peers.sh's fleet part).

usage: trace.py rls|gubernator[:BEHAVIOR] HOST:PORT[,HOST:PORT...] NAME
       --keys K --limit L --seconds T --every P --burst B

Every P seconds, for each of K keys, B requests are sent at once, dealt
round robin over the nodes (so each node sees a third of every burst of a
three-node fleet), T seconds long. The limit is L requests per second with
a capacity of L: a token bucket of L tokens refilled at L/s for sluiced,
gubernator's TOKEN_BUCKET of limit L per 1,000 ms. Over a span of T
seconds one exact limiter admits at most L + L*T of a key (both
semantics), so the overshoot of a key is what the fleet admitted of it
beyond that; the line `NAME_overshoot_max` is the largest over the keys.
Requests are built and answers read by hand (a few protobuf fields), as
bench_peers.sh's sanity check does; an error or an unreadable answer fails
the run. Output: `name value unit` lines.
"""
import sys
import time

import grpc

RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
GUBER = "/pb.gubernator.V1/GetRateLimits"


def varint_enc(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ld(field, payload):
    return varint_enc(field << 3 | 2) + varint_enc(len(payload)) + payload


def vi(field, v):
    return varint_enc(field << 3) + varint_enc(v)


def varint(b, i):
    v = s = 0
    while True:
        v |= (b[i] & 0x7F) << s
        s += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i


def fields(b):
    i, out = 0, []
    while i < len(b):
        tag, i = varint(b, i)
        if tag & 7 == 0:
            v, i = varint(b, i)
        elif tag & 7 == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        else:
            raise ValueError("unexpected wire type %d" % (tag & 7))
        out.append((tag >> 3, v))
    return out


def rls_request(key):
    entry = ld(1, b"user") + ld(2, key.encode())
    return ld(1, b"bench") + ld(2, ld(1, entry))


def rls_admitted(resp):
    code = dict(fields(resp)).get(1, 0)
    if code not in (1, 2):
        raise ValueError("overall_code %d in %s" % (code, resp.hex()))
    return code == 1


def guber_request(key, limit, behavior):
    req = (ld(1, b"bench") + ld(2, key.encode()) + vi(3, 1) + vi(4, limit) + vi(5, 1000) +
           vi(6, 0) + vi(7, behavior))
    return ld(1, req)


def guber_admitted(resp):
    one = dict(fields(dict(fields(resp))[1]))
    if 5 in one:
        raise ValueError("error %r" % one[5])
    return one.get(1, 0) == 0  # UNDER_LIMIT


def main():
    api, targets, name = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    opt = dict(zip(sys.argv[4::2], sys.argv[5::2]))
    keys, limit = int(opt["--keys"]), int(opt["--limit"])
    secs, every, burst = float(opt["--seconds"]), float(opt["--every"]), int(opt["--burst"])
    if api.startswith("gubernator"):
        behavior = int(api.split(":")[1]) if ":" in api else 0
        method, admitted = GUBER, guber_admitted
        reqs = [guber_request("t%d" % k, limit, behavior) for k in range(keys)]
    else:
        method, admitted = RLS, rls_admitted
        reqs = [rls_request("t%d" % k) for k in range(keys)]
    calls = [grpc.insecure_channel(t).unary_unary(method) for t in targets]
    got = [0] * keys
    offered = 0
    late = 0.0
    turn = 0
    start = time.monotonic()
    due = start
    first = last = None
    while due < start + secs:
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
            now = time.monotonic()
        else:
            late = max(late, now - due)
        futs = []
        for _ in range(burst):
            for k in range(keys):
                futs.append((k, calls[turn % len(calls)].future(reqs[k], timeout=10)))
                turn += 1
        for k, f in futs:
            if admitted(f.result()):
                got[k] += 1
        offered += len(futs)
        first = now if first is None else first
        last = time.monotonic()  # the span ends when the last burst is answered
        due += every
    span = last - first
    allowed = limit + limit * span
    over = [max(0.0, g - allowed) for g in got]
    print("%s_offered %d requests" % (name, offered))
    print("%s_admitted %d requests" % (name, sum(got)))
    print("%s_span %.3f s" % (name, span))
    print("%s_exact_max_per_key %.1f requests" % (name, allowed))
    print("%s_admitted_max_per_key %d requests" % (name, max(got)))
    print("%s_overshoot_max %.1f requests" % (name, max(over)))
    print("%s_overshoot_mean %.1f requests" % (name, sum(over) / keys))
    print("%s_schedule_late_max %.3f s" % (name, late))


if __name__ == "__main__":
    main()
