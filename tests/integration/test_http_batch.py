# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""Pipelined HTTP/1.1 requests are decided as one batch per read; every
answer (status, headers, body) must be byte for byte the one the same
request gets alone. Two sluiced with the same rules and test clock: one
gets random pipelines in single writes, the other each request alone on a
keep-alive connection. The pipelines mix /v1/check and Envoy's /json over
every algorithm, a rule of three limits, several descriptors, costs of 0,
requests that are not batched (/v1/acquire, /healthz) and errors in the
middle (bad JSON, an unknown path); the test clock moves between
pipelines."""
import json
import random
import re
import socket

from conftest_http import http_sluiced  # noqa: F401 (fixture)
from test_resp_batch import KEYS, RULES


def request(method, path, body=None, headers=()):
    head = [f"{method} {path} HTTP/1.1", "Host: t"]
    head += [f"{k}: {v}" for k, v in headers]
    data = b"" if body is None else body.encode()
    if body is not None:
        head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def split_answers(data):
    """Whole answers in data (each with Content-Length), and the rest."""
    out, i = [], 0
    while True:
        end = data.find(b"\r\n\r\n", i)
        if end < 0:
            return out, data[i:]
        head = data[i:end].lower()
        at = head.find(b"content-length:")
        length = int(head[at + 15:].split(b"\r\n")[0]) if at >= 0 else 0
        if len(data) < end + 4 + length:
            return out, data[i:]
        out.append(data[i:end + 4 + length])
        i = end + 4 + length


def read_answers(sock, n):
    buf, got = b"", []
    sock.settimeout(10)
    while len(got) < n:
        chunk = sock.recv(65536)
        assert chunk, "sluiced closed the connection"
        buf += chunk
        more, buf = split_answers(buf)
        got += more
    assert buf == b"" and len(got) == n
    return got


def random_request(rnd):
    x = rnd.random()
    user = "u%d" % rnd.randrange(4)
    if x < 0.45:
        descs = [{rnd.choice(KEYS): user} for _ in range(rnd.choice([1, 1, 1, 2]))]
        body = {"domain": "d", "descriptors": descs}
        if rnd.random() < 0.3:
            body["hits"] = rnd.choice([0, 2])
        return request("POST", "/v1/check", json.dumps(body))
    if x < 0.75:
        body = {"domain": "d", "descriptors": [{"entries": [{"key": rnd.choice(KEYS),
                                                              "value": user}]}]}
        return request("POST", "/json", json.dumps(body))
    if x < 0.82:
        return request("POST", "/v1/acquire",
                       json.dumps({"domain": "d", "descriptors": [{"cc": user}]}))
    if x < 0.86:
        return request("GET", "/healthz")
    return rnd.choice([
        request("POST", "/v1/check", '{"domain": "d", "descriptors": [{"tb": '),
        request("GET", "/no/such/thing"),
        request("POST", "/v1/check", '{"domain": "d", "descriptors": []}'),
    ])


LEASE = re.compile(rb'"lease":"[0-9a-f.]+"')


def normalise(answer):
    """Lease tokens are sealed with a per-process key: compare their shape."""
    return LEASE.sub(b'"lease":"<lease>"', answer)


def test_pipelines_equal_one_at_a_time(http_sluiced):
    a = http_sluiced(rules=RULES, workers=1, admin=True)
    b = http_sluiced(rules=RULES, workers=1, admin=True)
    rnd_a, rnd_b = random.Random(7), random.Random(7)
    sa, sb = a.raw(), b.raw()
    denied = 0
    for round_ in range(50):
        n = rnd_a.randrange(1, 40)
        assert n == rnd_b.randrange(1, 40)
        reqs_a = [random_request(rnd_a) for _ in range(n)]
        reqs_b = [random_request(rnd_b) for _ in range(n)]
        sa.sendall(b"".join(reqs_a))
        got = read_answers(sa, n)
        want = []
        for r in reqs_b:
            sb.sendall(r)
            want += read_answers(sb, 1)
        for r, g, w in zip(reqs_a, got, want):
            assert normalise(g) == normalise(w), r
        denied += sum(1 for g in got if g.startswith(b"HTTP/1.1 429"))
        if round_ % 3 == 2:
            assert a.advance(300) == b.advance(300)
    assert denied > 20
    sa.close()
    sb.close()
