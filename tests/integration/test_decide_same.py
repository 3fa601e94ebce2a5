# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_decide_same.py - one decision path: a kill switch and shadow mode act
the same through RESP and HTTP, for check, peek and acquire.

Every protocol hands its request to the server's one decision path, which
applies the kill switches ("off": answered allowed without deciding, no
limit reported; "shadow": a denial answered as allowed and counted as a
shadow denial) to checks, peeks and acquires alike, and never to releases,
resets or key inspection. Each case below is asked once through HTTP and
once through RESP, and the two answers (and what they count in /metrics)
must be the same.
"""
import re

import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 2
---
domain: jobs
descriptors:
  - key: tenant
    limits:
      - name: jobs_in_flight
        algorithm: concurrency
        requests: 1
        lease: 30s
"""


def metric(s, name, labels=""):
    _, _, body = s.request("GET", "/metrics")
    m = re.search(rb"^" + re.escape(name.encode()) + re.escape(labels.encode()) + rb" (\d+)$",
                  body, re.M)
    return int(m.group(1)) if m else 0


def switch(s, domain, mode):
    status, _, body = s.json("PUT", "/v1/killswitch", {"domain": domain, "mode": mode})
    assert status == 200, body


# Each helper answers (decision, limit name or None, remaining or None),
# whatever the protocol.
def http_check(s, user, hits=1):
    _, _, b = s.json("POST", "/v1/check", {"domain": "api", "descriptors": [{"user": user}],
                                           "hits": hits})
    st = b["statuses"][0]
    return b["decision"], st["limit"], st.get("remaining")


def resp_check(s, user, hits=1):
    r = redis.Redis(port=s.port)
    reply = r.execute_command("SL.CHECK", "api", hits, "user", user)
    st = reply[2][0]
    return reply[0].decode(), st[1].decode() if st[1] else None, st[3] if st[1] else None


def http_peek(s, user):
    return http_check(s, user, hits=0)


def resp_peek(s, user):
    r = redis.Redis(port=s.port)
    reply = r.execute_command("SL.PEEK", "api", "user", user)
    st = reply[2][0]
    return reply[0].decode(), st[1].decode() if st[1] else None, st[3] if st[1] else None


def http_acquire(s, tenant):
    _, _, b = s.json("POST", "/v1/acquire", {"domain": "jobs", "descriptors": [{"tenant": tenant}]})
    st = b["statuses"][0]
    return b["decision"], st["limit"], st.get("remaining")


def resp_acquire(s, tenant):
    r = redis.Redis(port=s.port)
    reply = r.execute_command("SL.ACQUIRE", "jobs", "tenant", tenant)
    st = reply[2][0]
    return reply[0].decode(), st[1].decode() if st[1] else None, st[3] if st[1] else None


PAIRS = {
    "check": (http_check, resp_check, "api"),
    "peek": (http_peek, resp_peek, "api"),
    "acquire": (http_acquire, resp_acquire, "jobs"),
}


def exhaust(s, kind, key):
    """Use up the limit on `key` (through HTTP), so that a check would deny."""
    if kind == "acquire":
        assert http_acquire(s, key)[0] == "allow"
        assert http_acquire(s, key)[0] == "deny"
    else:
        for _ in range(2):
            assert http_check(s, key)[0] == "allow"
        assert http_check(s, key)[0] == "deny"


def test_enforced_answers_agree(http_sluiced):
    s = http_sluiced(rules=RULES)
    for kind, (via_http, via_resp, _) in PAIRS.items():
        exhaust(s, kind, "e-" + kind)
        assert via_http(s, "e-" + kind) == via_resp(s, "e-" + kind), kind
    # enforced: a check and an acquire over the limit deny, a peek reports 0 left
    assert http_check(s, "e-check") == ("deny", "api.user", 0)
    assert resp_peek(s, "e-peek") == ("allow", "api.user", 0)
    assert resp_acquire(s, "e-acquire")[0] == "deny"


def test_shadow_acts_the_same_on_both(http_sluiced):
    s = http_sluiced(rules=RULES)
    for kind, (via_http, via_resp, domain) in PAIRS.items():
        key = "s-" + kind
        exhaust(s, kind, key)
        switch(s, domain, "shadow")
        a, b = via_http(s, key), via_resp(s, key)
        assert a == b, (kind, a, b)
        assert a[0] == "allow" and a[1] is not None, (kind, a)  # decided, not enforced
        switch(s, domain, "enforce")


def test_shadow_denials_are_counted_alike(http_sluiced):
    s = http_sluiced(rules=RULES)
    exhaust(s, "check", "c")
    switch(s, "api", "shadow")
    labels = '{domain="api",limit="api.user"}'
    before = metric(s, "sluice_shadow_denials_total", labels)
    assert http_check(s, "c")[0] == "allow"
    assert metric(s, "sluice_shadow_denials_total", labels) == before + 1
    assert resp_check(s, "c")[0] == "allow"
    assert metric(s, "sluice_shadow_denials_total", labels) == before + 2


def test_off_acts_the_same_on_both(http_sluiced):
    s = http_sluiced(rules=RULES)
    for kind, (via_http, via_resp, domain) in PAIRS.items():
        key = "o-" + kind
        exhaust(s, kind, key)
        switch(s, domain, "off")
        before = metric(s, "sluice_killswitch_off_total")
        a, b = via_http(s, key), via_resp(s, key)
        assert a == b == ("allow", None, None), (kind, a, b)
        assert metric(s, "sluice_killswitch_off_total") == before + 2, kind
        switch(s, domain, "enforce")


def test_reset_and_inspection_ignore_switches(http_sluiced):
    s = http_sluiced(rules=RULES)
    exhaust(s, "check", "r")
    switch(s, "api", "off")
    # key inspection still shows the real state...
    status, _, body = s.json("GET", "/v1/keys?domain=api&user=r")
    assert status == 200 and body["statuses"][0]["remaining"] == 0, body
    # ...and a reset through RESP still resets it
    r = redis.Redis(port=s.port, password=s.token)  # the admin token sluiced created
    reply = r.execute_command("SL.RESET", "api", "user", "r")
    assert reply[2][0][3] == 2  # fresh state: 2 left
    switch(s, "api", "enforce")
    assert http_check(s, "r") == ("allow", "api.user", 1)
