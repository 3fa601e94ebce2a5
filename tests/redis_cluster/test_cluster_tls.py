# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_cluster_tls.py - sluiced on a Redis Cluster whose every connection
is TLS, end to end.

The 3-master cluster of test_cluster_daemon.py (real redis-server
processes on free loopback ports, formed by `redis-cli --cluster create
--tls`, killed by PID at the end), every node serving only TLS with a
client certificate required (`port 0`, `tls-port`, `tls-auth-clients
yes`), its cluster bus over TLS too (`tls-cluster yes`), and the ACL
users of tests/redis/redis_tls.py (sluiced logs in as the user limited to
what the store sends, CLUSTER SLOTS and ASKING included; the default user
is off); certificates made by the test. Two sluiced with
`store.redis.cluster: true` and one `store.redis.tls` for every node. What
it shows:
  - the harness: every node answers redis-cli over TLS with the client
    certificate and refuses clear text, a client without a certificate
    and one trusting another CA; CLUSTER SLOTS gives the nodes' TLS ports;
  - the two sluiced admit together exactly the limit of every algorithm
    (concurrency aside: not supported on a cluster), with the keys spread
    over the masters (so across slots, each master reached over TLS), no
    answer by a failure policy, the slot map read, and the ACL refused the
    user nothing but the optional CONFIG GET on any node;
  - two sluiced with the hybrid store on the same cluster: the slot map
    read and every master synced with over TLS as the ACL user, the
    counts of keys spread over the masters all in the cluster.
"""
import random
import time

import pytest

from test_cluster_daemon import ADMITTED, Cluster, Sluiced
from sluiced_proc import SluicedProc, wait_until  # noqa: E402

from redis_tls import (ADMIN_PASSWORD, ADMIN_USER, SLUICE_PASSWORD, SLUICE_USER, Pki,  # noqa: E402
                       TlsFiles, acl_args, assert_tls_only)


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return TlsFiles(Pki(tmp_path_factory.mktemp("pki")))


@pytest.fixture
def cluster(tls):
    c = Cluster(tls=tls, args=acl_args(), auth=(ADMIN_USER, ADMIN_PASSWORD))
    yield c
    c.stop()


@pytest.fixture
def nodes(tmp_path, cluster, tls):
    started = []

    def start(name):
        extra = f"    user: {SLUICE_USER}\n    password: {SLUICE_PASSWORD}\n" + tls.store_yaml()
        s = Sluiced(tmp_path, name, cluster, extra=extra)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


def refused(cluster):
    """What the ACL refused the sluice user, on any node."""
    return {e["object"] for p, _ in cluster.nodes for e in cluster.client(p).acl_log()
            if e["username"] == SLUICE_USER}


def test_the_harness_serves_only_tls(cluster, tls):
    ports = {p for p, _ in cluster.nodes}
    for p in ports:
        assert_tls_only(tls, p, "--user", ADMIN_USER, "--pass", ADMIN_PASSWORD)
    slots = cluster.client(min(ports)).execute_command("CLUSTER", "SLOTS")
    assert {int(s[2][1]) for s in slots} == ports, slots  # the TLS ports, the only ones
    assert sum(int(s[1]) - int(s[0]) + 1 for s in slots) == 16384


def test_two_sluiced_on_a_tls_cluster_never_exceed_any_limit(cluster, nodes):
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
        assert s.metric("sluice_store_up") == 1
    assert refused(cluster) <= {"config|get"}, refused(cluster)


HYBRID_RULES = """\
domain: hy
descriptors:
  - key: free
    limits: [{algorithm: fixed_window, requests: 1000000, period: 1h}]
"""


def test_hybrid_store_on_a_tls_cluster(cluster, tls, tmp_path):
    seed, *more = [p for p, _ in cluster.nodes]
    store = f"""  type: hybrid
  redis:
    port: {seed}
    cluster: true
    nodes: "{",".join(f"127.0.0.1:{p}" for p in more)}"
    user: {SLUICE_USER}
    password: {SLUICE_PASSWORD}
{tls.store_yaml()}  hybrid:
    sync_interval: 50ms
    timeout: 200ms
"""
    fleet = [SluicedProc(tmp_path, n, store, HYBRID_RULES, workers=1) for n in ("ha", "hb")]
    try:
        for n in fleet:
            assert wait_until(lambda: n.metric("sluice_store_hybrid_workers_connected") == 1, 10)
        rnd = random.Random(3)
        admitted = sum(rnd.choice(fleet).check("hy", "free", f"t{rnd.randrange(30)}") != "deny"
                       for _ in range(90))
        assert admitted == 90
        time.sleep(0.2)

        def per_node():
            out = []
            for p, _ in cluster.nodes:
                c = cluster.client(p)
                out.append(sum(int(c.get(k) or 0) for k in c.keys("sluice:h1:*")
                               if not k.endswith(b":r")))
            return out
        assert wait_until(lambda: sum(per_node()) == 90, 10), per_node()
        assert all(n > 0 for n in per_node()), per_node()  # every master, over TLS
        assert sum(n.metric("sluice_store_hybrid_sync_failures_total") for n in fleet) == 0
        assert refused(cluster) <= {"config|get"}, refused(cluster)
    finally:
        for n in fleet:
            n.stop()
