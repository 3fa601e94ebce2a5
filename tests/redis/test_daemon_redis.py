# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_daemon_redis.py - sluiced with `store.type: redis` , end to end.

Real processes only: a redis-server and one or two sluiced started here on
free loopback ports (killed by PID at the end), driven with redis-py over
RESP. What it shows:
  - two sluiced sharing one Redis admit, together, exactly the limit of
    every algorithm, never more;
  - Redis frozen with SIGSTOP under load: every check is answered by its
    domain's policy within a generous bound (20 x the timeout), /readyz
    no longer says "ready" (it says "degraded": the local policy answers),
    and after SIGCONT the daemon is ready and uses Redis again;
  - Redis killed and restarted: sluiced keeps answering, reconnects;
  - a key denied until T costs no Redis command until T (over-limit cache),
    and a check costs exactly one script call (INFO commandstats).

tests/redis/CMakeLists.txt registers it only when sluiced's configuration
knows the Redis store (server/core/config.c calls sl__redis_config_set). It does
not compare decisions field by field with the memory store (the C tests
do) and does not test the HTTP or gRPC protocols.
"""
import signal
import subprocess
import threading
import time

import pytest
import redis

from sluiced_proc import SluicedProc, free_port, wait_until

TIMEOUT_MS = 20

RULES = """\
domain: shared
descriptors:
  - key: tb
    limits: [{algorithm: token_bucket, requests: 40, period: 1m}]
  - key: warm
    limits: [{algorithm: token_bucket, requests: 2, period: 1s, warmup: 4s}]
  - key: gcra
    limits: [{algorithm: gcra, requests: 30, period: 1m, burst: 15}]
  - key: leaky
    limits: [{algorithm: leaky_bucket, requests: 10, period: 1s, burst: 20, delay: 5}]
  - key: fw
    limits: [{algorithm: fixed_window, requests: 50, period: 1m}]
  - key: sw
    limits: [{algorithm: sliding_window, requests: 50, period: 1m}]
  - key: log
    limits: [{algorithm: sliding_log, requests: 25, period: 1m}]
  - key: conc
    limits: [{algorithm: concurrency, requests: 12, lease: 1m}]
---
domain: open
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 1000000}
---
domain: closed
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 1000000}
"""

# key -> how many of many requests at one instant are admitted
ADMITTED = {"tb": 40, "warm": 1, "gcra": 16, "leaky": 21, "fw": 50, "sw": 50,
            "log": 25, "conc": 12}


class Redis:
    def __init__(self, port=None):
        self.port = port or free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--logfile", "/dev/null"])
        self.client = redis.Redis(port=self.port)
        assert wait_until(self._up), "redis-server did not start"

    def _up(self):
        try:
            return self.client.ping()
        except redis.ConnectionError:
            return False

    def evalsha_calls(self):
        return self.client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


class Sluiced(SluicedProc):
    def __init__(self, tmp_path, name, redis_port, workers=1):
        store = f"""  type: redis
  redis:
    port: {redis_port}
    timeout: {TIMEOUT_MS}ms
    failure_policy: local
    policies: {{open: allow, closed: deny}}
"""
        super().__init__(tmp_path, name, store, RULES, workers)


@pytest.fixture
def rds():
    r = Redis()
    yield r
    r.stop()


@pytest.fixture
def nodes(tmp_path, rds):
    started = []

    def start(name, workers=1):
        s = Sluiced(tmp_path, name, rds.port, workers)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


def test_two_sluiced_never_exceed_any_limit(rds, nodes):
    a, b = nodes("a", workers=2), nodes("b", workers=2)
    for key, expected in ADMITTED.items():
        verdicts = [(a if i % 2 else b).check("shared", key, "v") for i in range(90)]
        admitted = sum(v != "deny" for v in verdicts)
        assert admitted == expected, (key, verdicts)


def test_one_script_call_per_check_and_none_for_cached_denials(rds, nodes):
    a = nodes("a")
    rds.client.config_resetstat()
    assert [a.check("shared", "fw", "x") for _ in range(50)] == ["allow"] * 50
    assert rds.evalsha_calls() == 50
    assert a.check("shared", "fw", "x") == "deny"  # learnt by the cache
    calls = rds.evalsha_calls()
    hits = a.metric("sluice_store_redis_olc_hits_total")
    sent = a.metric("sluice_store_redis_script_calls_total")
    assert [a.check("shared", "fw", "x") for _ in range(100)] == ["deny"] * 100
    assert rds.evalsha_calls() == calls  # 0 commands for 100 denials
    # ... and the daemon's own metrics say so: 100 cache hits, no script call.
    assert a.metric("sluice_store_redis_olc_hits_total") == hits + 100
    assert a.metric("sluice_store_redis_script_calls_total") == sent
    assert a.metric("sluice_store_redis_workers_ready") == 1


def test_sigstop_answers_by_policy_within_bound_then_recovers(rds, nodes):
    s = nodes("a", workers=2)
    bound = 20 * TIMEOUT_MS / 1000
    answers, stop = [], threading.Event()

    def load(domain):
        c = redis.Redis(port=s.port, socket_timeout=5)
        i = 0
        while not stop.is_set():
            t0 = time.monotonic()
            v = c.execute_command("SL.CHECK", domain, 1, "k", f"v{i % 50}")[0].decode()
            answers.append((domain, v, time.monotonic() - t0, t0))
            i += 1

    threads = [threading.Thread(target=load, args=(d,)) for d in ("open", "closed", "shared")]
    for t in threads:
        t.start()
    time.sleep(0.3)
    rds.proc.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    time.sleep(1.5)
    assert not s.ready()  # /readyz says the store is down
    # started once Redis was frozen (replies computed before it still come)
    frozen = [a for a in list(answers) if a[3] > stopped + 0.1]
    rds.proc.send_signal(signal.SIGCONT)
    assert wait_until(s.ready, 10)
    stop.set()
    for t in threads:
        t.join()
    assert len(frozen) > 30
    assert max(a[2] for a in answers) <= bound
    assert all(v == "allow" for dom, v, _, _ in frozen if dom == "open")
    assert all(v == "deny" for dom, v, _, _ in frozen if dom == "closed")
    assert any(dom == "shared" for dom, _, _, _ in frozen)  # local: answered too
    calls = rds.evalsha_calls()
    assert s.check("shared", "tb", "after") == "allow"
    assert rds.evalsha_calls() == calls + 1  # Redis decides again (every worker)


def test_kill_and_restart(rds, nodes, tmp_path):
    s = nodes("a")
    assert s.check("closed", "k", "x") == "allow"
    port = rds.port
    rds.proc.kill()
    rds.proc.wait()
    assert s.check("closed", "k", "x") == "deny"  # the domain's policy
    assert s.check("open", "k", "x") == "allow"
    assert not s.ready()
    restarted = Redis(port)
    try:
        assert wait_until(s.ready, 10)
        assert s.check("closed", "k", "x") == "allow"
        assert restarted.evalsha_calls() >= 1
        assert s.proc.poll() is None  # never crashed
    finally:
        restarted.stop()
