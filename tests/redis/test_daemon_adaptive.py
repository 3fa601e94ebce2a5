# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_daemon_adaptive.py - adaptive_concurrency with `store.type: redis`
and `hybrid`: decided on each node, not in Redis (docs/distributed.md).

Real processes: one redis-server and two sluiced on it (free loopback
ports, stopped by PID). Each node admits up to its own controller's limit
for the same key (together twice the limit), and releases its own leases
with a latency; Redis receives no decision command for them. A domain that
mixes adaptive_concurrency with a limit decided in Redis (redis: any
other; hybrid: concurrency) is refused by `sluiced -t` and `sluice check -c`
with a message naming the domain; with hybrid, a domain mixing it with a
synced limit loads.
"""
import os
import subprocess

import pytest

from sluiced_proc import SLUICED, RedisServer, SluicedProc

RULES = """\
domain: jobs
descriptors:
  - key: svc
    limits:
      - {algorithm: adaptive_concurrency, controller: aimd, initial_limit: 5, min_limit: 2,
         max_limit: 20, timeout: 100ms, lease: 30s}
---
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
"""

MIXED = """\
domain: jobs
descriptors:
  - key: svc
    limits:
      - {algorithm: adaptive_concurrency, lease: 30s}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
"""

MIXED_HYBRID = """\
domain: jobs
descriptors:
  - key: svc
    limits:
      - {algorithm: adaptive_concurrency, lease: 30s}
  - key: conn
    limits: [{algorithm: concurrency, requests: 3, lease: 30s}]
"""

DECISIONS = ("evalsha", "fcall", "SLUICE.CHECK", "SLUICE.RELEASE", "SLUICE.PEEK")


def store_yaml(kind, port):
    if kind == "hybrid":
        return f"""  type: hybrid
  redis:
    port: {port}
    timeout: 200ms
  hybrid:
    sync_interval: 50ms
    timeout: 100ms
"""
    return f"""  type: redis
  redis:
    port: {port}
    timeout: 200ms
    failure_policy: deny
"""


@pytest.fixture
def rds():
    r = RedisServer()
    yield r
    r.stop()


def calls(r):
    stats = r.client.info("commandstats")
    return sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in DECISIONS)


def acquire(node, value="a"):
    reply = node.client.execute_command("SL.ACQUIRE", "jobs", "svc", value)
    return reply[0].decode(), reply[2][0][2], reply[3].decode()


@pytest.mark.parametrize("kind", ["redis", "hybrid"])
def test_each_node_admits_up_to_its_own_limit(tmp_path, rds, kind):
    nodes = []
    try:
        for name in ("a", "b"):
            d = tmp_path / name
            d.mkdir()
            nodes.append(SluicedProc(d, name, store_yaml(kind, rds.port), RULES))
        if kind == "redis":  # a Redis-decided limit still goes to Redis
            before = calls(rds)
            assert nodes[0].check("api", "user", "u") == "allow"
            assert calls(rds) > before
        before = calls(rds)
        leases = {}
        for n in nodes:
            leases[n.name] = []
            for _ in range(5):
                verdict, quota, lease = acquire(n)
                assert (verdict, quota) == ("allow", 5) and lease
                leases[n.name].append(lease)
            assert acquire(n)[0] == "deny"  # this node's limit, whatever the other's
        for n in nodes:
            for lease in leases[n.name]:
                assert n.client.execute_command("SL.RELEASE", lease, 1500) == 1
            assert n.client.execute_command("SL.RELEASE", leases[n.name][0], 1500) == 0
        # releases with the limit in flight were fast: each node's limit grew
        for n in nodes:
            assert n.client.execute_command("SL.PEEK", "jobs", "svc", "a")[2][0][2] > 5
        assert calls(rds) == before  # nothing of it reached Redis
    finally:
        for n in nodes:
            n.stop()


def check_config(tmp_path, kind, port, rules):
    """(returncode, output) of `sluiced -t` and of `sluice check -c`."""
    (tmp_path / "rules.yaml").write_text(rules)
    cfg = tmp_path / "n.yaml"
    cfg.write_text(f"""listeners:
  - {{address: 127.0.0.1, port: 1, protocols: [resp]}}
rules:
  files: [rules.yaml]
store:
{store_yaml(kind, port)}""")
    out = []
    for cmd in ([SLUICED, "-c", str(cfg), "-t"], [os.environ["SLUICE_CLI"], "check", "-c", str(cfg)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=tmp_path)
        out.append((r.returncode, r.stdout + r.stderr))
    return out


@pytest.mark.parametrize("kind,rules", [("redis", MIXED), ("hybrid", MIXED_HYBRID)])
def test_mixed_domain_is_refused(tmp_path, rds, kind, rules):
    for rc, text in check_config(tmp_path, kind, rds.port, rules):
        assert rc != 0, text
        assert "domain 'jobs' mixes adaptive_concurrency" in text, text


def test_hybrid_takes_adaptive_beside_synced_limits(tmp_path, rds):
    for rc, text in check_config(tmp_path, "hybrid", rds.port, MIXED):
        assert rc == 0, text
