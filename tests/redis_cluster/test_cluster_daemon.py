# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_cluster_daemon.py - sluiced on a real Redis Cluster , end to end.

Real processes only: a 3-master Redis Cluster started here on free loopback
ports (redis-server --cluster-enabled, formed by redis-cli --cluster create;
every process killed by PID at the end) and two sluiced with
`store.redis.cluster: true`, driven with redis-py (RESP) and HTTP. It shows:
  - two sluiced sharing the cluster admit together exactly the limit of every
    algorithm (concurrency aside: not supported on a cluster), never more,
    with the keys spread over the masters and no failure-policy answer;
  - a rule added through node A's admin API is served by node B (polled for
    up to 30 s), and B restarted while the whole cluster is down still has it
    (its own rules database) and enforces it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "redis"))
from sluiced_proc import SluicedProc, free_port, wait_until  # noqa: E402


RULES = """\
domain: shared
descriptors:
  - key: tb
    limits: [{algorithm: token_bucket, requests: 40, period: 1m}]
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
"""
ADMITTED = {"tb": 40, "gcra": 16, "leaky": 21, "fw": 50, "sw": 50, "log": 25}

NEW_RULE = """\
domain: synced
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 2}
"""


class Cluster:
    """Three masters on loopback (`host`: 127.0.0.1 or ::1); each node's
    config in a temporary dir. With `tls` (tests/redis/redis_tls.py's
    TlsFiles) every node serves only TLS, its cluster bus included
    (`tls-cluster yes`); `args` are more arguments of every node (e.g. its
    ACL users), `auth` the (user, password) the tests' clients log in with."""

    def __init__(self, host="127.0.0.1", tls=None, args=(), auth=None):
        self.dir = tempfile.mkdtemp(prefix="sl-pycluster-")
        self.host, self.tls, self.auth = host, tls, auth
        self.nodes = []
        for _ in range(3):
            port, bus = free_port(), free_port()
            listen = (["--port", "0", "--tls-port", str(port), "--tls-cluster", "yes",
                       "--tls-replication", "yes"] + tls.server_args()
                      if tls else ["--port", str(port)])
            proc = subprocess.Popen(
                ["redis-server"] + listen + ["--bind", host,
                 "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                 "--cluster-port", str(bus), "--cluster-node-timeout", "1000",
                 "--dir", self.dir, "--save", "", "--appendonly", "no",
                 "--logfile", f"{port}.log"] + list(args))
            self.nodes.append((port, proc))
            assert wait_until(lambda: self._ping(port), 10), "redis-server did not start"
        cli = (tls.cli_args() if tls else []) + (
            ["--user", auth[0], "--pass", auth[1], "--no-auth-warning"] if auth else [])
        subprocess.run(["redis-cli"] + cli + ["--cluster", "create"]
                       + [f"{host}:{p}" for p, _ in self.nodes]
                       + ["--cluster-replicas", "0", "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_until(self._ok, 30), "cluster_state did not become ok"

    def client(self, port, **kw):
        """A redis-py client of one node (TLS and the user when the cluster has them)."""
        if self.auth:
            kw.update(username=self.auth[0], password=self.auth[1])
        return redis.Redis(host=self.host, port=port, **(self.tls.client_kwargs() if self.tls
                                                          else {}), **kw)

    def _ping(self, port):
        try:
            return self.client(port, socket_timeout=1).ping()
        except redis.RedisError:
            return False

    def _ok(self):
        try:
            return all(b"cluster_state:ok" in self.client(p).execute_command("CLUSTER", "INFO")
                       for p, _ in self.nodes)
        except redis.RedisError:
            return False

    def keys_per_node(self):
        return [self.client(p).dbsize() for p, _ in self.nodes]

    def stop(self):
        for _, proc in self.nodes:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Sluiced(SluicedProc):
    """extra: more lines under store.redis (e.g. its user and tls)."""

    def __init__(self, tmp_path, name, cluster, db=None, extra=""):
        seed, *more = [p for p, _ in cluster.nodes]
        nodes = ",".join(f"127.0.0.1:{p}" for p in more)
        store = f"""  type: redis
  redis:
    port: {seed}
    cluster: true
    nodes: "{nodes}"
    rules_sync: {"true" if db else "false"}
    timeout: 200ms
    over_limit_cache: 0
    failure_policy: local
{extra}"""
        super().__init__(tmp_path, name, store, RULES, workers=2,
                         rules_extra=f"\n  database: {db}" if db else "")

    def add_rule(self, rule_id, yaml_text):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.http}/v1/rules", method="POST",
            data=json.dumps({"id": rule_id, "yaml": yaml_text}).encode(),
            headers=self.admin_headers())
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def rules(self):
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}/v1/rules",
                                     headers=self.admin_headers())
        with urllib.request.urlopen(req, timeout=5) as r:
            return [row["id"] for row in json.loads(r.read())["rules"]]


@pytest.fixture
def cluster():
    c = Cluster()
    yield c
    c.stop()


@pytest.fixture
def nodes(tmp_path, cluster):
    started = []

    def start(name, db=None):
        s = Sluiced(tmp_path, name, cluster, db)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


def test_two_sluiced_on_the_cluster_never_exceed_any_limit(cluster, nodes):
    a, b = nodes("a"), nodes("b")
    for key, expected in ADMITTED.items():
        for value in ("v1", "v2", "v3"):  # several tags: several slots and masters
            verdicts = [(a if i % 2 else b).check("shared", key, value) for i in range(90)]
            admitted = sum(v != "deny" for v in verdicts)
            assert admitted == expected, (key, value, verdicts)
    assert sum(n > 0 for n in cluster.keys_per_node()) >= 2  # the keys really spread
    for s in (a, b):
        assert s.metric("sluice_store_redis_policy_local_total") == 0
        assert s.metric("sluice_store_redis_map_refreshes_total") >= 1


def test_rules_added_on_a_served_by_b_and_kept_without_redis(cluster, nodes, tmp_path):
    a = nodes("a", db=tmp_path / "a.db")
    b = nodes("b", db=tmp_path / "b.db")
    assert b.check("synced", "user", "u1") == "allow"  # no such rule yet: unlimited
    answer = a.add_rule("synced-users", NEW_RULE)
    assert answer.get("published") is True, answer

    def b_enforces():  # two an hour: a fresh user's third check is denied
        user = f"u{time.monotonic_ns()}"
        return [b.check("synced", "user", user) for _ in range(3)] == ["allow", "allow", "deny"]
    assert wait_until(b_enforces, 30, 0.2), "node B never served the rule added on A"
    assert "synced-users" in b.rules()

    # B restarted while every Redis node is down: its own database still has it.
    b.stop()
    cluster.stop()
    b.start(wait_ready=False)
    assert "synced-users" in b.rules()
    verdicts = [b.check("synced", "user", "offline") for _ in range(3)]
    assert verdicts == ["allow", "allow", "deny"]  # decided locally (policy local)
