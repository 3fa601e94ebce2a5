# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_sentinel_daemon.py - sluiced with its Redis found through Redis
Sentinel, end to end, with a real failover.

Real processes only, on free loopback ports, killed by PID at the end: a
master and a replica (redis-server), three sentinels (Debian's
redis-sentinel, quorum 2, down-after 1 s) and two sluiced with
`store.redis.sentinels` (the first of which is an address where nothing
listens) and `master_name`, two workers each, driven with redis-py over
RESP and with HTTP. What it shows:
  - a master name no sentinel knows: sluiced answers by its policy, says
    why in the log and in /readyz ("degraded"), and is not "ready";
  - the master killed under bounded load (six clients, bounded in time and
    requests): every check is answered within a generous bound (40 x the
    timeout), by the domain's policy while no master answers (the policy
    element of SL.CHECK's reply says which; allow reports the whole quota
    as remaining); /readyz says "degraded" and sluice_store_up is 0
    meanwhile; after +switch-master both sluiced use the new master (its
    INFO commandstats counts the calls, /healthz?verbose names it, every
    worker counted the switch); limits are exact again afterwards; rules
    written through node A reach node B before and after the failover
    (rules across nodes follow the master); no sluiced crashed;
  - the log says each event once per process: the dead sentinel left for
    the others, the master unreachable, the fall-back to each policy, the
    new master, the new master connected.

Timing figures are not measured here (bench/ does that).
"""
import json
import re
import subprocess
import threading
import time
import urllib.request

import pytest
import redis

from sluiced_proc import RedisServer, SluicedProc, free_port, wait_until

TIMEOUT_MS = 100  # Redis decides every check while it is up, also under a sanitizer
BOUND_S = 40 * TIMEOUT_MS / 1000  # generous: a 2-core machine shared with builds
NAME = "mymaster"

RULES = """\
domain: shared
descriptors:
  - key: fw
    limits: [{algorithm: fixed_window, requests: 50, period: 1m}]
  - key: tb
    limits: [{algorithm: token_bucket, requests: 30, period: 1m}]
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

SYNCED_RULE = """\
domain: synced{n}
descriptors:
  - key: user
    rate_limit: {{unit: hour, requests_per_unit: 2}}
"""


def policy(reply):
    """The failure policy an SL.CHECK reply says it was made by, or None
    (decided by Redis: no fourth element)."""
    return reply[3] if len(reply) == 4 else None


class Redis(RedisServer):
    """A master, or a replica of the one on port replica_of; with `tls`
    (redis_tls.TlsFiles) serving only TLS, replicating over TLS too."""

    def __init__(self, tmp_path, replica_of=None, tls=None):
        args = ["--dir", str(tmp_path)] + (["--tls-replication", "yes"] if tls else [])
        if replica_of is not None:
            args += ["--replicaof", "127.0.0.1", str(replica_of)]
        super().__init__(args=args, logfile=tmp_path / "redis-{port}.log", seconds=10,
                         socket_timeout=2, tls=tls)

    def info(self, section):
        return self.client.info(section)

    def evalsha_calls(self):
        """Calls that decide, whichever engine the store detected (EVALSHA,
        FCALL of the Functions library, or the module's SLUICE.CHECK)."""
        stats = self.info("commandstats")
        return sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0)
                   for c in ("evalsha", "fcall", "SLUICE.CHECK"))


class Sentinel:
    """redis-sentinel monitoring the master on master_port; with `tls`
    serving only TLS (`port 0`, `tls-port`) and speaking TLS to the
    servers and the other sentinels (`tls-replication yes`)."""

    def __init__(self, tmp_path, master_port, tls=None):
        self.port = free_port()
        self.conf = tmp_path / f"sentinel-{self.port}.conf"
        listen = (f"port 0\ntls-port {self.port}\ntls-replication yes\n{tls.conf_lines()}"
                  if tls else f"port {self.port}\n")
        self.conf.write_text(f"""{listen}bind 127.0.0.1
dir {tmp_path}
logfile {tmp_path}/sentinel-{self.port}.log
sentinel monitor {NAME} 127.0.0.1 {master_port} 2
sentinel down-after-milliseconds {NAME} 1000
sentinel failover-timeout {NAME} 10000
""")
        self.proc = subprocess.Popen(["redis-sentinel", str(self.conf)])
        self.client = redis.Redis(port=self.port, socket_timeout=2,
                                  **(tls.client_kwargs() if tls else {}))

    def sees_everyone(self):
        """It knows the replica and the two other sentinels (a failover needs them)."""
        try:
            line = self.client.info("sentinel").get("master0", {})
        except redis.RedisError:
            return False
        return line.get("slaves") == 1 and line.get("sentinels") == 3

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Sluiced(SluicedProc):
    """tls_yaml: the lines of store.redis.tls (redis_tls.TlsFiles.store_yaml), or none."""

    def __init__(self, tmp_path, name, sentinels, master_name=NAME, wait_ready=True,
                 tls_yaml=""):
        # first in the list, an address where no sentinel listens: left for the others
        self.dead = free_port()
        addrs = ",".join([f"127.0.0.1:{self.dead}"] + [f"127.0.0.1:{s.port}" for s in sentinels])
        store = f"""  type: redis
  redis:
    sentinels: "{addrs}"
    master_name: {master_name}
    timeout: {TIMEOUT_MS}ms
    failure_policy: local
    policies: {{open: allow, closed: deny}}
    rules_sync: true
{tls_yaml}"""
        # log level info: the lines an operator reads when the master comes and goes
        super().__init__(tmp_path, name, store, RULES, workers=2,
                         rules_extra=f"\n  database: {tmp_path / (name + '.db')}",
                         log_level="info", wait_ready=wait_ready)

    def reply(self, domain, key, value):
        return self.client.execute_command("SL.CHECK", domain, 1, key, value)

    def health(self):
        status, body = self.get("/healthz?verbose")
        assert status == 200
        return json.loads(body)["store"]

    def master(self):
        return self.health()["sentinel"]["master"]

    def add_rule(self, rule_id, yaml_text):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.http}/v1/rules", method="POST",
            data=json.dumps({"id": rule_id, "yaml": yaml_text}).encode(),
            headers=self.admin_headers())
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def lines(self, pattern):
        return [ln for ln in self.log_text().splitlines() if re.search(pattern, ln)]


def start_deployment(tmp, tls=None):
    """A master, its replica and three sentinels that see each other, as
    {"master", "replica", "sentinels"}, and the list to stop (in reverse)."""
    started = []
    try:
        master = Redis(tmp, tls=tls)
        started.append(master)
        replica = Redis(tmp, replica_of=master.port, tls=tls)
        started.append(replica)
        assert wait_until(lambda: replica.info("replication").get("master_link_status") == "up",
                          20), "the replica did not sync"
        sentinels = [Sentinel(tmp, master.port, tls) for _ in range(3)]
        started.extend(sentinels)
        assert wait_until(lambda: all(s.sees_everyone() for s in sentinels), 40, 0.2), \
            "the sentinels did not find the replica and each other"
    except BaseException:
        for p in reversed(started):
            p.stop()
        raise
    return {"tmp": tmp, "master": master, "replica": replica, "sentinels": sentinels}, started


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    dep, started = start_deployment(tmp_path_factory.mktemp("sentinel"))
    yield dep
    for p in reversed(started):
        p.stop()


def test_unknown_master_name_answers_by_policy_and_says_why(deployment, tmp_path):
    s = Sluiced(tmp_path, "lost", deployment["sentinels"], master_name="nosuch", wait_ready=False)
    try:
        assert wait_until(lambda: s.lines("does not name a master 'nosuch'"), 10)
        # every worker has asked (and failed) once: no longer starting
        assert wait_until(lambda: s.readyz()[0] == 200, 10), s.readyz()
        status, body = s.readyz()
        assert body.startswith("degraded: no master known for 'nosuch'"), body
        assert not s.ready()
        r = s.reply("open", "k", "x")
        assert r[0] == b"allow" and policy(r) == b"allow"  # the policy says so
        assert r[2][0][3] == r[2][0][2] == 1000000  # allow: the whole quota remains
        r = s.reply("closed", "k", "x")
        assert r[0] == b"deny" and policy(r) == b"deny" and r[2][0][3] == 0
        assert policy(s.reply("shared", "fw", "x")) == b"local"
        assert s.metric("sluice_store_up") == 0
        assert s.health()["sentinel"]["master"] is None
        assert len(s.lines("does not name a master")) == 1  # once, not per worker or retry
    finally:
        s.stop()
    assert s.proc.returncode == 0


def admitted(nodes, domain, key, value, n):
    """Alternate n checks over nodes; how many were admitted, and the policies seen."""
    replies = [nodes[i % len(nodes)].reply(domain, key, value) for i in range(n)]
    return sum(r[0] != b"deny" for r in replies), {policy(r) for r in replies}


def synced_on(b, n):
    def enforced():  # two an hour: a fresh user's third check is denied
        user = f"u{time.monotonic_ns()}"
        return [b.check(f"synced{n}", "user", user) for _ in range(3)] == ["allow", "allow", "deny"]
    return wait_until(enforced, 20, 0.2)


def test_master_killed_under_load_fails_over(deployment, tmp_path):
    master, replica = deployment["master"], deployment["replica"]
    old, new = f"127.0.0.1:{master.port}", f"127.0.0.1:{replica.port}"
    a = Sluiced(tmp_path, "a", deployment["sentinels"])
    b = Sluiced(tmp_path, "b", deployment["sentinels"])
    try:
        for s in (a, b):
            assert s.master() == old
            assert s.lines(rf"redis master '{NAME}' is {re.escape(old)} \(from sentinel")
            assert s.metric("sluice_store_up") == 1
        assert admitted([a, b], "shared", "fw", "before", 60) == (50, {None})
        assert a.add_rule("r1", SYNCED_RULE.format(n=1))["published"] is True
        assert synced_on(b, 1), "node B never served the rule added on A"

        answers, errors, stop = [], [], threading.Event()

        def load(node, domain):
            c = redis.Redis(port=node.port, socket_timeout=5)
            for i in range(20000):  # bounded in requests ...
                if stop.is_set():
                    return
                t0 = time.monotonic()
                try:
                    r = c.execute_command("SL.CHECK", domain, 1, "k", f"v{i % 50}")
                except redis.RedisError as e:
                    errors.append(repr(e))
                    return
                answers.append((domain, r, time.monotonic() - t0, t0))
                time.sleep(0.002)

        threads = [threading.Thread(target=load, args=(n, d))
                   for n in (a, b) for d in ("open", "closed", "shared")]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)
            master.stop()  # SIGKILL
            killed = time.monotonic()
            time.sleep(0.5)  # Sentinel waits 1 s before it calls the master down
            outage = {"readyz": a.readyz(), "up": a.metric("sluice_store_up")}
            # ... and in time: the failover, then a little more load
            switched = wait_until(lambda: all(  # every worker of both nodes
                s.metric("sluice_store_redis_master_switches_total") == 2 for s in (a, b)), 40, 0.1)
            switched_at = time.monotonic()
            time.sleep(1)
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert switched, (a.health(), b.health())
        assert errors == []
        assert max(lat for _, _, lat, _ in answers) <= BOUND_S
        # After the kill: each domain's policy while no master answered, and
        # the answer says so; Redis (no policy) again only once switched.
        after = [(d, r, t0) for d, r, _, t0 in answers if t0 > killed + 0.1]
        policies = {"open": b"allow", "closed": b"deny", "shared": b"local"}
        for domain, expected in policies.items():
            mine = [r for d, r, _ in after if d == domain and policy(r) is not None]
            assert mine, f"no {domain} answer by its policy while the master was down"
            assert all(policy(r) == expected for r in mine), (domain, mine[:3])
        # (a switched worker reconnects at once: allow it a generous moment)
        assert all(t0 < switched_at + 2 for d, r, t0 in after if policy(r) is not None)
        assert all(r[0] == b"deny" and r[2][0][3] == 0 for d, r, _ in after if policy(r) == b"deny")
        assert all(r[2][0][3] == 1000000 for d, r, _ in after if policy(r) == b"allow")
        assert outage["readyz"][0] == 200 and outage["readyz"][1].startswith("degraded: ")
        assert outage["up"] == 0

        # The new master decides, for both nodes, exactly.
        calls = replica.evalsha_calls()
        assert wait_until(lambda: a.ready() and b.ready(), 10)
        assert admitted([a, b], "shared", "tb", "after", 40) == (30, {None})
        assert replica.evalsha_calls() >= calls + 30  # denials after: the over-limit cache
        for s in (a, b):
            assert s.metric("sluice_store_up") == 1
            assert s.metric(f'sluice_store_redis_node_up{{node="{new}"}}') == 1
            assert s.metric("sluice_store_redis_policy_local_total") > 0
            h = s.health()
            assert h["state"] == "up" and h["nodes"][0]["address"] == new
            assert h["sentinel"]["workers_subscribed"] == 2
        # Rules across nodes follow the master too.
        assert a.add_rule("r2", SYNCED_RULE.format(n=2))["published"] is True
        assert synced_on(b, 2), "node B never served the rule added on A after the failover"
        assert a.proc.poll() is None and b.proc.poll() is None  # 0 crashes
    finally:
        a.stop()
        b.stop()
    assert a.proc.returncode == 0 and b.proc.returncode == 0
    for s in (a, b):  # each event once per process (two workers each)
        assert len(s.lines(rf"sentinel 127.0.0.1:{s.dead} unreachable")) == 1
        assert s.lines(rf"following master '{NAME}' through sentinel")
        assert len(s.lines(rf"redis {re.escape(old)} \(master 'mymaster'\) unreachable")) == 1
        for name in ("allow", "deny", "local"):
            assert len(s.lines(f"falling back to the failure policy '{name}'")) == 1
        assert len(s.lines(rf"master '{NAME}' is now {re.escape(new)}, was {re.escape(old)}")) == 1
        assert len(s.lines(rf"redis {re.escape(new)} \(master 'mymaster'\) connected")) == 1
        assert not s.lines(rf"redis {re.escape(new)} \(master 'mymaster'\) unreachable")
