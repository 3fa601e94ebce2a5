# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_rlqs_redis.py - the rate limit quota service across a fleet:
two sluiced on one redis-server (started here, killed by PID) share each
pool's demand through Redis (docs/rlqs.md, "Fleets"), simulated Envoys
(test_grpc_rlqs.py's) split across them with skewed demand.

Checked: the shares follow the fleet's demand (max-min fair over every
instance of both nodes, not per node); the sum of what the Envoys of both
nodes may apply stays within the limit once the nodes see each other, and
within the stated bound (limit + (nodes - 1) x limit) while they start; an
Envoy that leaves one node has its share handed to the instances of the
other after its TTL; the pool's hash in Redis holds one field per node and
expires; the hybrid store shares as the Redis store does, and a node that dies has
its share handed on once its field expired; with Redis gone the nodes keep their last caps (rounds counted as
failed); with the memory store two sluiced each divide the whole limit
(per process, as documented); and Envoys that enforce their assignments
let through, over every 1 s window, no more than the limit and the stated
bound. Every wait is bounded.
"""
import time

import pytest
import redis

from test_grpc_rlqs import (Enforcer, Envoy, REPORT, applied_sum, check_windows, demand_usage,
                            drive, eventually, metric)
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401

LIMIT = 100.0
RULES = """\
domain: rlqs
descriptors:
  - key: name
    value: shared
    limits:
      - algorithm: token_bucket
        requests: 100
        period: 1s
        burst: 100
"""


@pytest.fixture
def rds():
    from conftest import RedisServer
    server = RedisServer()
    yield server
    server.stop()


def redis_store(port):
    return f"""store:
  type: redis
  redis:
    port: {port}
    timeout: 200ms
    failure_policy: local
"""


def near(a, want, frac=0.10):
    return a is not None and a.kind == "token_bucket" and abs(a.rate - want) <= frac * want


def run(envoys, rates, rounds, until, bound):
    """Report rates[i] for envoys[i] (None: skip) each REPORT; after each
    round, what all Envoys apply stays within `bound`. True once until()."""
    everyone = [e for e in envoys if e is not None]
    for _ in range(rounds):
        for e, r in zip(envoys, rates):
            if e is not None and r is not None:
                e.report({"shared": demand_usage(r)})
        time.sleep(REPORT)
        assert eventually(lambda: applied_sum(everyone, "shared") <= bound), \
            applied_sum(everyone, "shared")
        if until():
            return True
    return False


def test_enforced_fleet_stays_within_the_bound_in_every_window(grpc_sluiced, rds):
    """Envoys that enforce their token buckets, split over two sluiced on one
    Redis, one offered 400 requests a second and three 10: over every 1 s
    window what they let through together is at most the limit's rate x
    1 s + its burst + the max_tokens of the assignments changed in it + a
    tenth of the rate for delivery - twice the rate and burst for windows
    that start before the nodes' shares first agree (the fleet's stated
    bound while its nodes start: one more limit per node) - and the busy
    one, on node a, gets the share the quiet ones leave, over the fleet."""
    a = grpc_sluiced(rules=RULES, test_clock=False, extra=redis_store(rds.port))
    b = grpc_sluiced(rules=RULES, test_clock=False, extra=redis_store(rds.port))
    envoys = [Envoy(a.port), Envoy(a.port), Envoy(b.port), Envoy(b.port)]
    fs = [Enforcer(e, "shared", 400.0 if i == 0 else 10.0) for i, e in enumerate(envoys)]
    fair = lambda: all(near(e.get("shared"), w, 0.15) for e, w in zip(envoys, [70, 10, 10, 10]))
    agreed = []

    def watch(now):
        if not agreed and fair():
            agreed.append(now)
    try:
        t0 = drive(fs, 10.0, watch)
        assert agreed, [e.get("shared") and e.get("shared").rate for e in envoys]
        agreed = agreed[0]
        # twice the rate and burst before the nodes' shares first agree
        check_windows(fs, t0, lambda start: (2 if start < agreed else 1) * (LIMIT + 100))
        late = [sum(n for t, n in f.admitted if t > agreed + 1.0) for f in fs]
        assert late[0] > 2 * sum(late[1:]), late
    finally:
        for e in envoys:
            e.close()


def test_fleet_divides_by_global_demand(grpc_sluiced, rds):
    a = grpc_sluiced(rules=RULES, test_clock=False, extra=redis_store(rds.port))
    b = grpc_sluiced(rules=RULES, test_clock=False, extra=redis_store(rds.port))
    on_a = [Envoy(a.port), Envoy(a.port)]
    on_b = [Envoy(b.port), Envoy(b.port)]
    envoys = on_a + on_b
    rates = [200, 20, 20, 20]  # one Envoy at ten times the others
    try:
        # while the nodes start they may not see each other yet: the stated
        # bound for two nodes is the limit plus one more limit
        start_bound = LIMIT + (2 - 1) * LIMIT + 1e-6
        fair = lambda: all(near(e.get("shared"), w) for e, w in zip(envoys, [40, 20, 20, 20]))
        # over the fleet: 20 for each small one, the rest (40) to the big one;
        # per node it would be 80/20 on one and 50/50 on the other
        assert run(envoys, rates, 60, fair, start_bound), [e.get("shared") and e.get("shared").rate
                                                           for e in envoys]
        # once they see each other: within the limit, and the shares stay
        assert not run(envoys, rates, 10, lambda: not fair(), LIMIT * (1 + 1e-6))
        for s in (a, b):
            m = metric(s, "sluice_rlqs_fleet_instances")
            assert 4.0 in m.values(), m
            ok = metric(s, "sluice_rlqs_fleet_rounds_total")
            assert ok['sluice_rlqs_fleet_rounds_total{outcome="ok"}'] >= 1, ok
            q = s.json("GET", "/v1/stats?seconds=1")[2]["rlqs"]  # the same in /v1/stats
            p = q["by_pool"][0]
            assert q["fleet"] is True and (p["fleet_instances"], p["fleet_nodes"]) == (4, 2), q
            assert 0 < p["fleet_rate"] <= LIMIT * (1 + 1e-6) and p["instances"] == 2, q
        # one hash for the pool, one field per node, and it expires
        r = redis.Redis(port=rds.port, socket_timeout=5)
        keys = r.keys("sluice:rlqs:{*}")
        assert len(keys) == 1, keys
        assert r.hlen(keys[0]) == 2 and 0 < r.pttl(keys[0]) <= 60_000
        # the big one leaves node a: after its TTL its share goes to the
        # others, two of them on node b (100 / 3 each)
        leaving = on_a[0]
        last = leaving.get("shared")
        leaving.close()
        envoys[0] = None
        thirds = lambda: all(near(e.get("shared"), LIMIT / 3) for e in envoys[1:])
        assert run(envoys, [None, 20, 20, 20], 60, thirds, LIMIT * (1 + 1e-6)), \
            [e.get("shared").rate for e in envoys[1:]]
        assert time.monotonic() >= last.until - 0.05  # not handed on before its TTL
        # demand moves to node b: its Envoy at ten times gets the most
        moved = lambda: (near(envoys[3].get("shared"), 60) and near(envoys[1].get("shared"), 20)
                         and near(envoys[2].get("shared"), 20))
        assert run(envoys, [None, 20, 20, 200], 60, moved, LIMIT * (1 + 1e-6)), \
            [e.get("shared").rate for e in envoys[1:]]
        assert eventually(lambda: applied_sum(envoys[1:], "shared") <= LIMIT * (1 + 1e-6), 3.0)
        # Redis goes: the rounds fail, the nodes keep their last caps
        before = [e.get("shared").rate for e in envoys[1:]]
        rds.stop()
        def failed():
            return all(metric(s, "sluice_rlqs_fleet_rounds_total").get(
                'sluice_rlqs_fleet_rounds_total{outcome="failed"}', 0) >= 1 for s in (a, b))
        assert run(envoys, [None, 20, 20, 200], 40, failed, LIMIT * (1 + 1e-6))
        run(envoys, [None, 20, 20, 200], 5, lambda: False, LIMIT * (1 + 1e-6))
        after = [e.get("shared").rate for e in envoys[1:]]
        assert all(abs(x - y) <= 0.05 * y for x, y in zip(after, before)), (before, after)
    finally:
        for e in envoys:
            if e is not None:
                e.close()


def test_hybrid_store_fleet(grpc_sluiced, rds):
    store = f"""store:
  type: hybrid
  redis:
    port: {rds.port}
    timeout: 200ms
  hybrid:
    sync_interval: 100ms
"""
    a = grpc_sluiced(rules=RULES, test_clock=False, extra=store)
    b = grpc_sluiced(rules=RULES, test_clock=False, extra=store)
    ea, eb = Envoy(a.port), Envoy(b.port)
    try:
        # over the fleet 80 | 20; per node each would get the whole 100
        fair = lambda: near(ea.get("shared"), 80) and near(eb.get("shared"), 20)
        assert run([ea, eb], [200, 20], 60, fair, 2 * LIMIT + 1e-6), \
            (ea.get("shared"), eb.get("shared"))
        assert not run([ea, eb], [200, 20], 5, lambda: not fair(), LIMIT * (1 + 1e-6))
        r = redis.Redis(port=rds.port, socket_timeout=5)
        keys = r.keys("sluice:rlqs:{*}")
        assert len(keys) == 1 and r.hlen(keys[0]) == 2, keys
        # node b dies (its Envoy with it): once its field expired (three
        # rounds, or its longest TTL) node a's Envoy gets the whole limit
        eb.close()
        b.proc.kill()
        b.proc.wait(10)
        whole = lambda: near(ea.get("shared"), LIMIT, 0.05)
        assert run([ea], [200], 60, whole, LIMIT * (1 + 1e-6)), ea.get("shared")
        assert r.hlen(keys[0]) == 1
    finally:
        ea.close()
        eb.close()


def test_memory_store_divides_per_process(grpc_sluiced):
    a = grpc_sluiced(rules=RULES, test_clock=False)
    b = grpc_sluiced(rules=RULES, test_clock=False)
    ea, eb = Envoy(a.port), Envoy(b.port)
    try:
        whole = lambda: near(ea.get("shared"), LIMIT, 0.02) and near(eb.get("shared"), LIMIT, 0.02)
        assert run([ea, eb], [50, 50], 25, whole, 2 * LIMIT * (1 + 1e-6)), \
            (ea.get("shared"), eb.get("shared"))
        assert not metric(a, "sluice_rlqs_fleet_rounds_total")  # no fleet series
        q = a.json("GET", "/v1/stats?seconds=1")[2]["rlqs"]
        assert q["fleet"] is False and "fleet_rate" not in q["by_pool"][0], q
    finally:
        ea.close()
        eb.close()
