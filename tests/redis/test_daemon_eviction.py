# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_daemon_eviction.py - sluiced reads Redis's maxmemory-policy when it
connects, end to end (a real redis-server and sluiced on free loopback
ports, stopped by PID).

Every state key carries an expiry, so any policy but noeviction may evict
a counter and forgive a client it was limiting. What it shows:
  - allkeys-lru and volatile-lru: one `store.eviction_policy` warning
    naming the address and the policy, with two workers and after a
    reconnection still one (once per address, not per connection);
  - noeviction: no such line;
  - CONFIG renamed away: the store is ready and decides, and one
    `store.eviction_unchecked` line (info) says the policy could not be
    checked;
  - the hybrid store (whose decisions that need Redis go through the Redis
    store's connections) warns the same.
It does not test Redis Cluster or Sentinel, whose connections take the
same path (store/redis/redis_conn.c).
"""
import json

import pytest

from sluiced_proc import RedisServer, SluicedProc, wait_until

RULES = """\
domain: d
descriptors:
  - key: k
    limits: [{algorithm: fixed_window, requests: 3, period: 1m}]
"""


def store_yaml(kind, port):
    extra = "  hybrid: {sync_interval: 50ms}\n" if kind == "hybrid" else ""
    return f"  type: {kind}\n  redis:\n    port: {port}\n    timeout: 200ms\n{extra}"


def events(node, name):
    out = []
    for line in node.log_text().splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("event") == name:
            out.append(o)
    return out


def start(tmp_path, kind, port):
    # JSON lines, so that the events can be read
    return SluicedProc(tmp_path, "n", store_yaml(kind, port), RULES, workers=2,
                       log_level="info, format: json")


@pytest.mark.parametrize("kind,policy", [("redis", "allkeys-lru"), ("redis", "volatile-lru"),
                                         ("hybrid", "allkeys-lru")])
def test_an_evicting_policy_is_one_warning(tmp_path, kind, policy):
    rds = RedisServer(args=["--maxmemory-policy", policy])
    node = start(tmp_path, kind, rds.port)
    try:
        assert node.check("d", "k", "a") == "allow"
        assert wait_until(lambda: events(node, "store.eviction_policy"), 10), node.log_text()
        rds.client.execute_command("CLIENT", "KILL", "TYPE", "normal")
        assert wait_until(node.ready, 10)
        assert node.check("d", "k", "a") == "allow"
        said = events(node, "store.eviction_policy")
        assert len(said) == 1, said  # two workers, a reconnection: one line
        assert said[0]["level"] == "warn"
        assert policy in said[0]["msg"] and f"127.0.0.1:{rds.port}" in said[0]["msg"]
        assert "noeviction" in said[0]["msg"]
        assert not events(node, "store.eviction_unchecked")
    finally:
        node.stop()
        rds.stop()


def test_noeviction_is_quiet(tmp_path):
    rds = RedisServer(args=["--maxmemory-policy", "noeviction"])
    node = start(tmp_path, "redis", rds.port)
    try:
        assert node.check("d", "k", "a") == "allow"
        # the policy rides with the engine detection, answered before ready
        assert wait_until(lambda: events(node, "store.node_connected"), 10)
        assert not events(node, "store.eviction_policy")
        assert not events(node, "store.eviction_unchecked")
    finally:
        node.stop()
        rds.stop()


def test_config_renamed_is_said_and_the_store_works(tmp_path):
    rds = RedisServer(args=["--rename-command", "CONFIG", ""])
    node = start(tmp_path, "redis", rds.port)
    try:
        for _ in range(3):
            assert node.check("d", "k", "b") == "allow"
        assert node.check("d", "k", "b") == "deny"  # Redis decides: the store works
        assert wait_until(lambda: events(node, "store.eviction_unchecked"), 10), node.log_text()
        said = events(node, "store.eviction_unchecked")
        assert len(said) == 1 and said[0]["level"] == "info", said
        assert "could not be checked" in said[0]["msg"]
        assert not events(node, "store.eviction_policy")
    finally:
        node.stop()
        rds.stop()
