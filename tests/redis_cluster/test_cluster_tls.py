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
    user nothing but the optional CONFIG GET on any node.
"""
import pytest

from test_cluster_daemon import ADMITTED, Cluster, Sluiced

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
