# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy_redis.py - the proxy's limits kept in Redis: two sluiced
proxies sharing one redis-server keep one limit between them (a rate and
a concurrency limit), and a Redis frozen with SIGSTOP answers every
request by its domain's failure policy within a bounded time (denied by
`deny`, forwarded by `allow`), the proxy working with Redis again after
SIGCONT.

Real processes only, on free loopback ports, stopped by PID: a
redis-server, the upstream (proxy_upstream.py), and the proxies, whose
limiter runs on one frozen test clock (store.clock: caller), so the
counts are exact.
"""
import signal
import socket
import time
import urllib.request

import pytest

from conftest import START_MS, RedisServer, free_port
from conftest_proxy import proxy_sluiced, route, upstream  # noqa: F401 (fixtures)

TIMEOUT_MS = 300  # met by Redis under the sanitizers on a loaded machine

RULES = """\
domain: shared
descriptors:
  - key: remote_address
    limits:
      - {name: per_ip, algorithm: token_bucket, requests: 10, period: 1m}
  - key: tenant
    limits:
      - {name: in_flight, algorithm: concurrency, requests: 2, lease: 5m}
---
domain: closed
descriptors:
  - key: remote_address
    limits:
      - {name: closed_ip, algorithm: token_bucket, requests: 1000, period: 1m}
---
domain: open
descriptors:
  - key: remote_address
    limits:
      - {name: open_ip, algorithm: token_bucket, requests: 1000, period: 1m}
"""


def wait_until(pred, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


class Redis(RedisServer):
    def __init__(self):
        super().__init__(socket_timeout=5)


@pytest.fixture
def rds():
    r = Redis()
    yield r
    r.stop()


def proxies(proxy_sluiced, tmp_path, rds, u, n):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    one = lambda name, prefix, domain, actions: route(  # noqa: E731
        name, [f"127.0.0.1:{u.port}"], prefix=prefix,
        extra=f"domain: {domain}\nrate_limits:\n  - actions: {actions}")
    routes = (one("tenant", "/slow", "shared",
                  "[{request_headers: {header_name: X-Tenant, descriptor_key: tenant}}]")
              + one("closed", "/closed/", "closed", "[{remote_address: {}}]")
              + one("open", "/open/", "open", "[{remote_address: {}}]")
              + one("ip", "/", "shared", "[{remote_address: {}}]"))
    extra = f"""  access: combined
rules:
  files: [{rules}]
store:
  type: redis
  redis:
    port: {rds.port}
    timeout: {TIMEOUT_MS}ms
    failure_policy: local
    policies: {{closed: deny, open: allow}}
"""
    started = []
    for _ in range(n):
        mport = free_port()
        p = proxy_sluiced(routes, extra=extra, workers=2, args=["--test-clock", str(START_MS)],
                          listeners=f"  - {{address: 127.0.0.1, port: {mport}, "
                                    "protocols: [http1]}\n")
        # each worker has its own connection to Redis: until every one is
        # up with its engine known, that worker's checks are answered by
        # the failure policy, which would count outside the shared limit
        assert wait_until(lambda: store_up(mport)), "Redis never decided for every worker"
        started.append(p)
    return started


def store_up(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return "\nsluice_store_up 1\n" in r.read().decode()
    except OSError:
        return False


def status(p, path, headers=None):
    return p.request("GET", path, headers=headers)[0]


def test_two_proxies_share_one_limit(proxy_sluiced, upstream, tmp_path, rds):
    u = upstream()
    a, b = proxies(proxy_sluiced, tmp_path, rds, u, 2)
    got = [status(a if i % 2 else b, "/echo") for i in range(30)]
    assert got.count(200) == 10 and got[:10] == [200] * 10, got
    assert set(got[10:]) == {429}
    # the state is in Redis, under the domain's keys
    assert any(b"shared" in k for k in rds.client.keys("*"))


def slow(p, ms):
    s = socket.create_connection(("127.0.0.1", p.port), timeout=15)
    s.sendall(f"GET /slow?ms={ms} HTTP/1.1\r\nHost: x\r\nX-Tenant: t\r\n\r\n".encode())
    return s


def test_two_proxies_share_one_concurrency_limit(proxy_sluiced, upstream, tmp_path, rds):
    u = upstream()
    a, b = proxies(proxy_sluiced, tmp_path, rds, u, 2)
    s1, s2 = slow(a, 1500), slow(b, 1500)
    time.sleep(0.5)
    assert status(a, "/slow?ms=1", {"X-Tenant": "t"}) == 429
    assert status(b, "/slow?ms=1", {"X-Tenant": "t"}) == 429
    for s in (s1, s2):
        assert s.recv(12).startswith(b"HTTP/1.1 200")
        s.close()
    # given back through Redis: admitted again on either proxy
    assert wait_until(lambda: status(b, "/slow?ms=1", {"X-Tenant": "t"}) == 200, 5)
    assert status(a, "/slow?ms=1", {"X-Tenant": "t"}) == 200


def test_redis_paused_is_answered_by_policy(proxy_sluiced, upstream, tmp_path, rds):
    u = upstream()
    (p,) = proxies(proxy_sluiced, tmp_path, rds, u, 1)
    # until each worker's connection is up (and its engine known), the
    # failure policy answers: wait for Redis's own answers first
    assert wait_until(lambda: status(p, "/closed/echo") == 200, 10)
    assert status(p, "/open/echo") == 200
    rds.proc.send_signal(signal.SIGSTOP)
    try:
        # a Redis that never answers: without the store's timeout these
        # would hang until the client's own (5 s) and fail
        for _ in range(5):
            assert status(p, "/closed/echo") == 429  # failure policy deny
            assert status(p, "/open/echo") == 200  # failure policy allow: forwarded
    finally:
        rds.proc.send_signal(signal.SIGCONT)
    # Redis back: its state is used again once the breaker lets calls
    # through (until then the policy still answers)
    assert wait_until(lambda: status(p, "/closed/echo") == 200, 10)
    time.sleep(0.2)
    lines = [ln for ln in p.log_text().splitlines() if "route=\"closed\"" in ln]
    assert sum(" 429 " in ln and "decision=deny" in ln for ln in lines) >= 5
