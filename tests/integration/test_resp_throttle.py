# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""CL.THROTTLE against the real sluiced with redis-py and redis-cli: the
redis-cell README example, redis-cell's own reference trace, a burst then a
denial, the test clock reopening the bucket, and redis-cell's errors."""
import subprocess

import pytest
import redis


def cell_seconds(ms):
    """redis-cell's rounding: whole seconds, plus one if >= 1 ms is left."""
    if ms < 0:
        return -1
    return ms // 1000 + (1 if ms % 1000 >= 1 else 0)


def test_readme_example(sluiced):
    s = sluiced()
    # "CL.THROTTLE user123 15 30 60": limit 16, 15 left, allowed, the one
    # token comes back after 60/30 = 2 s.
    assert s.client().execute_command("CL.THROTTLE", "user123", 15, 30, 60) == [0, 16, 15, -1, 2]


def test_readme_example_with_redis_cli(sluiced):
    s = sluiced()
    out = subprocess.run(
        ["redis-cli", "-p", str(s.port), "CL.THROTTLE", "user123", "15", "30", "60", "1"],
        capture_output=True, text=True, timeout=10, check=True,
    ).stdout.split()
    assert out == ["0", "16", "15", "-1", "2"]


# redis-cell's reference trace (src/cell/mod.rs, it_rate_limits): limit 5
# (max_burst 4), 1 per second. (t_ms, quantity, remaining, reset_ms,
# retry_ms (-1000: never), limited).
CELL_TRACE = [
    (0, 6, 5, 0, -1000, True),
    (0, 1, 4, 1000, -1000, False),
    (0, 1, 3, 2000, -1000, False),
    (0, 1, 2, 3000, -1000, False),
    (0, 1, 1, 4000, -1000, False),
    (0, 1, 0, 5000, -1000, False),
    (0, 1, 0, 5000, 1000, True),
    (3000, 1, 2, 3000, -1000, False),
    (3100, 1, 1, 3900, -1000, False),
    (4000, 1, 1, 4000, -1000, False),
    (8000, 1, 4, 1000, -1000, False),
    (9500, 1, 4, 1000, -1000, False),
    (9500, 0, 4, 1000, -1000, False),
    (9500, 2, 2, 3000, -1000, False),
    (9500, 5, 2, 3000, 3000, True),
]


def test_redis_cell_reference_trace(sluiced):
    s = sluiced()
    c = s.client()
    now = 0
    for i, (t, qty, remaining, reset_ms, retry_ms, limited) in enumerate(CELL_TRACE):
        if t > now:
            s.advance(t - now)
            now = t
        want = [int(limited), 5, remaining, cell_seconds(retry_ms) if limited else -1,
                cell_seconds(reset_ms)]
        got = c.execute_command("CL.THROTTLE", "foo", 4, 1, 1, qty)
        assert got == want, f"case {i}: t={t} quantity={qty}"


def test_burst_then_deny_then_clock_reopens(sluiced):
    s = sluiced()
    c = s.client()
    burst, period = 4, 60  # 1 token per minute, 5 at once
    for i in range(burst + 1):
        limited, limit, remaining, retry, reset = c.execute_command(
            "CL.THROTTLE", "burst", burst, 1, period)
        assert (limited, limit, remaining, retry) == (0, burst + 1, burst - i, -1)
        assert reset == (i + 1) * period
    limited, _, remaining, retry, reset = c.execute_command("CL.THROTTLE", "burst", burst, 1, period)
    assert (limited, remaining, retry, reset) == (1, 0, period, (burst + 1) * period)
    # another key is independent
    assert c.execute_command("CL.THROTTLE", "other", burst, 1, period)[0] == 0
    # one emission interval later exactly one more request goes through
    s.advance(period * 1000)
    assert c.execute_command("CL.THROTTLE", "burst", burst, 1, period)[0] == 0
    assert c.execute_command("CL.THROTTLE", "burst", burst, 1, period)[0] == 1


@pytest.mark.parametrize("args,message", [
    (["k", 1, 0, 60], "Cell error: Zero rates are not supported"),
    (["k", 1, 10, 0], "Cell error: Zero rates are not supported"),
    (["k", "x", 10, 60], "Cell error: Couldn't parse as integer: x"),
    (["k", 1, 10, 60, "1.5"], "Cell error: Couldn't parse as integer: 1.5"),
    (["k", 1, 10], "Cell error: Usage: cl.throttle"),
    (["k", 1, 10, 60, 1, 2], "Cell error: Usage: cl.throttle"),
    (["k", -1, 10, 60], "must not be negative"),
    (["k", 1, 10, 60, -1], "must not be negative"),
    (["k", 1, 10, 60, "9223372036854775808"], "Couldn't parse as integer: 9223372036854775808"),
    (["k", 1, 10, 60, "18446744073709551616"], "Couldn't parse as integer: 18446744073709551616"),
    (["k", "-", 10, 60], "Couldn't parse as integer: -"),
    (["k", "+1", 10, 60], "Couldn't parse as integer: +1"),
    (["k", "1x", 10, 60], "Couldn't parse as integer: 1x"),
    (["k", 1, "x1", 60], "Couldn't parse as integer: x1"),
    (["k", 1, 10, "6 "], "Couldn't parse as integer: 6 "),
    (["k", "", 10, 60], "Couldn't parse as integer"),
    (["k", " 1", 10, 60], "Couldn't parse as integer:  1"),
    (["k", "9223372036854775807", 10, 60], "max_burst too large"),
    (["k", 1, 10, "9223372036854775807"], "period or max_burst too large"),
])
def test_errors_keep_the_connection(sluiced, args, message):
    s = sluiced()
    c = s.client(single_connection_client=True)
    with pytest.raises(redis.ResponseError) as e:
        c.execute_command("CL.THROTTLE", *args)
    assert message in str(e.value)
    assert c.ping() is True  # same connection, still served


def test_quantity_zero_peeks(sluiced):
    s = sluiced()
    c = s.client()
    first = c.execute_command("CL.THROTTLE", "peek", 9, 10, 10, 0)
    again = c.execute_command("CL.THROTTLE", "peek", 9, 10, 10, 0)
    assert first == again == [0, 10, 10, -1, 0]
    assert c.execute_command("CL.THROTTLE", "peek", 9, 10, 10)[2] == 9


def test_huge_quantity_is_denied_not_refused(sluiced):
    """A quantity far above the burst is a decision (denied, nothing
    consumed), not an error; the reply's integers keep their sign."""
    s = sluiced()
    c = s.client()
    limited, limit, remaining, retry, reset = c.execute_command(
        "CL.THROTTLE", "huge", 4, 10, 60, "9223372036854775807")
    assert (limited, limit, remaining) == (1, 5, 5)
    assert retry == -1 or retry > 0  # never to be admitted: redis-cell says -1
    assert reset == 0
    assert c.execute_command("CL.THROTTLE", "huge", 4, 10, 60)[:3] == [0, 5, 4]


def test_reply_integers_of_every_width(sluiced):
    """The reply writer's short path (-9..99) and its general one agree
    with the arithmetic: one-, two-, three- and many-digit fields."""
    s = sluiced()
    c = s.client()
    for burst in (0, 8, 9, 98, 99, 100, 12345, 10**6):
        r = c.execute_command("CL.THROTTLE", "w%d" % burst, burst, 1, 3600)
        assert r[:3] == [0, burst + 1, burst], r
        assert r[3] == -1
        assert r[4] == 3600, r
