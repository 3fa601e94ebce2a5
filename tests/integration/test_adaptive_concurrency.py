# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""`algorithm: adaptive_concurrency` through sluiced (memory store): leases
taken with SL.ACQUIRE and POST /v1/acquire up to the controller's limit,
released with the observed latency (`SL.RELEASE token latency_us`,
`{"lease": ..., "latency_us": N}`); a bad latency is refused and releases
nothing, the connection lives; the limit the answers report (quota) moves
up after many fast releases and down after slow ones (direction only: the
controller is aimd, whose steps docs/algorithms.md gives)."""
import pytest
import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULES = """\
domain: jobs
descriptors:
  - key: svc
    limits:
      - {algorithm: adaptive_concurrency, controller: aimd, initial_limit: 10, min_limit: 2,
         max_limit: 40, backoff_ratio: 0.5, timeout: 100ms, lease: 30s}
"""


def acquire(c, value="a"):
    """(verdict, quota, lease) of one SL.ACQUIRE."""
    reply = c.execute_command("SL.ACQUIRE", "jobs", "svc", value)
    return reply[0].decode(), reply[2][0][2], reply[3].decode()


def rounds(c, n, latency_us):
    """Take n slots, then release each with latency_us; the quota after."""
    leases = []
    for _ in range(n):
        verdict, _, lease = acquire(c)
        assert verdict == "allow" and lease
        leases.append(lease)
    for lease in leases:
        assert c.execute_command("SL.RELEASE", lease, latency_us) == 1
    return c.execute_command("SL.PEEK", "jobs", "svc", "a")[2][0][2]


def test_resp_admits_up_to_the_limit_and_release_takes_a_latency(sluiced):
    s = sluiced(rules=RULES)
    c = s.client(single_connection_client=True)
    leases = []
    for i in range(10):
        verdict, quota, lease = acquire(c)
        assert (verdict, quota) == ("allow", 10) and lease
        leases.append(lease)
    verdict, _, lease = acquire(c)
    assert (verdict, lease) == ("deny", "")
    assert c.execute_command("SL.RELEASE", leases[0], 1500) == 1
    assert c.execute_command("SL.RELEASE", leases[0], 1500) == 0  # already free
    assert c.execute_command("SL.RELEASE", leases[1]) == 1  # no latency: no sample
    for bad in ("-1", "1.5", "x", "10000000001"):
        with pytest.raises(redis.ResponseError, match="latency_us must be a whole number"):
            c.execute_command("SL.RELEASE", leases[2], bad)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        c.execute_command("SL.RELEASE", leases[2], 1, 2)
    assert c.ping() is True
    # the refused releases released nothing: leases[2] is still held
    assert c.execute_command("SL.RELEASE", leases[2], 0) == 1
    assert c.execute_command("SL.RELEASE", leases[2], 10_000_000_000) == 0


def test_resp_limit_moves_with_latency(sluiced):
    s = sluiced(rules=RULES)
    c = s.client()
    start = c.execute_command("SL.PEEK", "jobs", "svc", "a")[2][0][2]
    fast = start
    for _ in range(4):
        fast = rounds(c, fast, 1500)  # far below the 100 ms timeout
    assert fast > start
    slow = rounds(c, 1, 500_000)  # above the timeout: backs off
    assert slow < fast


def test_http_release_takes_latency_us(http_sluiced):
    s = http_sluiced(rules=RULES)
    req = {"domain": "jobs", "descriptors": [{"svc": "h"}]}
    leases = []
    for _ in range(10):
        status, _, body = s.json("POST", "/v1/acquire", req)
        assert status == 200 and body["lease"]
        assert body["statuses"][0]["quota"] == 10
        leases.append(body["lease"])
    status, _, body = s.json("POST", "/v1/acquire", req)
    assert status == 429
    assert "adaptive limit 'jobs.svc' exceeded: 10 in flight" in body["message"]
    for bad in (-1, 1.5, "1500", 1e11, None):
        status, _, body = s.json("POST", "/v1/release", {"lease": leases[0], "latency_us": bad})
        assert status == 400 and "latency_us" in body["error"]
    status, _, body = s.json("POST", "/v1/release", {"lease": leases[0], "latency_us": 1500})
    assert (status, body) == (200, {"released": True})
    assert s.json("POST", "/v1/release", {"lease": leases[0], "latency_us": 1500})[0] == 404
    assert s.json("POST", "/v1/release", {"lease": leases[1]})[0] == 200
    # fast releases with the limit in flight: the limit grows
    for lease in leases[2:]:
        assert s.json("POST", "/v1/release", {"lease": lease, "latency_us": 1000})[0] == 200
    status, _, body = s.json("POST", "/v1/acquire", req)
    assert status == 200 and body["statuses"][0]["quota"] > 10
