# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_sentinel_tls.py - sluiced following a Redis master through Redis
Sentinel, every connection over TLS, with a real failover.

The deployment of test_sentinel_daemon.py (a master, a replica, three
sentinels, quorum 2, down-after 1 s; real processes on free loopback
ports, killed by PID at the end), every one of them serving only TLS and
requiring a client certificate (`port 0`, `tls-port`, `tls-auth-clients
yes`), replicating and talking to each other over TLS (`tls-replication
yes`); certificates made by the test (redis_tls.py). Two sluiced with
`store.redis.sentinels`, `master_name` and one `store.redis.tls` (the CA,
the client certificate) for the sentinels and the servers alike, two
workers each, rules sync on. What it shows:
  - the harness: each of the five processes answers redis-cli over TLS
    with the client certificate and refuses clear text, a client without
    a certificate and one trusting another CA; the sentinels see the
    replica and each other;
  - both sluiced find the master through the sentinels over TLS and
    decide in it, together exactly the limit; a rule written through A
    reaches B;
  - the hybrid store finds the master through the sentinels over TLS
    and syncs there over TLS;
  - the master killed under bounded load (six clients, bounded in time
    and requests): every check is answered within a generous bound (40 x
    the timeout), by its domain's policy while no master answers; the
    sentinels name the replica; after the switch every worker of both
    sluiced uses the new master over TLS (its INFO commandstats counts the
    calls, /healthz?verbose names it), limits are exact again, rules
    written through A reach B; no sluiced crashed.

Timing figures are not measured here.
"""
import re
import threading
import time

import pytest
import redis

from redis_tls import Pki, TlsFiles, assert_tls_only
from test_sentinel_daemon import (BOUND_S, NAME, SYNCED_RULE, Sluiced, admitted, policy,
                                  start_deployment, synced_on)
from sluiced_proc import SluicedProc, wait_until


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    tls = TlsFiles(Pki(tmp_path_factory.mktemp("pki")))
    dep, started = start_deployment(tmp_path_factory.mktemp("sentinel-tls"), tls)
    dep["tls"] = tls
    yield dep
    for p in reversed(started):
        p.stop()


def nodes_of(dep):
    return [dep["master"], dep["replica"]] + dep["sentinels"]


def test_the_harness_serves_only_tls(deployment):
    for p in nodes_of(deployment):
        assert_tls_only(deployment["tls"], p.port)
    assert all(s.sees_everyone() for s in deployment["sentinels"])
    assert deployment["replica"].info("replication")["master_link_status"] == "up"


HYBRID_RULES = """\
domain: hy
descriptors:
  - key: fw
    limits: [{algorithm: fixed_window, requests: 100, period: 1h}]
"""


def test_hybrid_store_behind_sentinel_over_tls(deployment, tmp_path):
    """The hybrid store asks the sentinels over TLS (with the client
    certificate) which master to sync with, and syncs there over TLS:
    the counts two daemons admitted are on the master."""
    tls = deployment["tls"]
    addrs = ",".join(f"127.0.0.1:{s.port}" for s in deployment["sentinels"])
    store = f"""  type: hybrid
  redis:
    sentinels: "{addrs}"
    master_name: {NAME}
    timeout: 100ms
{tls.store_yaml()}  hybrid:
    sync_interval: 50ms
    timeout: 200ms
"""
    fleet = [SluicedProc(tmp_path, n, store, HYBRID_RULES, workers=1) for n in ("ha", "hb")]
    try:
        for n in fleet:
            assert wait_until(lambda: n.metric("sluice_store_hybrid_workers_connected") == 1, 10)
        admitted = sum(fleet[i % 2].check("hy", "fw", "t") != "deny" for i in range(40))
        assert admitted == 40
        master = deployment["master"].client

        def counted():
            return sum(int(master.get(k) or 0) for k in master.keys("sluice:h1:*")
                       if not k.endswith(b":r"))
        assert wait_until(lambda: counted() == 40, 10), counted()
    finally:
        for n in fleet:
            n.stop()


def test_master_killed_under_load_fails_over_over_tls(deployment, tmp_path):
    tls, master, replica = deployment["tls"], deployment["master"], deployment["replica"]
    sentinels = deployment["sentinels"]
    old, new = f"127.0.0.1:{master.port}", f"127.0.0.1:{replica.port}"
    a = Sluiced(tmp_path, "a", sentinels, tls_yaml=tls.store_yaml())
    b = Sluiced(tmp_path, "b", sentinels, tls_yaml=tls.store_yaml())
    try:
        for s in (a, b):
            assert s.master() == old
            assert s.metric("sluice_store_up") == 1
        calls = master.evalsha_calls()
        assert admitted([a, b], "shared", "fw", "before", 60) == (50, {None})
        assert master.evalsha_calls() >= calls + 50  # decided in the master, over TLS
        assert a.add_rule("r1", SYNCED_RULE.format(n=1))["published"] is True
        assert synced_on(b, 1), "node B never served the rule added on A"

        answers, errors, stop = [], [], threading.Event()

        def load(node, domain):
            c = redis.Redis(port=node.port, socket_timeout=5)
            for i in range(10000):  # bounded in requests ...
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
            # ... and in time: the failover, then a little more load
            switched = wait_until(lambda: all(  # every worker of both nodes
                s.metric("sluice_store_redis_master_switches_total") == 2 for s in (a, b)), 40, 0.1)
            switched_at = time.monotonic()
            time.sleep(1)
        finally:
            stop.set()
            for t in threads:
                t.join()
        # the harness: the sentinels failed over to the replica
        named = sentinels[0].client.execute_command("SENTINEL", "get-master-addr-by-name", NAME)
        assert [x.decode() for x in named] == ["127.0.0.1", str(replica.port)], named
        assert switched, (a.health(), b.health())
        assert errors == []
        assert max(lat for _, _, lat, _ in answers) <= BOUND_S
        after = [(d, r, t0) for d, r, _, t0 in answers if t0 > killed + 0.1]
        policies = {"open": b"allow", "closed": b"deny", "shared": b"local"}
        for domain, expected in policies.items():
            mine = [r for d, r, _ in after if d == domain and policy(r) is not None]
            assert mine, f"no {domain} answer by its policy while the master was down"
            assert all(policy(r) == expected for r in mine), (domain, mine[:3])
        assert all(t0 < switched_at + 2 for d, r, t0 in after if policy(r) is not None)

        # The new master decides, for both nodes, exactly, over TLS.
        calls = replica.evalsha_calls()
        assert wait_until(lambda: a.ready() and b.ready(), 10)
        assert admitted([a, b], "shared", "tb", "after", 40) == (30, {None})
        assert replica.evalsha_calls() >= calls + 30
        for s in (a, b):
            assert s.metric("sluice_store_up") == 1
            assert s.metric(f'sluice_store_redis_node_up{{node="{new}"}}') == 1
            h = s.health()
            assert h["state"] == "up" and h["nodes"][0]["address"] == new
            assert h["sentinel"]["workers_subscribed"] == 2
        assert a.add_rule("r2", SYNCED_RULE.format(n=2))["published"] is True
        assert synced_on(b, 2), "node B never served the rule added on A after the failover"
        assert a.proc.poll() is None and b.proc.poll() is None  # 0 crashes
    finally:
        a.stop()
        b.stop()
    assert a.proc.returncode == 0 and b.proc.returncode == 0
    for s in (a, b):
        assert len(s.lines(rf"master '{NAME}' is now {re.escape(new)}, was {re.escape(old)}")) == 1
