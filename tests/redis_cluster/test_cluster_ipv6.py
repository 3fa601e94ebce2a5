# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_cluster_ipv6.py - sluiced's Redis store on IPv6 addresses, end to
end: one Redis and a 3-master Redis Cluster listening on ::1 only.

Real processes only, on free ports, killed by PID at the end. What it
shows:
  - store.redis.host "[::1]" (bracketed, as in a URL) connects: decisions
    are Redis's (no policy answer) and exact, and /healthz?verbose names the
    node "[::1]:port";
  - a cluster whose seeds are given as "[::1]:port" and "::1:port", and
    whose CLUSTER SLOTS reply names every master by its IPv6 address:
    every master is connected, keys spread over them, the limits of two
    sluiced are exact, and no answer is a failure policy's.
"""
import json
import os
import subprocess
import sys

import pytest
import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "redis"))
from sluiced_proc import SluicedProc, free_port, wait_until  # noqa: E402
from test_cluster_daemon import Cluster  # noqa: E402

RULES = """\
domain: shared
descriptors:
  - key: fw
    limits: [{algorithm: fixed_window, requests: 20, period: 1m}]
"""


class Sluiced(SluicedProc):
    def __init__(self, tmp_path, name, redis_lines):
        store = "  type: redis\n  redis:\n    timeout: 1s\n    failure_policy: local\n"
        store += "".join(f"    {line}\n" for line in redis_lines)
        super().__init__(tmp_path, name, store, RULES, workers=2)

    def policy_answers(self):
        return self.metric("sluice_store_redis_policy_local_total")

    def addresses(self):
        status, body = self.get("/healthz?verbose")
        assert status == 200
        return sorted((n["address"], n["state"]) for n in json.loads(body)["store"]["nodes"])


def exact(nodes, value):
    verdicts = [nodes[i % len(nodes)].check("shared", "fw", value) for i in range(30)]
    return sum(v != "deny" for v in verdicts) == 20


@pytest.fixture
def redis6():
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "::1", "--save", "",
                             "--appendonly", "no", "--logfile", "/dev/null"])
    client = redis.Redis(host="::1", port=port, socket_timeout=1)

    def up():
        try:
            return client.ping()
        except redis.RedisError:
            return False
    assert wait_until(up, 10), "redis-server did not start on ::1"
    yield port, client
    proc.kill()
    proc.wait()


def test_one_redis_on_ipv6(tmp_path, redis6):
    port, client = redis6
    s = Sluiced(tmp_path, "a", ['host: "[::1]"', f"port: {port}"])
    try:
        assert exact([s], "one")
        assert s.policy_answers() == 0
        assert s.addresses() == [(f"[::1]:{port}", "up")]
        assert client.dbsize() >= 1  # the state is in that Redis
    finally:
        s.stop()


def test_cluster_on_ipv6(tmp_path):
    cluster = Cluster(host="::1")
    started = []
    try:
        (seed, _), (p2, _), (p3, _) = cluster.nodes
        lines = ['host: "::1"', f"port: {seed}", "cluster: true", f'nodes: "[::1]:{p2},::1:{p3}"']
        a = Sluiced(tmp_path, "a", lines)
        started.append(a)
        b = Sluiced(tmp_path, "b", lines)
        started.append(b)
        for value in ("v1", "v2", "v3", "v4", "v5", "v6"):
            assert exact([a, b], value), value
        assert sum(n > 0 for n in cluster.keys_per_node()) >= 2  # several masters used
        for s in (a, b):
            assert s.policy_answers() == 0
            assert s.metric("sluice_store_redis_map_refreshes_total") >= 1
            assert s.addresses() == sorted((f"[::1]:{p}", "up") for p, _ in cluster.nodes)
            for p, _ in cluster.nodes:
                assert s.metric(f'sluice_store_redis_node_up{{node="[::1]:{p}"}}') == 1
    finally:
        for s in started:
            s.stop()
        cluster.stop()
