# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_daemon_outage.py - what an operator sees when sluiced's Redis goes
away and comes back: readiness, the health view, metrics, the log, and
the policy each answer says it was made by.

Real processes only: one redis-server and sluiced processes (two workers
each) on free loopback ports, killed by PID at the end; Redis is frozen
with SIGSTOP under bounded load (three clients, bounded in time and
requests), then resumed. What it shows:
  - /readyz: 503 "starting" until the store has connected or failed once,
    then (no Redis at that address) 200 "degraded";
  - /readyz: "ready" while Redis decides; with the default http.readyz
    (decisions) 200 "degraded: ..." while a local or allow policy answers,
    503 "not ready: ..." when every policy is deny; with http.readyz:
    store 503 during the outage; /healthz stays a plain 200 "ok";
  - /healthz?verbose: the node's address, its state over the workers
    (up, then down with its breaker open - on the workers that had
    traffic), back to up;
  - /metrics: sluice_store_up 1 / 0 / 1, sluice_store_redis_node_up the
    same, the existing policy counters counting;
  - /v1/check's answer has a `policy` member only when a policy made it
    (allow reports the whole quota as remaining), SL.CHECK's reply one more
    element, last, the same;
  - the log, read from sluiced's stderr: one line each for Redis
    unreachable, the breaker opening, the fall-back to each policy, the
    breaker closing and Redis reachable again - not one per worker, retry
    or request.
"""
import json
import re
import signal
import socket
import threading
import time

import pytest
import redis

from sluiced_proc import RedisServer, SluicedProc, free_port, wait_until

TIMEOUT_MS = 100  # Redis decides every check while it is up, also under a sanitizer

RULES = """\
domain: shared
descriptors:
  - key: k
    limits: [{algorithm: fixed_window, requests: 1000, period: 1m}]
---
domain: open
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 1000}
---
domain: closed
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 1000}
"""


class Sluiced(SluicedProc):
    def __init__(self, tmp_path, name, redis_port, policy="local", readyz=None, timeout_ms=None,
                 wait_ready=True):
        store = f"""  type: redis
  redis:
    port: {redis_port}
    timeout: {timeout_ms or TIMEOUT_MS}ms
    failure_policy: {policy}
"""
        if policy == "local":
            store += "    policies: {open: allow, closed: deny}\n"
        super().__init__(tmp_path, name, store, RULES, workers=2, log_level="info",
                         extra_yaml=f"http: {{readyz: {readyz}}}\n" if readyz else "",
                         wait_ready=wait_ready)

    def lines(self, pattern):
        return [ln for ln in self.log_text().splitlines() if re.search(pattern, ln)]

    def health(self):
        status, body = self.get("/healthz?verbose")
        assert status == 200
        return json.loads(body)


@pytest.fixture
def rds():
    r = RedisServer()
    yield r
    r.stop()


@pytest.fixture
def nodes(tmp_path, rds):
    started = []

    def start(name, **kw):
        s = Sluiced(tmp_path, name, rds.port, **kw)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


def test_starting_until_connected_or_failed(tmp_path):
    """A Redis that accepts connections and never answers (a listening
    socket nobody reads): the engine probe waits its timeout (20 x 50 ms);
    meanwhile the node is starting (503), then degraded (200)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    s = Sluiced(tmp_path, "silent", silent.getsockname()[1], timeout_ms=50, wait_ready=False)
    try:
        status, body = s.readyz()
        assert status == 503 and body.startswith("not ready: starting: redis "), body
        assert s.metric("sluice_store_up") == 0
        assert wait_until(lambda: s.readyz()[1].startswith("degraded: "), 10), s.readyz()
        assert s.readyz()[0] == 200
        assert s.health()["store"]["state"] == "degraded"
        assert s.client.execute_command("SL.CHECK", "shared", 1, "k", "a")[-1] == b"local"
        assert len(s.lines("unreachable: no answer within 1000 ms")) == 1
    finally:
        s.stop()
        silent.close()
    assert s.proc.returncode == 0


def test_refused_connection_is_noticed_at_once(tmp_path):
    """No Redis listens: the refused connection is an error at once (not a
    hang until a timeout), said once, and the policy answers."""
    s = Sluiced(tmp_path, "absent", free_port(), timeout_ms=50, wait_ready=False)
    try:
        assert wait_until(lambda: s.readyz()[1].startswith("degraded: "), 10), s.readyz()
        assert s.client.execute_command("SL.CHECK", "shared", 1, "k", "a")[-1] == b"local"
        assert len(s.lines("unreachable: Connection refused")) == 1, s.log_text()
    finally:
        s.stop()
    assert s.proc.returncode == 0


def load(nodes, seconds, max_requests=3000):
    """Checks from three clients per node, bounded in time and requests."""
    stop, errors = threading.Event(), []

    def one(node, domain):
        c = redis.Redis(port=node.port, socket_timeout=5)
        for i in range(max_requests):
            if stop.is_set():
                return
            try:
                c.execute_command("SL.CHECK", domain, 1, "k", f"v{i % 20}")
            except redis.RedisError as e:
                errors.append(repr(e))
                return
            time.sleep(0.002)

    threads = [threading.Thread(target=one, args=(n, d)) for n in nodes
               for d in ("open", "closed", "shared")]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return errors


def test_readiness_health_metrics_and_log_through_an_outage(rds, nodes):
    addr = f"127.0.0.1:{rds.port}"
    dec = nodes("dec")                       # http.readyz: decisions (the default)
    strict = nodes("strict", readyz="store")  # the store must decide itself
    closed = nodes("closed", policy="deny")   # every check would be denied
    for s in (dec, strict, closed):
        assert s.readyz() == (200, "ready\n")
        assert s.get("/healthz") == (200, "ok\n")
        assert s.metric("sluice_store_up") == 1
        assert s.metric(f'sluice_store_redis_node_up{{node="{addr}"}}') == 1
    h = dec.health()
    assert h["status"] == "ok" and h["rules_loaded"] is True
    assert h["store"]["type"] == "redis" and h["store"]["state"] == "up"
    assert h["store"]["nodes"] == [{
        "address": addr, "role": "master", "state": "up", "workers_up": 2, "workers": 2,
        "connections_ready": 4, "connections": 4, "breakers_open": 0}]
    status, body = dec.post("/v1/check", {"domain": "open", "descriptors": [{"k": "a"}]})
    assert status == 200 and "policy" not in body  # Redis decided
    assert len(dec.client.execute_command("SL.CHECK", "open", 1, "k", "a")) == 3  # no policy

    rds.proc.send_signal(signal.SIGSTOP)
    try:
        assert load([dec, strict, closed], 1.5) == []  # timeouts open the breakers
        status, body = dec.readyz()
        assert status == 200 and body.startswith("degraded: "), body
        assert addr in body
        status, body = strict.readyz()
        assert status == 503 and body.startswith("not ready: "), body
        status, body = closed.readyz()  # deny only: checks are not decided
        assert status == 503 and body.startswith("not ready: "), body
        assert dec.get("/healthz")[0] == 200  # alive all along
        store = dec.health()["store"]
        assert store["state"] == "degraded" and addr in store["why"]
        # down for every worker that had traffic (SO_REUSEPORT may give one
        # worker no client: its idle connections to a frozen Redis look fine)
        assert store["nodes"][0]["state"] in ("down", "partial")
        assert store["nodes"][0]["workers_up"] < store["nodes"][0]["workers"]
        assert closed.health()["store"]["state"] == "down"
        for s in (dec, strict, closed):
            assert s.metric("sluice_store_up") == 0
            assert s.metric(f'sluice_store_redis_node_up{{node="{addr}"}}') == 0
        assert dec.metric("sluice_store_redis_policy_allow_total") > 0
        assert dec.metric("sluice_store_redis_policy_deny_total") > 0
        assert dec.metric("sluice_store_redis_policy_local_total") > 0
        # Each answer says which policy made it.
        status, body = dec.post("/v1/check", {"domain": "open", "descriptors": [{"k": "b"}]})
        assert status == 200 and body["policy"] == "allow"
        assert body["statuses"][0]["remaining"] == body["statuses"][0]["quota"] == 1000
        status, body = dec.post("/v1/check", {"domain": "closed", "descriptors": [{"k": "b"}]})
        assert status == 429 and body["policy"] == "deny"
        assert body["statuses"][0]["remaining"] == 0
        status, body = dec.post("/v1/check", {"domain": "shared", "descriptors": [{"k": "b"}]})
        assert status == 200 and body["policy"] == "local"
        reply = dec.client.execute_command("SL.CHECK", "shared", 1, "k", "b")
        assert len(reply) == 4 and reply[-1] == b"local"
        reply = dec.client.execute_command("SL.ACQUIRE", "open", "k", "b")
        assert len(reply) == 5 and reply[-1] == b"allow"
    finally:
        rds.proc.send_signal(signal.SIGCONT)

    for s in (dec, strict, closed):
        assert wait_until(s.ready, 10), s.readyz()
        assert s.metric("sluice_store_up") == 1
    assert load([dec], 0.3) == []
    assert dec.health()["store"]["nodes"][0]["state"] == "up"
    status, body = dec.post("/v1/check", {"domain": "open", "descriptors": [{"k": "c"}]})
    assert status == 200 and "policy" not in body

    for s in (dec, strict, closed):
        s.stop()
        assert s.proc.returncode == 0
    # The log: each event once per process, though two workers saw it.
    for s in (dec, strict):
        assert len(s.lines(rf"redis {re.escape(addr)} unreachable")) == 1, s.log_text()
        assert len(s.lines(r"circuit breaker open for redis")) == 1, s.log_text()
        assert len(s.lines(r"circuit breaker closed after")) == 1, s.log_text()
        assert len(s.lines(rf"redis {re.escape(addr)} reachable again")) == 1
        for policy in ("allow", "deny", "local"):
            assert len(s.lines(f"falling back to the failure policy '{policy}'")) == 1
    assert len(closed.lines("falling back to the failure policy 'deny'")) == 1
    assert not closed.lines("failure policy '(allow|local)'")
