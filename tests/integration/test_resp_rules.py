# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""SL.* commands against rules: check, several descriptors all-or-nothing,
peek, reset, acquire/release, the test clock moving a window, and argument
errors answered without closing the connection."""
import pytest
import redis

from conftest import START_MS


def decision(reply):
    verdict, delay_ms, statuses = reply[0], reply[1], reply[2]
    return verdict.decode(), delay_ms, [
        (st[0].decode(), st[1].decode() if st[1] is not None else None, *st[2:]) for st in statuses
    ]


def window_left_ms(now_ms, window_ms=60_000):
    return window_ms - now_ms % window_ms


def test_check_counts_then_denies(sluiced):
    s = sluiced()
    c = s.client()
    for i in range(3):
        verdict, delay, [(v, name, quota, remaining, reset_ms, retry_ms, shadow)] = decision(
            c.execute_command("SL.CHECK", "api", 1, "user", "alice"))
        assert (verdict, delay, v, quota, remaining, retry_ms) == ("allow", 0, "allow", 3, 2 - i, 0)
        assert reset_ms == window_left_ms(START_MS)
        assert name  # every status names its limit
        assert shadow == 0  # no shadow limit here
    verdict, _, [(v, _, _, remaining, _, retry_ms, _)] = decision(
        c.execute_command("SL.CHECK", "api", 1, "user", "alice"))
    assert (verdict, v, remaining, retry_ms) == ("deny", "deny", 0, window_left_ms(START_MS))
    # another user has their own counter
    assert decision(c.execute_command("SL.CHECK", "api", 1, "user", "bob"))[0] == "allow"


def test_test_clock_moves_the_window(sluiced):
    s = sluiced()
    c = s.client()
    for _ in range(3):
        c.execute_command("SL.CHECK", "api", 1, "user", "carol")
    assert decision(c.execute_command("SL.CHECK", "api", 1, "user", "carol"))[0] == "deny"
    s.advance(window_left_ms(START_MS) - 1)
    assert decision(c.execute_command("SL.CHECK", "api", 1, "user", "carol"))[0] == "deny"
    s.advance(1)  # the next epoch-aligned minute starts
    verdict, _, [(_, _, _, remaining, reset_ms, _, _)] = decision(
        c.execute_command("SL.CHECK", "api", 1, "user", "carol"))
    assert (verdict, remaining, reset_ms) == ("allow", 2, 60_000)


def test_unknown_domain_is_allowed_without_limit(sluiced):
    s = sluiced()
    verdict, _, [(v, name, *_)] = decision(
        s.client().execute_command("SL.CHECK", "nope", 1, "user", "x"))
    assert (verdict, v, name) == ("allow", "allow", None)


def test_checkm_is_all_or_nothing(sluiced):
    s = sluiced()
    c = s.client()
    for _ in range(3):  # use up dave's per-user quota
        c.execute_command("SL.CHECK", "api", 1, "user", "dave")
    # two descriptors: dave (denied) and a path bucket (would allow)
    verdict, _, statuses = decision(c.execute_command(
        "SL.CHECKM", "api", 1, 1, "user", "dave", 1, "path", "/x"))
    assert verdict == "deny"
    assert [st[0] for st in statuses] == ["deny", "allow"]
    # nothing was taken from the path bucket by the denied request
    _, _, [(_, _, quota, remaining, _, _, _)] = decision(
        c.execute_command("SL.PEEK", "api", "path", "/x"))
    assert remaining == quota == 5


def test_peek_consumes_nothing_and_reset_restores(sluiced):
    s = sluiced()
    c = s.client()
    c.execute_command("SL.CHECK", "api", 2, "user", "erin")
    peeks = [decision(c.execute_command("SL.PEEK", "api", "user", "erin"))[2][0][3]
             for _ in range(3)]
    assert peeks == [1, 1, 1]
    _, _, [(_, _, quota, remaining, _, _, _)] = decision(
        s.admin_client().execute_command("SL.RESET", "api", "user", "erin"))
    assert remaining == quota == 3
    assert decision(c.execute_command("SL.CHECK", "api", 3, "user", "erin"))[0] == "allow"


def test_acquire_release(sluiced):
    s = sluiced()
    c = s.client()
    leases = []
    for _ in range(2):
        reply = c.execute_command("SL.ACQUIRE", "jobs", "tenant", "t1")
        assert reply[0] == b"allow" and reply[3] != b""
        leases.append(reply[3])
    reply = c.execute_command("SL.ACQUIRE", "jobs", "tenant", "t1")
    assert reply[0] == b"deny" and reply[3] == b""
    assert c.execute_command("SL.RELEASE", leases[0]) == 1
    assert c.execute_command("SL.RELEASE", leases[0]) == 0  # already released
    assert c.execute_command("SL.ACQUIRE", "jobs", "tenant", "t1")[0] == b"allow"
    with pytest.raises(redis.ResponseError, match="malformed lease"):
        c.execute_command("SL.RELEASE", "not-a-lease!")


@pytest.mark.parametrize("args,message", [
    (["SL.CHECK", "api", "x", "user", "a"], "hits must be"),
    (["SL.CHECK", "api", -1, "user", "a"], "hits must be"),
    (["SL.CHECK", "api", 1, "user", "a", "extra"], "key value pairs"),
    (["SL.CHECKM", "api", 1, 2, "user", "a"], "announces 2 pairs"),
    (["SL.CHECKM", "api", 1, 0, "user", "a"], "number of key/value pairs"),
    (["SL.CHECK", "api", 1] + ["k", "v"] * 17, "at most"),
    (["SL.CHECK", "api"], "wrong number of arguments"),
    (["SL.NOPE"], "unknown command"),
])
def test_bad_arguments_get_errors_and_the_connection_lives(sluiced, args, message):
    s = sluiced()
    c = s.client(single_connection_client=True)
    with pytest.raises(redis.ResponseError, match=message):
        c.execute_command(*args)
    assert c.ping() is True


def test_debug_clock_refused_without_flag(sluiced):
    s = sluiced(test_clock=False)
    with pytest.raises(redis.ResponseError, match="--test-clock"):
        s.advance(1000)
