# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_daemon_redis_tls.py - sluiced with its Redis store over TLS
(`store.redis.tls`), end to end.

Real processes only, on free loopback ports, killed by PID at the end:
redis-server serving only TLS (`--port 0 --tls-port`, a client
certificate required: `--tls-auth-clients yes`), its only account for
sluiced the ACL user of redis_tls.py (the commands the store sends and its
scripts call, on sluice:* keys and channels; no CONFIG, no MODULE; the
default user off), with the sluice-redis module loaded for the module
engine ($SL_REDIS_MODULE must name it: tests/CMakeLists.txt passes the
built one; nothing is skipped), and sluiced processes driven with
redis-py over RESP and with HTTP. The certificates are made by the test
(redis_tls.py, conftest_tls.Pki). What it shows:
  - the harness itself: the server answers redis-cli over TLS with the
    client certificate, and refuses clear text, a client without a
    certificate and a client trusting another CA; the ACL user is refused
    CONFIG, MODULE and what is not Sluice's; docs/distributed.md gives
    this very ACL;
  - for each engine (module, function, script): two sluiced over TLS as
    the ACL user admit together exactly the limit of every algorithm, no
    answer by a failure policy, Redis counted the engine's commands, and
    the ACL refused the user nothing but the optional CONFIG GET;
  - for each engine: the same random trace of checks (with costs and the
    test clock moved between them) through a sluiced with the memory store
    and one with Redis over TLS gives the same replies, field by field;
  - rules written through node A's admin API reach node B over TLS
    (store.redis.rules_sync: EVAL, HGETALL, SUBSCRIBE);
  - two sluiced with the hybrid store (store.type: hybrid) over TLS as
    the ACL user: every worker connected, their counts reach Redis (its
    keys hold what was admitted), a sliding_log limit decided through the
    Redis path is exact across them;
  - a Redis that requires client certificates: a sluiced without
    `cert_file` is refused - its checks are answered by the failure
    policies (the reply says which), /readyz is not "ready", sluice_store_up
    is 0, the log names the server and says TLS failed, Redis saw no
    decision; the same sluiced configuration with `cert_file`/`key_file`
    is accepted and Redis decides;
  - a server the configuration does not trust is refused the same way:
    a CA that did not sign its certificate, `tls: {}` (the system's trust
    store), a `server_name` its certificate does not carry; it is
    accepted with `server_name: localhost` (a DNS SAN of its certificate)
    and, with the wrong CA, with `verify: false`;
  - a client certificate the server does not accept (another CA signed
    it), replaced on disk by a good one (renamed over it, as a rotation
    does): the same sluiced process, not restarted, reconnects with the
    new one and Redis decides again.

The connection code is in store/redis/link/ (rlink.h). Timing figures are
not measured here.
"""
import json
import os
import pathlib
import random
import re
import shutil
import time
import urllib.request

import pytest
import redis

from redis_tls import (ADMIN_PASSWORD, ADMIN_USER, MODULE_COMMANDS, SLUICE_ACL, SLUICE_PASSWORD,
                       SLUICE_USER, Pki, TlsFiles, acl_args, assert_tls_only, cli_ping)
from sluiced_proc import RedisServer, SluicedProc, wait_until

MODULE = os.environ.get("SL_REDIS_MODULE")
assert MODULE, "SL_REDIS_MODULE must name sluice-redis.so"

TIMEOUT_MS = 200  # Redis decides every check while it is up, also under a sanitizer
ENGINES = ("module", "function", "script")
# the commands that decide, per engine (INFO commandstats)
DECIDES = {"module": "SLUICE.CHECK", "function": "fcall", "script": "evalsha"}

RULES = """\
domain: shared
descriptors:
  - key: tb
    limits: [{algorithm: token_bucket, requests: 40, period: 1m}]
  - key: warm
    limits: [{algorithm: token_bucket, requests: 2, period: 1s, warmup: 4s}]
  - key: gcra
    limits: [{algorithm: gcra, requests: 30, period: 1m, burst: 15}]
  - key: leaky
    limits: [{algorithm: leaky_bucket, requests: 10, period: 1s, burst: 20, delay: 5}]
  - key: fw
    limits: [{algorithm: fixed_window, requests: 50, period: 1m}]
  - key: sw
    limits: [{algorithm: sliding_window, requests: 50, period: 1m}]
  - key: swb
    limits: [{algorithm: sliding_window, requests: 30, period: 1m, buckets: 60}]
  - key: log
    limits: [{algorithm: sliding_log, requests: 25, period: 1m}]
  - key: conc
    limits: [{algorithm: concurrency, requests: 12, lease: 1m}]
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
# key -> how many of many requests at one instant are admitted
ADMITTED = {"tb": 40, "warm": 1, "gcra": 16, "leaky": 21, "fw": 50, "sw": 50,
            "swb": 30, "log": 25, "conc": 12}

# The differential trace's limits: small, so that a short trace crosses
# them many times; the test clock moves between checks.
DIFF_RULES = """\
domain: d
descriptors:
  - key: tb
    limits: [{algorithm: token_bucket, requests: 5, period: 2s, burst: 8}]
  - key: warm
    limits: [{algorithm: token_bucket, requests: 4, period: 1s, warmup: 3s}]
  - key: gcra
    limits: [{algorithm: gcra, requests: 6, period: 3s, burst: 3}]
  - key: leaky
    limits: [{algorithm: leaky_bucket, requests: 4, period: 1s, burst: 6, delay: 3}]
  - key: fw
    limits: [{algorithm: fixed_window, requests: 7, period: 2s}]
  - key: sw
    limits: [{algorithm: sliding_window, requests: 7, period: 2s}]
  - key: swb
    limits: [{algorithm: sliding_window, requests: 9, period: 3s, buckets: 6}]
  - key: log
    limits: [{algorithm: sliding_log, requests: 5, period: 2s}]
  - key: two
    limits:
      - {name: two_fast, algorithm: fixed_window, requests: 3, period: 1s}
      - {name: two_slow, algorithm: token_bucket, requests: 8, period: 5s}
"""

SYNCED_RULE = """\
domain: synced
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 2}
"""


def policy(reply):
    """The failure policy an SL.CHECK reply says it was made by, or None
    (decided by the store: no fourth element)."""
    return reply[3] if len(reply) == 4 else None


class TlsRedis(RedisServer):
    """redis-server serving only TLS, with the ACL users of redis_tls.py
    (module: the sluice-redis module loaded, its commands granted)."""

    def __init__(self, tmp_path, tls, module=False):
        args = acl_args(module)
        env = dict(os.environ)
        if module:
            args = ["--loadmodule", MODULE] + args
            if os.environ.get("SL_REDIS_PRELOAD"):
                # the sanitizer build's module needs the sanitizer's runtime first
                env["LD_PRELOAD"] = os.environ["SL_REDIS_PRELOAD"]
        super().__init__(args=args, env=env, tls=tls, username=ADMIN_USER,
                         password=ADMIN_PASSWORD, logfile=tmp_path / "redis-{port}.log",
                         socket_timeout=5)

    def calls(self, cmd):
        return self.client.info("commandstats").get(f"cmdstat_{cmd}", {}).get("calls", 0)

    def decisions(self):
        return sum(self.calls(c) for c in DECIDES.values())

    def refused(self, user=SLUICE_USER):
        """What the ACL refused `user` (ACL LOG's objects: commands, keys, channels)."""
        return {e["object"] for e in self.client.acl_log() if e["username"] == user}


class Sluiced(SluicedProc):
    """sluiced with the Redis store at `rds` over TLS (tls_yaml: the lines
    of `store.redis.tls`, redis_tls.TlsFiles.store_yaml), as the ACL user."""

    def __init__(self, tmp_path, name, rds, tls_yaml, engine="auto", workers=2,
                 wait_ready=True, rules=RULES, more="", rules_extra=""):
        store = f"""  type: redis
  redis:
    host: 127.0.0.1
    port: {rds.port}
    user: {SLUICE_USER}
    password: {SLUICE_PASSWORD}
    engine: {engine}
    timeout: {TIMEOUT_MS}ms
    failure_policy: local
    policies: {{open: allow, closed: deny}}
{more}{tls_yaml}"""
        super().__init__(tmp_path, name, store, rules, workers, wait_ready=wait_ready,
                         rules_extra=rules_extra)

    def reply(self, domain, key, value, hits=1):
        return self.client.execute_command("SL.CHECK", domain, hits, key, value)

    def advance(self, ms):
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}/v1/debug/clock",
                                     method="POST", data=b'{"advance_ms": %d}' % ms,
                                     headers=self.admin_headers())
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 200

    def lines(self, pattern):
        return [ln for ln in self.log_text().splitlines() if re.search(pattern, ln)]

    def said_tls_failed(self, port):
        """A log line names the server and says its TLS failed (the
        handshake, the certificate, its verification)."""
        return [ln for ln in self.lines(rf"127\.0\.0\.1:{port}\b")
                if re.search(r"(?i)\btls\b|ssl|certificate|handshake|verif", ln)]


class Memory(SluicedProc):
    def __init__(self, tmp_path, name, rules):
        super().__init__(tmp_path, name, "  type: memory\n", rules, workers=1)

    reply = Sluiced.reply
    advance = Sluiced.advance


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def tls(pki):
    return TlsFiles(pki)


@pytest.fixture
def servers(tmp_path):
    """A factory of TLS redis-servers and sluiced processes, all stopped
    by PID at the end."""
    started = []

    class Make:
        @staticmethod
        def redis(tls, module=False):
            r = TlsRedis(tmp_path, tls, module)
            started.append(r)
            return r

        @staticmethod
        def sluiced(name, *args, **kw):
            d = tmp_path / name
            d.mkdir()
            s = Sluiced(d, name, *args, **kw)
            started.append(s)
            return s

        @staticmethod
        def memory(name, rules):
            d = tmp_path / name
            d.mkdir()
            s = Memory(d, name, rules)
            started.append(s)
            return s
    yield Make
    for s in reversed(started):
        s.stop()


def test_the_harness_serves_only_tls_to_the_acl_user(servers, tls):
    """Not sluiced: the servers the other tests use are what they claim."""
    for module in (False, True):
        r = servers.redis(tls, module)
        admin = ("--user", ADMIN_USER, "--pass", ADMIN_PASSWORD)
        assert_tls_only(tls, r.port, *admin)
        # the default user is off; the sluice user is what the ACL grants
        assert cli_ping(r.port, tls.cli_args())[1].startswith("NOAUTH")
        mine = redis.Redis(port=r.port, username=SLUICE_USER, password=SLUICE_PASSWORD,
                           **tls.client_kwargs())
        for cmd in (("CONFIG", "GET", "maxmemory-policy"), ("MODULE", "LIST"), ("PING",),
                    ("GET", "other:key"), ("FLUSHALL",)):
            with pytest.raises(redis.exceptions.NoPermissionError):
                mine.execute_command(*cmd)
        assert mine.execute_command("GET", "sluice:v1:x") is None
        modules = [m[b"name"] if isinstance(m, dict) else m for m in
                   r.client.execute_command("MODULE", "LIST")]
        assert bool(modules) == module, modules
        if module:
            assert mine.execute_command("SLUICE.VERSION")[0] == b"sluice-redis"


def test_the_acl_of_the_docs_is_the_one_tested():
    """docs/distributed.md "TLS to Redis" gives the ACL these tests grant."""
    doc = (pathlib.Path(os.environ["SLUICE_SOURCE"]) / "docs" / "distributed.md").read_text()
    words = " ".join(doc.split())
    assert SLUICE_ACL.replace(f">{SLUICE_PASSWORD}", ">s3cret") in words
    assert MODULE_COMMANDS in words


@pytest.mark.parametrize("engine", ENGINES)
def test_two_sluiced_over_tls_share_one_count(servers, tls, engine):
    rds = servers.redis(tls, module=engine == "module")
    a = servers.sluiced("a", rds, tls.store_yaml(), engine)
    b = servers.sluiced("b", rds, tls.store_yaml(), engine)
    rds.client.config_resetstat()
    for key, expected in ADMITTED.items():
        replies = [(a if i % 2 else b).reply("shared", key, "v") for i in range(90)]
        assert sum(r[0] != b"deny" for r in replies) == expected, (key, replies[:3])
        assert {policy(r) for r in replies} == {None}  # Redis decided every one
    assert rds.calls(DECIDES[engine]) >= 90
    assert rds.decisions() == rds.calls(DECIDES[engine])  # that engine, no other
    for s in (a, b):
        assert s.metric(f'sluice_store_redis_engine{{engine="{engine}"}}') == 2
        assert s.metric("sluice_store_up") == 1
        assert s.metric("sluice_store_redis_policy_local_total") == 0
        assert not s.lines("store.auth_refused|AUTH refused")
    # the ACL was enough: nothing refused but the optional CONFIG GET
    assert rds.refused() <= {"config|get"}, rds.refused()


@pytest.mark.parametrize("engine", ENGINES)
def test_memory_and_redis_over_tls_decide_the_same(servers, tls, engine):
    rds = servers.redis(tls, module=engine == "module")
    mem = servers.memory("mem", DIFF_RULES)
    red = servers.sluiced("red", rds, tls.store_yaml(), engine, workers=1, rules=DIFF_RULES,
                          more="    over_limit_cache: 0\n")
    rnd = random.Random(f"tls-{engine}")
    keys = ("tb", "warm", "gcra", "leaky", "fw", "sw", "swb", "log", "two")
    for step in range(400):
        key, value, hits = rnd.choice(keys), f"u{rnd.randrange(3)}", rnd.choice((1, 1, 1, 2, 3))
        want, got = mem.reply("d", key, value, hits), red.reply("d", key, value, hits)
        assert got == want, (step, key, value, hits)
        if rnd.random() < 0.3:
            ms = rnd.choice((1, 17, 120, 450, 999, 2500))
            mem.advance(ms)
            red.advance(ms)
    assert rds.calls(DECIDES[engine]) == 400  # every one decided in Redis, by that engine


def test_rules_sync_over_tls(servers, tls, tmp_path):
    rds = servers.redis(tls)
    nodes = []
    for name in ("a", "b"):
        nodes.append(servers.sluiced(name, rds, tls.store_yaml(), more="    rules_sync: true\n",
                                     rules_extra=f"\n  database: {tmp_path / (name + '.db')}"))
    a, b = nodes
    req = urllib.request.Request(
        f"http://127.0.0.1:{a.http}/v1/rules", method="POST",
        data=json.dumps({"id": "synced-users", "yaml": SYNCED_RULE}).encode(),
        headers=a.admin_headers())
    with urllib.request.urlopen(req, timeout=10) as r:
        assert json.loads(r.read())["published"] is True

    def b_enforces():  # two an hour: a fresh user's third check is denied
        user = f"u{time.monotonic_ns()}"
        return [b.check("synced", "user", user) for _ in range(3)] == ["allow", "allow", "deny"]
    assert wait_until(b_enforces, 20, 0.2), "node B never served the rule added on A"
    assert rds.refused() <= {"config|get"}, rds.refused()


def refused_by_policy(s, rds, port):
    """What a sluiced refused by its Redis's TLS shows: checks answered by
    each domain's policy, not ready, the store down, the log saying why,
    and Redis decided nothing."""
    assert wait_until(lambda: s.readyz()[0] == 200, 10), s.readyz()  # failed once: not starting
    status, body = s.readyz()
    assert body.startswith("degraded: "), body
    assert not s.ready()
    r = s.reply("open", "k", "x")
    assert r[0] == b"allow" and policy(r) == b"allow"
    r = s.reply("closed", "k", "x")
    assert r[0] == b"deny" and policy(r) == b"deny"
    assert policy(s.reply("shared", "fw", "x")) == b"local"
    assert s.metric("sluice_store_up") == 0
    assert wait_until(lambda: s.said_tls_failed(port), 5), s.log_text()
    assert rds.decisions() == 0
    assert s.proc.poll() is None  # it keeps serving


def accepted(s, rds):
    calls = rds.decisions()
    r = s.reply("closed", "k", f"ok-{s.name}")
    assert r[0] == b"allow" and policy(r) is None  # decided by Redis
    assert rds.decisions() == calls + 1
    assert s.metric("sluice_store_up") == 1


def test_client_certificate_required_refused_without_accepted_with(servers, tls):
    rds = servers.redis(tls)
    rds.client.config_resetstat()
    without = servers.sluiced("without", rds, tls.store_yaml(cert=False), wait_ready=False)
    refused_by_policy(without, rds, rds.port)
    with_cert = servers.sluiced("with", rds, tls.store_yaml(cert=True))
    accepted(with_cert, rds)
    assert not with_cert.said_tls_failed(rds.port)


def test_a_server_not_trusted_is_refused(servers, tls):
    rds = servers.redis(tls)
    rds.client.config_resetstat()
    untrusted = {
        "other_ca": tls.store_yaml(ca="other_ca.pem"),
        "system_cas": tls.store_yaml(ca=None),  # the test CA is in no system store
        "wrong_name": tls.store_yaml(server_name="redis.example.net"),
    }
    refused = [servers.sluiced(n, rds, y, wait_ready=False) for n, y in untrusted.items()]
    for s in refused:
        refused_by_policy(s, rds, rds.port)
    # the name it carries (a DNS SAN of the server's certificate), and an
    # unchecked certificate (verify: false) whatever the CA
    by_name = servers.sluiced("by_name", rds, tls.store_yaml(server_name="localhost"))
    accepted(by_name, rds)
    unchecked = servers.sluiced("unchecked", rds, tls.store_yaml(ca="other_ca.pem",
                                                                 verify="false"))
    accepted(unchecked, rds)


def test_tls_empty_mapping_turns_tls_on(servers, tls):
    """`tls: {}`: TLS with the system's trust store - not clear text (the
    server would not answer it) and not trusting the test CA: refused by
    its certificate, said in the log."""
    rds = servers.redis(TlsFiles(tls.pki, auth_clients=False))
    rds.client.config_resetstat()
    s = servers.sluiced("empty", rds, tls.store_yaml(cert=False, ca=None), wait_ready=False)
    refused_by_policy(s, rds, rds.port)


def test_a_rotated_client_certificate_is_used_without_a_restart(servers, tls, tmp_path):
    rds = servers.redis(tls)
    rds.client.config_resetstat()
    stranger = tls.pki.leaf("stranger", "sluice-client", "DNS:sluice-client", ca="other_ca")
    admin = ("--user", ADMIN_USER, "--pass", ADMIN_PASSWORD)
    out = cli_ping(rds.port, ["--tls", "--cacert", tls.ca, "--cert", stranger[0],
                              "--key", stranger[1]], *admin)[1]
    assert "PONG" not in out, out  # the server refuses that certificate (not sluiced's doing)
    files = (tmp_path / "client.pem", tmp_path / "client.key")
    for src, dst in zip(stranger, files):
        shutil.copy(src, dst)
    s = servers.sluiced("rotated", rds, tls.store_yaml(cert=False, cert_file=files[0],
                                                       key_file=files[1]), wait_ready=False)
    refused_by_policy(s, rds, rds.port)
    pid = s.proc.pid
    for src, dst in zip((tls.client_cert, tls.client_key), files):  # the rotation
        shutil.copy(src, f"{dst}.new")
        os.replace(f"{dst}.new", dst)
    assert wait_until(s.ready, 15), s.log_text()
    accepted(s, rds)
    assert s.proc.pid == pid and s.proc.poll() is None  # the same process throughout


HYBRID_RULES = """\
domain: hy
descriptors:
  - key: fw
    limits: [{algorithm: fixed_window, requests: 100, period: 1h}]
  - key: log
    limits: [{algorithm: sliding_log, requests: 10, period: 1h}]
"""


def test_hybrid_store_over_tls(servers, tls, tmp_path):
    rds = servers.redis(tls)
    store = f"""  type: hybrid
  redis:
    port: {rds.port}
    user: {SLUICE_USER}
    password: {SLUICE_PASSWORD}
    timeout: {TIMEOUT_MS}ms
{tls.store_yaml()}  hybrid:
    sync_interval: 50ms
    timeout: 200ms
"""
    fleet = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        fleet.append(SluicedProc(d, name, store, HYBRID_RULES, workers=1))
    try:
        for n in fleet:
            assert wait_until(lambda: n.metric("sluice_store_hybrid_workers_connected") == 1, 10)
        admitted = sum(fleet[i % 2].check("hy", "fw", "x") != "deny" for i in range(60))
        assert admitted == 60  # under the limit: decided locally, every one admitted

        def counted():  # the counters in Redis (not the reset markers, ":r")
            keys = rds.client.keys("sluice:h1:*")
            return sum(int(rds.client.get(k) or 0) for k in keys if not k.endswith(b":r"))
        assert wait_until(lambda: counted() == 60, 10), counted()
        assert all(n.metric("sluice_store_hybrid_sync_calls_total") > 0 for n in fleet)
        verdicts = [fleet[i % 2].check("hy", "log", "y") for i in range(30)]
        assert sum(v != "deny" for v in verdicts) == 10  # through Redis: exact
        assert rds.refused() <= {"config|get"}, rds.refused()
    finally:
        for n in fleet:
            n.stop()
