# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_auth_delay.py - GET /v1/auth holds a DELAY decision's answer
for the delay (up to http.max_delay) without blocking its worker; a delay
above the maximum is answered 403 with Retry-After.

Rules: leaky_bucket 10 per 1s, burst 5, delay 1 (nginx limit_req rate=10r/s
burst=5 delay=1): at one frozen instant (test clock) the first two requests
pass, the third is delayed 100 ms, the fourth 200 ms. Delays in these tests
stay at or under 200 ms; nothing asserts a duration.
"""
import json

from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULES = """\
domain: shape
descriptors:
  - key: ip
    limits:
      - name: shaped
        algorithm: leaky_bucket
        requests: 10
        period: 1s
        burst: 5
        delay: 1
"""
AUTH = "/v1/auth?domain=shape&ip=10.0.0.1"


def read_answer(f):
    """One raw HTTP answer from a socket file: (status line, head, body)."""
    status = f.readline()
    head = b""
    while not head.endswith(b"\r\n\r\n") and head != b"\r\n":
        head += f.readline()
    n = int([ln for ln in head.split(b"\r\n") if ln.startswith(b"Content-Length")][0]
            .split(b":")[1])
    return status, head, f.read(n)


def test_delay_is_held_then_over_max_is_a_denial(http_sluiced):
    s = http_sluiced(rules=RULES, extra="http:\n  max_delay: 150ms\n")
    for _ in range(2):
        assert s.request("GET", AUTH)[0] == 200  # the undelayed part
    held = s.conn()
    held.request("GET", AUTH)  # delayed 100 ms: held, then 200
    # meanwhile other connections are answered: nothing waits on the timer
    for _ in range(3):
        assert s.request("GET", "/healthz")[0] == 200
    r = held.getresponse()
    assert r.status == 200
    assert r.getheader("RateLimit-Policy") == '"shaped";q=10;w=1'  # the rate, not burst + 1
    doc = json.loads(r.read())
    assert doc["decision"] == "delay" and doc["delay_ms"] == 100, doc
    held.close()
    # the fourth is delayed 200 ms > max_delay 150 ms: a denial with Retry-After
    status, headers, body = s.request("GET", AUTH)
    assert status == 403, body
    assert headers["retry-after"] == "1"
    doc = json.loads(body)
    assert doc["decision"] == "deny" and doc["statuses"][0]["retry_after_ms"] == 200, doc
    assert "message" in doc


def test_pipelined_answers_wait_behind_a_held_one(http_sluiced):
    s = http_sluiced(rules=RULES)
    for _ in range(2):
        assert s.request("GET", AUTH)[0] == 200
    with s.raw() as sock:
        sock.sendall(f"GET {AUTH} HTTP/1.1\r\nHost: x\r\n\r\n"
                     "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        f = sock.makefile("rb")
        status, head, body = read_answer(f)
        assert status.startswith(b"HTTP/1.1 200") and b"RateLimit:" in head
        assert json.loads(body)["delay_ms"] == 100
        status, head, body = read_answer(f)  # /healthz, in request order
        assert status.startswith(b"HTTP/1.1 200") and body == b"ok\n"


def test_max_delay_in_config(http_sluiced):
    s = http_sluiced(extra="http:\n  max_delay: 250ms\n")
    assert s.json("GET", "/v1/config")[2]["http"]["max_delay_ms"] == 250
