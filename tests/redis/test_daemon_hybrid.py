# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_daemon_hybrid.py - three sluiced with `store.type: hybrid` on one
real Redis, end to end (redis-py over RESP, the test clock frozen).

What it shows, loosely (the exact bound is tested with the test clock in
test_hybrid_store.c; the comparison of sync intervals is in the accuracy
benchmark):
  - a generated load spread at random over the three daemons, in rounds
    with a pause longer than the sync interval between them, admits at
    least the limit and at most the limit plus the bound of
    docs/distributed.md (what the other nodes admitted in two sync
    intervals: here at most two rounds);
  - decisions are local (the metrics count them) while the counts reach
    Redis (sync calls, and the fleet's total in Redis is what was admitted);
  - a sliding_log limit is decided through the Redis path: exactly its
    limit across the three daemons;
  - Redis frozen with SIGSTOP: the daemons keep answering from their own
    tables, keep the deltas, and push them once Redis is resumed, saying
    so in the log (store.hybrid_stalled, store.hybrid_back); no crash.

The tests that need only "a Redis" run three times (the `rds` fixture):
on one redis-server, behind Sentinel (store.redis.sentinels, master_name:
the harness of test_sentinel_daemon.py, a master, its replica and three
sentinels) and on a 3-master Redis Cluster (store.redis.cluster: the
harness of tests/redis_cluster/test_cluster_daemon.py, masters without
replicas); each deployment is shared by the module and emptied before
each test. Freezing or stopping the master behind Sentinel is a failover,
and on a cluster without replicas the loss of a third of the slots; the
test_redis_frozen_then_resumed and the Redis-gone tests run on one Redis
only. The failover behind Sentinel is
test_failover_under_load_keeps_the_bound tests instead: the master
killed, or demoted by SENTINEL FAILOVER, under a bounded load; the bound
holds and the counts go on on the new master.
"""
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from sluiced_proc import RedisServer, SluicedProc, wait_until
from test_sentinel_daemon import NAME, start_deployment

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "redis_cluster"))
from test_cluster_daemon import Cluster  # noqa: E402

SYNC_MS = 50
ROUND = 20  # requests per round, over the three daemons

RULES = """\
domain: hy
descriptors:
  - key: fw
    limits: [{algorithm: fixed_window, requests: 100, period: 1h}]
  - key: log
    limits: [{algorithm: sliding_log, requests: 10, period: 1h}]
  - key: free
    limits: [{algorithm: fixed_window, requests: 1000000, period: 1h}]
  - key: rs
    limits: [{algorithm: fixed_window, requests: 10, period: 1h}]
"""


def counters_total(client):
    """The sum of the hybrid store's counters (not the reset markers,
    "<prefix>:h1:<hash>:r", which hold a time)."""
    return sum(int(client.get(k) or 0) for k in client.keys("sluice:h1:*")
               if not k.endswith(b":r"))


class Redis(RedisServer):
    """One redis-server: the Redis the daemons sync with."""
    sentinel = False

    def redis_yaml(self):
        return f"    port: {self.port}\n"

    def keys(self, pattern):
        return self.client.keys(pattern)

    def total(self):
        return counters_total(self.client)


class OnCluster:
    """A Redis Cluster (test_cluster_daemon.Cluster): the daemons are given
    one master and the others as seeds; counters are summed over the
    masters."""
    sentinel = True  # what one_redis_only skips

    def __init__(self, cluster):
        self.cluster = cluster

    def redis_yaml(self):
        seed, *more = [p for p, _ in self.cluster.nodes]
        nodes = ",".join(f"127.0.0.1:{p}" for p in more)
        return f'    port: {seed}\n    cluster: true\n    nodes: "{nodes}"\n'

    def masters(self):
        """The clients of the nodes that are masters now (a master left
        without slots becomes a replica of the one that took them)."""
        out = []
        for p, proc in self.cluster.nodes:
            if proc.poll() is not None:
                continue  # killed
            c = self.cluster.client(p)
            if c.info("replication")["role"] == "master":
                out.append(c)
        return out

    def flushall(self):
        for c in self.masters():
            c.flushall()

    def keys(self, pattern):
        return [k for c in self.masters() for k in c.keys(pattern)]

    def total(self):
        return sum(counters_total(c) for c in self.masters())

    def counters_per_node(self):
        return [counters_total(c) for c in self.masters()]


class BehindSentinel:
    """The master the sentinels of `dep` (start_deployment) name, as the
    daemons find it: `client` is the current master's."""
    sentinel = True

    def __init__(self, dep):
        self.dep = dep

    def master(self):
        for r in (self.dep["master"], self.dep["replica"]):
            try:
                if r.proc.poll() is None and r.info("replication")["role"] == "master":
                    return r
            except Exception:  # noqa: BLE001 - a server gone or not answering yet
                pass
        raise AssertionError("no master")

    @property
    def client(self):
        return self.master().client

    def redis_yaml(self):
        addrs = ",".join(f"127.0.0.1:{s.port}" for s in self.dep["sentinels"])
        return f'    sentinels: "{addrs}"\n    master_name: {NAME}\n'

    def flushall(self):
        self.client.flushall()

    def keys(self, pattern):
        return self.client.keys(pattern)

    def total(self):
        return counters_total(self.client)


class Hybrid(SluicedProc):
    def __init__(self, tmp_path, name, rds, workers=1, sync_ms=SYNC_MS):
        store = f"""  type: hybrid
  redis:
{rds.redis_yaml()}    timeout: 20ms
  hybrid:
    sync_interval: {sync_ms}ms
    timeout: 100ms
"""
        # info: the store's line that Redis is back is one
        super().__init__(tmp_path, name, store, RULES, workers=workers, log_level="info")


@pytest.fixture(scope="module")
def sentinel_deployment(tmp_path_factory):
    dep, started = start_deployment(tmp_path_factory.mktemp("sentinel"))
    yield dep
    for p in reversed(started):
        p.stop()


@pytest.fixture(scope="module")
def cluster_deployment():
    c = Cluster()
    yield c
    c.stop()


@pytest.fixture(params=["redis", "sentinel", "cluster"])
def rds(request):
    if request.param == "redis":
        r = Redis()
        yield r
        r.stop()
        return
    if request.param == "sentinel":
        r = BehindSentinel(request.getfixturevalue("sentinel_deployment"))
    else:
        r = OnCluster(request.getfixturevalue("cluster_deployment"))
    r.flushall()  # what the tests before left
    yield r


def one_redis_only(rds):
    if rds.sentinel:
        pytest.skip("behind Sentinel the master frozen or stopped is a failover "
                    "(test_failover_under_load_keeps_the_bound); on a cluster without "
                    "replicas a third of the slots lost")


@pytest.fixture
def fleet(tmp_path, rds):
    nodes = [Hybrid(tmp_path, n, rds) for n in ("a", "b", "c")]
    for n in nodes:
        assert wait_until(lambda: n.metric("sluice_store_hybrid_workers_connected") == 1)
    yield nodes
    for n in nodes:
        n.stop()


def rounds(nodes, key, value, n_rounds, rnd):
    admitted = 0
    for _ in range(n_rounds):
        for _ in range(ROUND):
            admitted += rnd.choice(nodes).check("hy", key, value) != "deny"
        time.sleep(3 * SYNC_MS / 1000)  # every node syncs (real-time tick)
    return admitted


def test_three_daemons_stay_within_the_bound(rds, fleet):
    rnd = random.Random(18)
    admitted = rounds(fleet, "fw", "x", 15, rnd)  # 300 offered for a limit of 100
    bound = 2 * ROUND
    print(f"admitted {admitted} of {15 * ROUND} for a limit of 100 (bound {100 + bound})")
    assert 100 <= admitted <= 100 + bound
    time.sleep(0.3)
    assert rds.total() == admitted  # every admitted request reached Redis
    checks = sum(n.metric("sluice_store_hybrid_checks_total") for n in fleet)
    assert checks >= 15 * ROUND  # decided locally
    assert all(n.metric("sluice_store_hybrid_sync_calls_total") > 0 for n in fleet)


def test_sliding_log_goes_through_redis(rds, fleet):
    rnd = random.Random(7)
    verdicts = [rnd.choice(fleet).check("hy", "log", "y") for _ in range(30)]
    assert sum(v != "deny" for v in verdicts) == 10
    assert sum(n.metric("sluice_store_hybrid_redis_path_total") for n in fleet) >= 30


def test_redis_frozen_then_resumed(rds, fleet):
    one_redis_only(rds)
    rnd = random.Random(3)
    before = rds.total()
    rds.proc.send_signal(signal.SIGSTOP)
    try:
        admitted = rounds(fleet, "free", "z", 5, rnd)
        assert admitted == 5 * ROUND  # local decisions go on
        time.sleep(0.5)
        assert sum(n.metric("sluice_store_hybrid_kept") for n in fleet) > 0
        assert all(n.alive() for n in fleet)
        # each daemon says its Redis stalled, once (as the Redis store does)
        for n in fleet:
            assert wait_until(lambda: "warn store.hybrid_stalled hybrid: redis 127.0.0.1:"
                              in n.log_text(), seconds=15), n.log_text()[-2000:]
            assert n.log_text().count("store.hybrid_stalled") == 1, n.log_text()[-2000:]
    finally:
        rds.proc.send_signal(signal.SIGCONT)
    assert wait_until(lambda: all(n.metric("sluice_store_hybrid_kept") == 0 for n in fleet),
                      seconds=15)
    assert all(wait_until(lambda: "info store.hybrid_back hybrid: redis 127.0.0.1:"
                          in n.log_text(), seconds=15) for n in fleet)
    # nothing lost (a call that timed out while Redis was frozen may have
    # run when it woke: counted twice, never lost)
    assert rds.total() - before >= admitted
    assert all(n.alive() for n in fleet)


def fresh_check(node, key, value):
    """One check on a connection of its own: the kernel spreads such
    connections over the node's workers."""
    status, body = node.post("/v1/check", {"domain": "hy", "descriptors": [{key: value}]})
    assert status in (200, 429), (status, body)
    return body["decision"]


def reset(node, key, value):
    req = urllib.request.Request(
        f"http://127.0.0.1:{node.http}/v1/keys?domain=hy&{key}={value}", method="DELETE",
        headers=node.admin_headers())
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200


def test_a_reset_clears_every_worker_of_the_node(tmp_path, rds):
    """Each worker of a hybrid node keeps its own table (synced through
    Redis like separate nodes): a reset served by one worker must clear
    the key on the others too, or every request they take stays denied."""
    node = Hybrid(tmp_path, "w", rds, workers=2)
    try:
        assert wait_until(lambda: node.metric("sluice_store_hybrid_workers_connected") == 2)
        admitted = sum(fresh_check(node, "rs", "k") != "deny" for _ in range(40))
        assert 10 <= admitted <= 20  # each worker admits until the syncs tell it the total
        time.sleep(4 * SYNC_MS / 1000)  # both workers have the fleet's total
        assert all(fresh_check(node, "rs", "k") == "deny" for _ in range(12))
        reset(node, "rs", "k")
        # 8 of 10 on fresh connections, whichever workers take them: all
        # admitted (before, the worker that did not serve the reset denied
        # every one it took: all 8 landing on the other is 1 in 256)
        verdicts = [fresh_check(node, "rs", "k") for _ in range(8)]
        assert verdicts == ["allow"] * 8, verdicts
    finally:
        node.stop()


def test_a_reset_reaches_every_node(rds, fleet):
    """A reset served by one node deletes the fleet's counters and leaves
    a marker every other node acts on at its next sync: the key is whole
    again on every node (before, the others went on denying until the
    window was over), and what is counted after the reset is synced as
    before."""
    rnd = random.Random(5)
    rounds(fleet, "rs", "f", 3, rnd)  # 60 offered for a limit of 10
    assert all(n.check("hy", "rs", "f") == "deny" for n in fleet for _ in range(2))
    reset(fleet[0], "rs", "f")
    time.sleep(4 * SYNC_MS / 1000)  # every node syncs, sees the marker
    assert rds.total() == 0  # the counters are gone
    assert len(rds.keys("sluice:h1:*:r")) == 1
    # 3 per node, 9 of the 10: every node admits again
    verdicts = [n.check("hy", "rs", "f") for n in fleet for _ in range(3)]
    assert verdicts == ["allow"] * 9, verdicts
    assert fleet[0].metric("sluice_store_hybrid_fleet_resets_total") == 1
    assert sum(n.metric("sluice_store_hybrid_fleet_resets_applied_total") for n in fleet[1:]) >= 2
    # after the reset the fleet counts as before: 9 admitted, then at most
    # the limit's last one plus the bound of two rounds
    time.sleep(3 * SYNC_MS / 1000)
    admitted = 9 + rounds(fleet, "rs", "f", 3, rnd)
    assert 10 <= admitted <= 10 + 2 * ROUND, admitted
    time.sleep(0.3)
    assert rds.total() == admitted


def test_a_reset_without_redis_is_local_and_said(tmp_path, rds):
    """Redis gone: the reset still clears the node's own tables, and the
    log and a counter say the other nodes were not told."""
    one_redis_only(rds)
    node = Hybrid(tmp_path, "solo", rds)
    try:
        assert wait_until(lambda: node.metric("sluice_store_hybrid_workers_connected") == 1)
        assert sum(node.check("hy", "rs", "g") != "deny" for _ in range(12)) == 10
        rds.stop()
        assert wait_until(lambda: node.metric("sluice_store_hybrid_workers_connected") == 0)
        reset(node, "rs", "g")
        assert node.check("hy", "rs", "g") == "allow"
        assert node.metric("sluice_store_hybrid_fleet_resets_unsent_total") == 1
        assert node.metric("sluice_store_hybrid_fleet_resets_total") == 0
        assert wait_until(lambda: "store.hybrid_reset_local" in node.log_text())
        assert node.alive()
    finally:
        node.stop()


@pytest.mark.parametrize("how", ["kill", "demote"])
def test_failover_under_load_keeps_the_bound(tmp_path, how):
    """Behind Sentinel, the master killed (SIGKILL) or demoted (SENTINEL
    FAILOVER: the old master becomes a replica and answers -READONLY)
    while three daemons take a bounded load: the daemons decide locally
    meanwhile and keep their deltas, find the new master through the
    sentinels, and push what they kept there. The fleet admits at least
    the limit and at most the limit plus the bound of two rounds plus what
    was offered while the master changed (docs/distributed.md: a failover
    costs at most what was admitted meanwhile), and the new master holds
    every admitted request."""
    dep, started = start_deployment(tmp_path)
    rds = BehindSentinel(dep)
    old, new = dep["master"], dep["replica"]
    nodes = []
    try:
        nodes = [Hybrid(tmp_path, n, rds) for n in ("a", "b", "c")]
        for n in nodes:
            assert wait_until(lambda: n.metric("sluice_store_hybrid_workers_connected") == 1)
        rnd = random.Random(11)
        admitted = rounds(nodes, "fw", "fo", 4, rnd)  # 80 of a limit of 100
        assert admitted == 4 * ROUND
        # every admitted request is on the master and its replica
        assert wait_until(lambda: counters_total(old.client) == admitted, 10)
        assert wait_until(lambda: counters_total(new.client) == admitted, 10)
        if how == "kill":
            old.stop()
        else:
            dep["sentinels"][0].client.execute_command("SENTINEL", "FAILOVER", NAME)
        during = 30  # the load while the master changes: bounded
        admitted += sum(rnd.choice(nodes).check("hy", "fw", "fo") != "deny"
                        for _ in range(during))
        assert wait_until(lambda: new.info("replication")["role"] == "master", 40, 0.1), \
            "no failover"
        # every daemon syncs with the new master and has pushed what it kept
        assert wait_until(lambda: all(
            n.metric("sluice_store_hybrid_workers_connected") == 1 and
            n.metric("sluice_store_hybrid_kept") == 0 for n in nodes), 40, 0.1)
        time.sleep(0.3)
        assert counters_total(new.client) >= admitted  # nothing lost
        at_switch = counters_total(new.client)
        calls = new.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        admitted += rounds(nodes, "fw", "fo", 6, rnd)  # 120 more offered
        offered = 4 * ROUND + during + 6 * ROUND
        print(f"{how}: admitted {admitted} of {offered} for a limit of 100")
        assert 100 <= admitted <= 100 + 2 * ROUND + during
        # the counts go on on the new master: a key every check of which
        # is admitted (a demoted master would take a sync that only reads;
        # the first delta is refused there, -READONLY, and goes to the new
        # master)
        if how == "demote":  # Sentinel has made the old master a replica of the new one
            assert wait_until(lambda: old.info("replication")["role"] == "slave", 30, 0.1)
        free = rounds(nodes, "free", "fo", 3, rnd)
        assert free == 3 * ROUND
        # Killed, the old master took nothing after the failover began: the
        # new one holds every admitted request. Demoted, it took the syncs
        # sent between the promotion and its conversion to a replica (or the
        # node hearing +switch-master from its sentinel), lost then:
        # the new one holds at least what came before and after.
        held = admitted + free if how == "kill" else 4 * ROUND + free
        assert wait_until(lambda: counters_total(new.client) >= held, 10), \
            (counters_total(new.client), held)
        stats = new.info("commandstats")
        assert stats.get("cmdstat_evalsha", {}).get("calls", 0) > calls
        assert all(n.alive() for n in nodes)
    finally:
        for n in nodes:
            n.stop()
        for p in reversed(started):
            p.stop()


def cluster_only(rds):
    if not isinstance(rds, OnCluster):
        pytest.skip("a cluster's slots")


def node_id(cluster, port):
    return cluster.client(port).execute_command("CLUSTER", "MYID").decode()


def test_keys_of_every_slot_reach_their_master(rds, fleet):
    """On a cluster each key's counter and reset marker share a slot (the
    hash tag of their names), every master gets the keys of its slots,
    and each sync call names keys of one slot: no call is refused."""
    cluster_only(rds)
    rnd = random.Random(23)
    admitted = 0
    for _ in range(4):
        for _ in range(ROUND * 3):
            admitted += rnd.choice(fleet).check("hy", "free", f"v{rnd.randrange(40)}") != "deny"
        time.sleep(3 * SYNC_MS / 1000)
    assert admitted == 4 * ROUND * 3
    assert wait_until(lambda: rds.total() == admitted, 5), (rds.total(), admitted)
    assert all(n > 0 for n in rds.counters_per_node()), rds.counters_per_node()
    for k in rds.keys("sluice:h1:*"):
        assert b"{" in k and k.index(b"}") - k.index(b"{") == 33, k  # {32 hex}
    assert sum(n.metric("sluice_store_hybrid_sync_failures_total") for n in fleet) == 0


def test_slots_moved_under_load_keep_the_counts(rds, fleet):
    """Every slot of one master resharded to another (MIGRATE, then the
    slots' owner changes): the daemons' syncs of those slots are answered
    MOVED (or ASK while they move) and sent again where Redis says, the map
    is asked again and the next syncs go to the new owner. Nothing admitted
    is lost and the bound holds."""
    cluster_only(rds)
    c = rds.cluster
    rnd = random.Random(29)
    values = [f"m{i}" for i in range(30)]
    admitted = 0
    for _ in range(2):
        for _ in range(ROUND * 3):
            admitted += rnd.choice(fleet).check("hy", "free", rnd.choice(values)) != "deny"
        time.sleep(3 * SYNC_MS / 1000)
    assert wait_until(lambda: rds.total() == admitted, 5)
    (src, _), (dst, _) = c.nodes[0], c.nodes[1]
    n_slots = sum(e[1] - e[0] + 1 for e in c.client(src).execute_command("CLUSTER", "SLOTS")
                  if e[2][1] == src)
    mover = subprocess.Popen(
        ["redis-cli", "--cluster", "reshard", f"127.0.0.1:{src}", "--cluster-from",
         node_id(c, src), "--cluster-to", node_id(c, dst), "--cluster-slots", str(n_slots),
         "--cluster-yes"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while mover.poll() is None:  # load while the slots move
            for _ in range(ROUND):
                admitted += rnd.choice(fleet).check("hy", "free", rnd.choice(values)) != "deny"
            time.sleep(SYNC_MS / 1000)
    finally:
        mover.wait(60)
    assert mover.returncode == 0
    for _ in range(2):
        for _ in range(ROUND * 3):
            admitted += rnd.choice(fleet).check("hy", "free", rnd.choice(values)) != "deny"
        time.sleep(3 * SYNC_MS / 1000)
    # the source master serves no slot now and holds no counter (or has
    # become a replica of the master that took its last slot)
    assert wait_until(lambda: c.client(src).info("replication")["role"] == "slave" or
                      counters_total(c.client(src)) == 0, 10)
    # every admitted request is on the cluster (a call lost in the move
    # may have run before it was lost: counted twice, never fewer)
    assert wait_until(lambda: all(n.metric("sluice_store_hybrid_kept") == 0 for n in fleet), 15)
    assert wait_until(lambda: rds.total() >= admitted, 10), (rds.total(), admitted)
    assert all(n.metric("sluice_store_hybrid_workers_connected") == 1 for n in fleet)
    # the syncs sent to the old owner were refused (MOVED, ASK while the
    # slots moved) and sent again where Redis said, not lost
    assert sum(n.metric("sluice_store_hybrid_sync_redirects_total") for n in fleet) > 0
    # the bound on a limit after the move: the fw key's fleet stays within it
    got = rounds(fleet, "fw", "mv", 15, rnd)
    assert 100 <= got <= 100 + 2 * ROUND, got


def test_a_stopping_node_pushes_what_it_kept(tmp_path, rds):
    """A node that syncs rarely (an hour) keeps what it admitted; stopped,
    it pushes it over blocking connections: to the one Redis, to the
    master the sentinels name, or on a cluster to each key's master."""
    node = Hybrid(tmp_path, "stop", rds, sync_ms=3600000)
    try:
        assert wait_until(lambda: node.metric("sluice_store_hybrid_workers_connected") == 1)
        admitted = sum(node.check("hy", "free", f"s{i % 25}") != "deny" for i in range(50))
        assert admitted == 50
        # the first check's sync only: the next is an hour away
        kept = node.metric("sluice_store_hybrid_kept")
        assert kept >= 40 and rds.total() == admitted - kept, (kept, rds.total())
    finally:
        node.stop()
    assert rds.total() == admitted


def test_cluster_master_killed_fails_over_keeps_the_bound(tmp_path):
    """The cluster harness makes masters only; a master whose slots are
    all resharded away becomes a replica of the master that took them
    (replica migration), which gives that master a replica. That master
    killed under a bounded load, its replica promoted (CLUSTER FAILOVER
    TAKEOVER: of two masters, one left cannot elect it), the daemons
    keep the deltas of its slots meanwhile (the other master's keys sync
    on), read the new map and push them to the promoted replica. A limit
    on one of its slots stays within the bound plus what was offered
    during the failover, and every admitted request is on the cluster."""
    c = Cluster()
    rds = OnCluster(c)
    nodes = []
    try:
        (src, _), (dst, dst_proc) = c.nodes[0], c.nodes[1]
        n_slots = sum(e[1] - e[0] + 1 for e in
                      c.client(src).execute_command("CLUSTER", "SLOTS") if e[2][1] == src)
        subprocess.run(
            ["redis-cli", "--cluster", "reshard", f"127.0.0.1:{src}", "--cluster-from",
             node_id(c, src), "--cluster-to", node_id(c, dst), "--cluster-slots", str(n_slots),
             "--cluster-yes"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        replica = c.client(src)
        assert wait_until(lambda: replica.info("replication")["role"] == "slave" and
                          replica.info("replication").get("master_link_status") == "up", 30), \
            "no replica migration: the harness gives no replica"
        master = c.client(dst)
        nodes = [Hybrid(tmp_path, n, rds) for n in ("a", "b", "c")]
        for n in nodes:
            assert wait_until(lambda: n.metric("sluice_store_hybrid_workers_connected") == 1, 10)
        # a value of the fw key whose counter is on the master to kill
        rnd = random.Random(31)
        value = None
        for i in range(20):
            before = counters_total(master)
            nodes[0].check("hy", "fw", f"k{i}")
            assert wait_until(lambda: rds.total() == i + 1, 5)
            if counters_total(master) > before:
                value = f"k{i}"
                break
        assert value is not None
        rds.flushall()
        time.sleep(4 * SYNC_MS / 1000)  # every node has seen the counters gone
        # (a counter that restarted is taken as all new: the tables keep 1)
        admitted = 1 + rounds(nodes, "fw", value, 4, rnd)  # about 80 of a limit of 100
        free = rounds(nodes, "free", "c0", 2, rnd) + rounds(nodes, "free", "c1", 2, rnd)
        assert wait_until(lambda: rds.total() >= admitted - 1 + free, 5)

        def replicated():
            return (replica.info("replication")["slave_repl_offset"] ==
                    master.info("replication")["master_repl_offset"])
        assert wait_until(replicated, 10)
        dst_proc.kill()
        dst_proc.wait()
        # two masters left, one of them dead: no majority to elect the
        # replica, so the operator's takeover promotes it
        replica.execute_command("CLUSTER", "FAILOVER", "TAKEOVER")
        during = 30
        admitted += sum(rnd.choice(nodes).check("hy", "fw", value) != "deny"
                        for _ in range(during))
        assert wait_until(lambda: replica.info("replication")["role"] == "master", 30, 0.1), \
            "the replica was not promoted"
        assert wait_until(lambda: all(
            n.metric("sluice_store_hybrid_workers_connected") == 1 and
            n.metric("sluice_store_hybrid_kept") == 0 for n in nodes), 30, 0.1)
        admitted += rounds(nodes, "fw", value, 6, rnd)
        print(f"admitted {admitted} for a limit of 100 (bound {100 + 2 * ROUND + during})")
        assert 100 <= admitted <= 100 + 2 * ROUND + during
        more = rounds(nodes, "free", "c2", 2, rnd)
        # the killed master's data was on its replica: nothing lost
        assert wait_until(lambda: rds.total() >= admitted + free + more - 1, 10), \
            (rds.total(), admitted, free, more)
        assert all(n.alive() for n in nodes)
    finally:
        for n in nodes:
            n.stop()
        c.stop()
