# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_table_flood.py - a flood of new keys against a full state table
(store.on_full: evict, the default) never lifts a blocked client's limit.

Over RESP, one connection, a table of 2 MiB: 20 victims are blocked, then
the table is flooded with new keys that are themselves out of quota (each
sent twice to a 1-per-hour limit) - first of another limit, then of the
victims' own - many times what it holds. Eviction then has only
out-of-quota entries to take, the victims' among them; what they owed is
kept in the table's summary and restored when they return, so 0 of 20 are
allowed again. For every algorithm in turn.

Fresh clients are looked at with SL.PEEK, which creates nothing: those of a
limit nobody flooded always start fresh; those of the flooded limit start
restricted at most as often as docs/security.md's sizing formula says
(printed, with the measured share). The clock is frozen, so no window ends
during the test.
"""
import math

import pytest
import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)
from test_rules_files import metrics

ALGORITHMS = ["token_bucket", "gcra", "leaky_bucket", "fixed_window", "sliding_window",
              "sliding_log", "concurrency"]
VICTIMS = 20
FLOOD = 80000  # keys, each sent twice: more than twice what a 2 MiB table holds
FRESH = 2000
BATCH = 5000


def rules(algo):
    extra = ", lease: 1h" if algo == "concurrency" else ""
    return f"""domain: api
descriptors:
  - key: user
    limits: [{{algorithm: {algo}, requests: 3, period: 1h{extra}}}]
  - key: fresh
    limits: [{{algorithm: {algo}, requests: 3, period: 1h{extra}}}]
  - key: flood
    limits: [{{algorithm: fixed_window, requests: 1, period: 1h}}]
"""


def verdict(reply):
    return reply[0].decode()


def send(c, commands):
    """Pipelined, in batches; the replies (errors returned, not raised)."""
    out = []
    for i in range(0, len(commands), BATCH):
        p = c.pipeline(transaction=False)
        for cmd in commands[i:i + BATCH]:
            p.execute_command(*cmd)
        out += p.execute(raise_on_error=False)
    return out


def flood(c, key):
    cmds = []
    for i in range(FLOOD):
        cmds += [("SL.CHECK", "api", 1, key, f"f{i}")] * 2
    return send(c, cmds)


def victims_allowed(c):
    return sum(verdict(r) != "deny"
               for r in send(c, [("SL.CHECK", "api", 1, "user", f"victim{i}")
                                 for i in range(VICTIMS)]))


def restricted(c, key, prefix, fresh_reply):
    """New clients whose peek differs from a fresh key's."""
    replies = send(c, [("SL.PEEK", "api", key, f"{prefix}{i}") for i in range(FRESH)])
    return sum(r != fresh_reply for r in replies)


def formula(debts, cells):
    """The share of new keys whose two cells (of one 8-cell line) both hold
    a debt, with `debts` folded into `cells` (docs/security.md)."""
    x = debts / cells
    return 1 - 2 * math.exp(-2 * x) + math.exp(-26 * x / 7)


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_flood_never_lifts_a_limit(http_sluiced, algo):
    s = http_sluiced(rules=rules(algo), extra="store:\n  max_bytes: 2MiB\n")
    c = redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=60)
    fresh_user = c.execute_command("SL.PEEK", "api", "user", "nobody")
    fresh_fresh = c.execute_command("SL.PEEK", "api", "fresh", "nobody")
    for i in range(VICTIMS):
        for _ in range(10):
            if verdict(c.execute_command("SL.CHECK", "api", 1, "user", f"victim{i}")) == "deny":
                break
        else:
            pytest.fail(f"victim{i} never denied")

    # A flood of another limit.
    flood(c, "flood")
    m = metrics(s)
    assert m["sluice_table_evictions_total"] > FLOOD / 2, m  # full, many times over
    assert victims_allowed(c) == 0
    r_fresh = restricted(c, "fresh", "n", fresh_fresh)
    r_user = restricted(c, "user", "n", fresh_user)
    cells = m["sluice_table_summary_cells"] / 8  # one limit's array: 1/8 of the summary
    print(f"\n{algo}: flood of another limit: {r_fresh} of {FRESH} new clients of an "
          f"unflooded limit restricted; {r_user} of {FRESH} of the victims' limit "
          f"(formula with its {VICTIMS} debts: {FRESH * formula(VICTIMS, cells):.1f})")
    assert r_fresh == 0
    # The formula is the expected share; the count is about Poisson (the
    # secret is drawn at start): five standard deviations above it.
    expected = FRESH * formula(VICTIMS, cells)
    assert r_user <= expected + 5 * math.sqrt(expected) + 3

    if algo == "concurrency":
        # Its flood would hold leases, which are never evicted: the table
        # fills and refuses new keys (test_table_debt.c covers it).
        replies = flood(c, "user")
        assert any(isinstance(r, redis.ResponseError) and "state table full" in str(r)
                   for r in replies)
        assert victims_allowed(c) == 0
        c.close()
        return

    # A flood of the victims' own limit.
    before = metrics(s)["sluice_table_summary_folds_total"]
    flood(c, "user")
    m = metrics(s)
    debts = m["sluice_table_summary_folds_total"] - before  # all in this limit's array
    assert debts > FLOOD / 2
    assert victims_allowed(c) == 0
    r_user = restricted(c, "user", "m", fresh_user)
    bound = formula(debts, cells)
    print(f"{algo}: flood of its own limit: {r_user} of {FRESH} new clients restricted "
          f"(formula with {debts:.0f} debts in {cells:.0f} cells: at most {FRESH * bound:.0f}); "
          f"restores {m['sluice_table_summary_restores_total']:.0f}, "
          f"cells used {m['sluice_table_summary_cells_used']:.0f} of "
          f"{m['sluice_table_summary_cells']:.0f}")
    assert r_user <= FRESH * bound + 5 * math.sqrt(FRESH * bound) + 3
    c.close()
