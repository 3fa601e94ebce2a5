# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_table_flood.py - a flood of new keys against a full state table
(store.on_full: evict, the default) does not unblock a denied client: the
table evicts the flood's own entries, which still allow requests, and
never the denied client's (sluice_table_evictions_denying_total stays 0).

The table is made small (store.max_bytes) so that a flood of some
thousands of keys fills it many times over; the clock is frozen, so the
denied client's window does not end during the test.
"""
import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)
from test_rules_files import metrics

RULES = """domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
"""
FLOOD = 60000


def verdict(reply):
    return reply[0].decode()


def test_flood_of_new_keys_leaves_a_denied_client_denied(http_sluiced):
    s = http_sluiced(rules=RULES, extra="store:\n  max_bytes: 512KiB\n")
    c = redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=60)
    for _ in range(3):
        assert verdict(c.execute_command("SL.CHECK", "api", 1, "user", "mallory")) == "allow"
    assert verdict(c.execute_command("SL.CHECK", "api", 1, "user", "mallory")) == "deny"
    # mallory floods the table with new keys, each allowed once
    for start in range(0, FLOOD, 2000):
        p = c.pipeline(transaction=False)
        for i in range(start, start + 2000):
            p.execute_command("SL.CHECK", "api", 1, "user", f"flood{i}")
        assert all(verdict(r) == "allow" for r in p.execute())
    m = metrics(s)
    assert m["sluice_table_evictions_total"] > FLOOD / 2, m  # the table was full, many times
    assert m["sluice_table_evictions_denying_total"] == 0, m
    # and mallory is still denied, in the same window
    assert verdict(c.execute_command("SL.CHECK", "api", 1, "user", "mallory")) == "deny"
    c.close()
