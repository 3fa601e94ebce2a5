# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_cell_table.py - one table of redis-cell's CL.THROTTLE semantics run
against both implementations: sluiced's RESP command (memory store, test
clock) and the Redis module's (redis-server with $SL_REDIS_MODULE, and
$SL_REDIS_PRELOAD in the sanitizer build, so the ASan module runs it).

Each case is a sequence of calls at times (ms from the case's start) and
the replies redis-cell gives: its README example, the trace of its own
unit test (brandur/redis-cell, src/cell/mod.rs, it_rate_limits), bursts,
peeks, quantities above the limit, extreme values, bad arguments (an error
and nothing changed), and the one documented difference: redis-cell, and
the module, keep one state per key whatever the parameters; sluiced keeps
one per key and parameter set (that case expects a reply per target).

Time: sluiced moves its test clock. The module reads Redis's clock, and
its state is redis-cell's, the TAT alone in the key; moving time forward by
d is moving the stored TAT back by d, which is what the table's runner does.
The real time that passes between two calls (ms) changes no reply: replies
are in whole seconds rounded as redis-cell rounds (up when >= 1 ms is
left), remaining counts whole emission intervals, and the cases keep every
value away from those edges by much more than a test's run takes.

Then what only one side has: the module's DEL, TTL, expiry, types,
replication (as SET ... PXAT, to a replica without the module); sluiced's
DEL, admin-gated, forgetting every parameter set of a key.
"""
import os
import pathlib
import sys

import pytest
import redis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "integration"))
from conftest import DEFAULT_RULES, RedisServer, Sluiced, sluiced, wait_for  # noqa: E402,F401

MODULE = os.environ.get("SL_REDIS_MODULE")
assert MODULE, "SL_REDIS_MODULE must name sluice-redis.so"

I64 = 9223372036854775807


class Err:
    """An error reply containing `text`."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"Err({self.text!r})"


def per_target(sluiced, module):
    return {"sluiced": sluiced, "module": module}


# name -> [(t_ms, args (key first), expected)]
CASES = {
    # README: CL.THROTTLE user123 15 30 60 -> limit 16, 15 left, 2 s to whole
    "readme": [(0, ["user123", 15, 30, 60], [0, 16, 15, -1, 2]),
               (0, ["user123", 15, 30, 60, 1], [0, 16, 14, -1, 4])],
    # redis-cell's it_rate_limits: limit 5 (max_burst 4), 1 per second
    "cell_trace": [
        (0, ["foo", 4, 1, 1, 6], [1, 5, 5, -1, 0]),
        (0, ["foo", 4, 1, 1, 1], [0, 5, 4, -1, 1]),
        (0, ["foo", 4, 1, 1, 1], [0, 5, 3, -1, 2]),
        (0, ["foo", 4, 1, 1, 1], [0, 5, 2, -1, 3]),
        (0, ["foo", 4, 1, 1, 1], [0, 5, 1, -1, 4]),
        (0, ["foo", 4, 1, 1, 1], [0, 5, 0, -1, 5]),
        (0, ["foo", 4, 1, 1, 1], [1, 5, 0, 1, 5]),
        (3000, ["foo", 4, 1, 1, 1], [0, 5, 2, -1, 3]),
        (3100, ["foo", 4, 1, 1, 1], [0, 5, 1, -1, 4]),
        (4000, ["foo", 4, 1, 1, 1], [0, 5, 1, -1, 4]),
        (8000, ["foo", 4, 1, 1, 1], [0, 5, 4, -1, 1]),
        (9500, ["foo", 4, 1, 1, 1], [0, 5, 4, -1, 1]),
        (9500, ["foo", 4, 1, 1, 0], [0, 5, 4, -1, 1]),
        (9500, ["foo", 4, 1, 1, 2], [0, 5, 2, -1, 3]),
        (9500, ["foo", 4, 1, 1, 5], [1, 5, 2, 3, 3]),
    ],
    # 1 per minute, 5 at once: the burst, a denial, one interval reopens one
    "burst_deny_reopen": [(0, ["b", 4, 1, 60], [0, 5, 4 - i, -1, 60 * (i + 1)]) for i in range(5)]
    + [(0, ["b", 4, 1, 60], [1, 5, 0, 60, 300]),
       (0, ["other", 4, 1, 60], [0, 5, 4, -1, 60]),
       (60000, ["b", 4, 1, 60], [0, 5, 0, -1, 300]),
       (60000, ["b", 4, 1, 60], [1, 5, 0, 60, 300])],
    # quantity 0 reports and consumes nothing; quantity defaults to 1
    "peek": [(0, ["p", 9, 10, 10, 0], [0, 10, 10, -1, 0]),
             (0, ["p", 9, 10, 10, 0], [0, 10, 10, -1, 0]),
             (0, ["p", 9, 10, 10], [0, 10, 9, -1, 1]),
             (0, ["p", 9, 10, 10, 0], [0, 10, 9, -1, 1])],
    # the whole limit at once passes; more than it never does (retry -1)
    "quantities": [(0, ["q", 4, 1, 60, 6], [1, 5, 5, -1, 0]),
                   (0, ["q", 4, 1, 60, 5], [0, 5, 0, -1, 300]),
                   (0, ["q", 4, 1, 60, 1], [1, 5, 0, 60, 300]),
                   (0, ["q2", 0, 1, 1, I64], [1, 1, 1, -1, 0])],
    # the largest values the command takes
    "extremes": [(0, ["e1", I64 - 1, 1, 1], [0, I64, I64 - 1, -1, 1]),
                 (0, ["e2", 0, 1, I64 // 10**9], [0, 1, 0, -1, I64 // 10**9]),
                 (0, ["e3", 0, 10**9, 1], [0, 1, 0, -1, 0]),
                 (0, ["e4", 3, (I64 // 10**9) * 10**9, I64 // 10**9], [0, 4, 3, -1, 0])],
    # THE documented difference: the module (as redis-cell) keeps one state
    # per key, so other parameters go on from the same TAT; sluiced keeps
    # one per key and parameter set
    "params_per_key": [
        (0, ["m", 4, 1, 60], [0, 5, 4, -1, 60]),
        (0, ["m", 9, 1, 60], per_target([0, 10, 9, -1, 60], [0, 10, 8, -1, 120])),
        (0, ["m", 4, 1, 60], per_target([0, 5, 3, -1, 120], [0, 5, 2, -1, 180])),
    ],
    # bad arguments: an error, nothing changed (the last call is a fresh key)
    "bad_arguments": [
        (0, ["k", 1, 0, 60], Err("Cell error: Zero rates are not supported")),
        (0, ["k", 1, 10, 0], Err("Cell error: Zero rates are not supported")),
        (0, ["k", 0, 10**9 + 1, 1], Err("Cell error: Zero rates are not supported")),
        (0, ["k", "x", 10, 60], Err("Cell error: Couldn't parse as integer: x")),
        (0, ["k", 1, 10, 60, "1.5"], Err("Cell error: Couldn't parse as integer: 1.5")),
        (0, ["k", "", 10, 60], Err("Cell error: Couldn't parse as integer: ")),
        (0, ["k", " 1", 10, 60], Err("Couldn't parse as integer")),
        (0, ["k", "+1", 10, 60], Err("Couldn't parse as integer")),
        (0, ["k", 1, "0x10", 60], Err("Couldn't parse as integer: 0x10")),
        (0, ["k", "99999999999999999999", 1, 1], Err("Couldn't parse as integer")),
        (0, ["k", "-9223372036854775809", 1, 1], Err("Couldn't parse as integer")),
        (0, ["k", 1, "18446744073709551615", 1], Err("Couldn't parse as integer")),
        (0, ["k", 1, 10], Err("Cell error: Usage: cl.throttle")),
        (0, ["k", 1, 10, 60, 1, 2], Err("Cell error: Usage: cl.throttle")),
        (0, [], Err("Cell error: Usage: cl.throttle")),
        (0, ["k"], Err("Cell error: Usage: cl.throttle")),
        (0, ["k", -1, 10, 60], Err("must not be negative")),
        (0, ["k", 1, -10, 60], Err("must not be negative")),
        (0, ["k", 1, 10, -60], Err("must not be negative")),
        (0, ["k", 1, 10, 60, -1], Err("must not be negative")),
        (0, ["k", 1, 10, -I64], Err("must not be negative")),
        (0, ["k", 1, 10, -I64 - 1], Err("Couldn't parse as integer")),
        (0, ["k", 1, 1, I64 // 10**9 + 1], Err("period or max_burst too large")),
        (0, ["k", I64, 1, 1], Err("period or max_burst too large")),
        (0, ["k", 1, 1, 1], [0, 2, 1, -1, 1]),
    ],
}


class SluicedTarget:
    name = "sluiced"

    def __init__(self, tmp_path):
        self.s = Sluiced(tmp_path, DEFAULT_RULES, False, True, "", False)
        self.c = self.s.client()

    def call(self, args):
        return self.c.execute_command("CL.THROTTLE", *args)

    def advance(self, ms, keys):
        self.s.advance(ms)

    def alive(self):
        return self.s.proc.poll() is None and self.c.ping()

    def stop(self):
        self.s.stop()


def module_redis(args=()):
    env = dict(os.environ)
    if os.environ.get("SL_REDIS_PRELOAD"):
        # the sanitizer build's module needs the sanitizer's runtime first
        env["LD_PRELOAD"] = os.environ["SL_REDIS_PRELOAD"]
    return RedisServer(args=["--loadmodule", MODULE] + list(args), env=env)


class ModuleTarget:
    name = "module"

    def __init__(self, tmp_path):
        self.r = module_redis()
        self.c = self.r.client

    def call(self, args):
        return self.c.execute_command("CL.THROTTLE", *args)

    def advance(self, ms, keys):
        """Time moves on by ms for these keys: their TATs move back."""
        for k in keys:
            v = self.c.get(k)
            if v is not None:
                self.c.set(k, int(v) - ms * 1_000_000, keepttl=True)

    def alive(self):
        return self.r.proc.poll() is None and self.c.ping()

    def stop(self):
        self.r.stop()


@pytest.fixture(scope="module", params=[SluicedTarget, ModuleTarget], ids=["sluiced", "module"])
def target(request, tmp_path_factory):
    t = request.param(tmp_path_factory.mktemp(request.param.name))
    yield t
    try:
        assert t.alive(), f"{t.name} died during the table"
    finally:
        t.stop()


@pytest.mark.parametrize("case", sorted(CASES))
def test_cell_table(target, case):
    now = 0
    keys = set()
    for i, (t, args, want) in enumerate(CASES[case]):
        if isinstance(want, dict):
            want = want[target.name]
        args = [f"{case}:{args[0]}"] + args[1:] if args else []
        if t > now:
            target.advance(t - now, keys)
            now = t
        if args:
            keys.add(args[0])
        where = f"{case} step {i}: t={t} CL.THROTTLE {args}"
        if isinstance(want, Err):
            with pytest.raises(redis.ResponseError) as e:
                target.call(args)
            assert want.text in str(e.value), where
        else:
            assert target.call(args) == want, where
    assert target.alive()


# ---------------------------------------------------------- module only


@pytest.fixture
def mod():
    r = module_redis()
    yield r
    try:
        assert r.proc.poll() is None and r.client.ping(), "redis-server died"
    finally:
        r.stop()


def test_module_state_is_a_tat_with_expiry_and_del_resets(mod):
    c = mod.client
    assert c.execute_command("CL.THROTTLE", "u", 4, 1, 60) == [0, 5, 4, -1, 60]
    before = c.execute_command("TIME")
    tat = int(c.get("u"))  # the TAT, Unix ns, a decimal integer
    now_ns = (int(before[0]) * 1_000_000 + int(before[1])) * 1000
    assert 59 * 10**9 < tat - now_ns <= 60 * 10**9
    assert c.execute_command("PEXPIRETIME", "u") == -(-tat // 10**6)  # whole again: the TAT
    assert c.execute_command("CL.THROTTLE", "u", 4, 1, 60) == [0, 5, 3, -1, 120]
    tat2 = int(c.get("u"))
    assert tat2 == tat + 60 * 10**9  # the same TAT, one emission interval on
    assert c.execute_command("PEXPIRETIME", "u") == -(-tat2 // 10**6)
    assert c.delete("u") == 1
    assert c.execute_command("CL.THROTTLE", "u", 4, 1, 60) == [0, 5, 4, -1, 60]


def test_module_key_expires_when_whole(mod):
    c = mod.client
    assert c.execute_command("CL.THROTTLE", "short", 0, 1, 1) == [0, 1, 0, -1, 1]
    assert c.execute_command("CL.THROTTLE", "short", 0, 1, 1)[0] == 1
    assert c.execute_command("PEXPIRETIME", "short") == -(-int(c.get("short")) // 10**6)
    assert wait_for(lambda: c.exists("short") == 0, timeout=10)
    assert c.execute_command("CL.THROTTLE", "short", 0, 1, 1) == [0, 1, 0, -1, 1]


def test_module_peeks_denials_and_errors_write_nothing(mod):
    c = mod.client
    assert c.execute_command("CL.THROTTLE", "peek", 9, 10, 10, 0) == [0, 10, 10, -1, 0]
    assert c.execute_command("CL.THROTTLE", "big", 4, 1, 60, 6) == [1, 5, 5, -1, 0]
    with pytest.raises(redis.ResponseError):
        c.execute_command("CL.THROTTLE", "bad", -1, 1, 1)
    assert c.exists("peek", "big", "bad") == 0
    c.execute_command("CL.THROTTLE", "full", 0, 1, 60)
    kept = c.get("full")
    assert c.execute_command("CL.THROTTLE", "full", 0, 1, 60)[0] == 1
    assert c.get("full") == kept


def test_module_other_types_are_refused_and_kept(mod):
    c = mod.client
    c.rpush("list", "a")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        c.execute_command("CL.THROTTLE", "list", 1, 1, 1)
    assert c.lrange("list", 0, -1) == [b"a"]
    c.set("text", "not a time")
    with pytest.raises(redis.ResponseError, match="not a CL.THROTTLE state"):
        c.execute_command("CL.THROTTLE", "text", 1, 1, 1)
    assert c.get("text") == b"not a time"
    assert c.command_getkeys("CL.THROTTLE", "kk", 1, 1, 1) in ([b"kk"], ["kk"])


def test_module_replicates_the_effect_to_a_replica_without_it(mod, tmp_path):
    # the replica loads the master's data through a file in its own --dir
    replica = RedisServer(args=["--replicaof", "127.0.0.1", str(mod.port), "--dir", str(tmp_path)])
    try:
        rc = replica.client
        assert wait_for(lambda: rc.info("replication").get("master_link_status") == "up",
                        timeout=20)
        c = mod.client
        assert c.execute_command("CL.THROTTLE", "rep", 4, 1, 60) == [0, 5, 4, -1, 60]
        assert c.execute_command("CL.THROTTLE", "rep", 4, 1, 60, 0) == [0, 5, 4, -1, 60]
        assert wait_for(lambda: rc.get("rep") == c.get("rep"), timeout=10)
        assert rc.execute_command("PEXPIRETIME", "rep") == c.execute_command("PEXPIRETIME", "rep")
        c.delete("rep")
        assert wait_for(lambda: rc.exists("rep") == 0, timeout=10)
    finally:
        replica.stop()


# ---------------------------------------------------------- sluiced only


def test_sluiced_del_forgets_every_parameter_set_admin_only(sluiced):
    s = sluiced()
    c = s.client(single_connection_client=True)
    a = s.admin_client()
    assert a.execute_command("DEL", "never") == 0  # no CL.THROTTLE served yet
    c.execute_command("CL.THROTTLE", "d", 0, 1, 60)
    c.execute_command("CL.THROTTLE", "d", 1, 1, 60)
    c.execute_command("CL.THROTTLE", "d", 1, 1, 60)
    assert c.execute_command("CL.THROTTLE", "d", 0, 1, 60)[0] == 1
    assert c.execute_command("CL.THROTTLE", "d", 1, 1, 60)[0] == 1
    with pytest.raises(redis.ResponseError, match="DEL needs the admin privilege"):
        c.execute_command("DEL", "d")
    assert c.execute_command("CL.THROTTLE", "d", 0, 1, 60)[0] == 1  # still limited
    with pytest.raises(redis.ResponseError, match="one key"):
        a.execute_command("DEL", "d", "e")
    assert a.execute_command("DEL", "d") == 1
    assert c.execute_command("CL.THROTTLE", "d", 0, 1, 60) == [0, 1, 0, -1, 60]
    assert c.execute_command("CL.THROTTLE", "d", 1, 1, 60) == [0, 2, 1, -1, 60]
    assert c.ping()


@pytest.mark.parametrize("engine", ["module", "script"])
def test_sluiced_del_with_the_redis_store(mod, tmp_path, engine):
    """DEL reaches states kept in Redis too (both engines of the store)."""
    from sluiced_proc import SluicedProc

    store = f"""  type: redis
  redis:
    port: {mod.port}
    engine: {engine}
"""
    s = SluicedProc(tmp_path, "n", store, DEFAULT_RULES)
    try:
        c = s.client
        token = (tmp_path / "n.token").read_text().split()[0]
        a = redis.Redis(port=s.port, password=token, socket_timeout=5)
        assert c.execute_command("CL.THROTTLE", "r", 0, 1, 60) == [0, 1, 0, -1, 60]
        assert c.execute_command("CL.THROTTLE", "r", 2, 1, 60) == [0, 3, 2, -1, 60]
        assert c.execute_command("CL.THROTTLE", "r", 0, 1, 60)[0] == 1
        assert a.execute_command("DEL", "r") == 1
        assert c.execute_command("CL.THROTTLE", "r", 0, 1, 60) == [0, 1, 0, -1, 60]
        assert c.execute_command("CL.THROTTLE", "r", 2, 1, 60) == [0, 3, 2, -1, 60]
    finally:
        s.stop()
