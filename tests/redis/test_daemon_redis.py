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
  - a refused AUTH is one log line with its event (store.auth_refused);
  - `sluice rules add|rm --server` on one node of a fleet with rules sync
    reaches the other node, which serves the change (polled);
  - a key denied until T costs no Redis command until T (over-limit cache),
    and a check costs exactly one call (INFO commandstats: EVALSHA, FCALL
    or the module's SLUICE.CHECK, whichever the daemon detected);
  - with $SL_REDIS_MODULE set (the module's run of this file), all of the
    above with the daemon using the module (test_daemon_module.py has the
    fleet that mixes the module and the scripts).
  - GET /v1/stats with the Redis store: outcomes, the limited key of
    answers that came after their start call, the round trip, the store's
    state per worker.

tests/redis/CMakeLists.txt registers it only when sluiced's configuration
knows the Redis store (server/core/config.c calls sl__redis_config_set). It does
not compare decisions field by field with the memory store (the C tests
do) and does not test the HTTP or gRPC protocols.
"""
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request

import pytest
import redis

from sluiced_proc import SLUICED, RedisServer, SluicedProc, free_port, wait_until

TIMEOUT_MS = 20
MODULE = os.environ.get("SL_REDIS_MODULE")
DECISIONS = ("evalsha", "fcall", "SLUICE.CHECK", "SLUICE.PEEK", "SLUICE.RESET", "SLUICE.REFUND",
             "SLUICE.RELEASE")

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
  - key: swb
    limits: [{algorithm: sliding_window, requests: 30, period: 1m, buckets: 60}]
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
            "swb": 30, "log": 25, "conc": 12}


class Redis(RedisServer):
    """The Redis of these tests: with $SL_REDIS_MODULE loaded when set."""

    def __init__(self, port=None, password=None):
        module = ["--loadmodule", MODULE] if MODULE else []
        env = dict(os.environ)
        if MODULE and os.environ.get("SL_REDIS_PRELOAD"):
            # the sanitizer build's module needs the sanitizer's runtime first
            env["LD_PRELOAD"] = os.environ["SL_REDIS_PRELOAD"]
        super().__init__(port=port, args=module, env=env, password=password)

    def calls(self, cmd):
        return self.client.info("commandstats").get(f"cmdstat_{cmd}", {}).get("calls", 0)

    def evalsha_calls(self):
        """Calls of every decision command, whichever the engine."""
        return sum(self.calls(cmd) for cmd in DECISIONS)


class Sluiced(SluicedProc):
    def __init__(self, tmp_path, name, redis_port, workers=1, engine="auto"):
        store = f"""  type: redis
  redis:
    port: {redis_port}
    engine: {engine}
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

    def start(name, workers=1, engine="auto"):
        s = Sluiced(tmp_path, name, rds.port, workers, engine)
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
    assert rds.calls("SLUICE.CHECK" if MODULE else "fcall") == 50  # the engine detected
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


def test_a_refused_auth_is_a_logged_event(tmp_path):
    locked = Redis(password="the-right-password")
    (tmp_path / "rules.yaml").write_text(RULES)
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text(f"""listeners:
  - {{address: 127.0.0.1, port: {free_port()}, protocols: [resp]}}
workers: 2
rules:
  files: [rules.yaml]
store:
  type: redis
  redis:
    port: {locked.port}
    password: not-the-password
    timeout: {TIMEOUT_MS}ms
    failure_policy: local
log: {{level: warn, format: json}}
""")
    log = tmp_path / "sluiced.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([SLUICED, "-c", str(cfg)], stderr=err)
    try:
        def lines():
            return [json.loads(ln) for ln in log.read_text().splitlines()]

        def said():
            return any(o["event"] == "store.auth_refused" for o in lines())
        assert wait_until(said, 10), log.read_text()
        time.sleep(0.5)  # reconnections meanwhile: still one line
        refused = [o for o in lines() if o["event"] == "store.auth_refused"]
        assert len(refused) == 1, refused  # once, not at every reconnection
        assert refused[0]["level"] == "error" and "store.redis.user/password" in refused[0]["msg"]
        assert proc.poll() is None  # it keeps serving by its failure policy
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        locked.stop()


FLEET_RULE = """\
domain: fleet
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 2}
"""


def test_sluice_rules_server_reaches_the_fleet(rds, tmp_path):
    nodes = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        store = f"""  type: redis
  redis:
    port: {rds.port}
    rules_sync: true
    timeout: 200ms
    failure_policy: local
"""
        nodes.append(SluicedProc(d, name, store, RULES, rules_extra=f"\n  database: {d}/r.db"))
    a, b = nodes
    try:
        token = a.tmp / "a.token"  # the one A created at its first start
        rule = tmp_path / "fleet.yaml"
        rule.write_text(FLEET_RULE)
        cli = [os.environ["SLUICE_CLI"], "rules"]
        server = ["--server", f"http://127.0.0.1:{a.http}", "--token-file", str(token)]
        r = subprocess.run(cli + ["add"] + server + ["--id", "fleet-users", str(rule)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "published to the other nodes" in r.stdout, r.stdout

        def b_enforces():  # two an hour: a fresh user's third check is denied
            user = f"u{time.monotonic_ns()}"
            return [b.check("fleet", "user", user) for _ in range(3)] == ["allow", "allow", "deny"]
        assert wait_until(b_enforces, 30, 0.2), "node B never served the rule added on A"

        r = subprocess.run(cli + ["rm"] + server + ["fleet-users"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr

        def b_dropped():
            user = f"u{time.monotonic_ns()}"
            return [b.check("fleet", "user", user) for _ in range(3)] == ["allow"] * 3
        assert wait_until(b_dropped, 30, 0.2), "node B still serves the rule removed on A"
    finally:
        for s in nodes:
            s.stop()


def test_stats_of_a_remote_store(rds, nodes):
    """The operator's statistics with a store that answers after its start
    call: outcomes, the limited key (kept for the answer in the worker's
    ring), the round trip and the store's own state per worker."""
    a = nodes("a", workers=2)
    verdicts = [a.check("shared", "fw", "heavy") for _ in range(60)]
    assert verdicts.count("allow") == 50 and verdicts.count("deny") == 10
    req = urllib.request.Request(f"http://127.0.0.1:{a.http}/v1/stats?seconds=5",
                                 headers=a.admin_headers())
    with urllib.request.urlopen(req, timeout=5) as r:
        doc = json.load(r)
    (p,) = [p for p in doc["series"] if p["limit"] == "shared.fw"]
    assert p["total"]["allow"] == 50 and p["total"]["deny"] == 10
    assert p["top"][0]["key"] == "fw=heavy" and p["top"][0]["count"] == 10
    st = doc["store"]
    assert st["type"] == "redis" and st["ready"] is True
    assert sum(st["calls"]) == 60 and sum(st["failures"]) == 0
    assert st["p99_ns_recent"] >= st["p50_ns_recent"] > 0
    workers = st["state"]["workers"]
    assert len(workers) == 2 and all(w["breaker"] == "closed" and w["ready"] for w in workers)
    # engine auto picks the best the server offers: the module when it is loaded
    assert [w["engine"] for w in workers] == ["module" if MODULE else "function"] * 2
    assert st["state"]["errors"] == 0
