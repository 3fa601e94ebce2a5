# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_keys.py - GET /v1/keys cannot be misread: its "decision" is what
a request of cost 1 would get now, so a blocked client shows "deny" (with
how long until it passes), a client with room shows "allow", and looking
consumes nothing. A shadow limit never shows a denial.
"""
from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: trial
    limits:
      - {name: trial_shadow, algorithm: fixed_window, requests: 1, period: 1m,
         shadow_mode: true}
"""


def check(s, user):
    return s.json("POST", "/v1/check", {"domain": "api", "descriptors": [{"user": user}]})


def keys(s, query):
    status, _, body = s.json("GET", "/v1/keys?domain=api&" + query)
    assert status == 200, body  # an inspection is answered 200, whatever it says
    return body


def test_a_blocked_client_shows_deny(http_sluiced):
    s = http_sluiced(rules=RULES)
    for _ in range(3):
        assert check(s, "alice")[0] == 200
    assert check(s, "alice")[0] == 429
    body = keys(s, "user=alice")
    st = body["statuses"][0]
    assert body["decision"] == "deny" and st["decision"] == "deny", body
    assert st["remaining"] == 0 and st["limit"] == "api.user"
    assert 0 < st["retry_after_ms"] <= 60000 and st["retry_after_ms"] == st["reset_ms"], body
    assert "exceeded" in body["message"]


def test_room_left_shows_allow_and_looking_costs_nothing(http_sluiced):
    s = http_sluiced(rules=RULES)
    for _ in range(2):
        check(s, "bob")
    for _ in range(5):  # one request left, however often it is looked at
        body = keys(s, "user=bob")
        assert body["decision"] == "allow" and body["statuses"][0]["remaining"] == 1, body
    assert check(s, "bob")[0] == 200
    assert keys(s, "user=bob")["decision"] == "deny"


def test_the_window_passing_unblocks(http_sluiced):
    s = http_sluiced(rules=RULES)
    for _ in range(3):
        check(s, "carol")
    assert keys(s, "user=carol")["decision"] == "deny"
    s.advance(60000)
    body = keys(s, "user=carol")
    assert body["decision"] == "allow" and body["statuses"][0]["remaining"] == 3, body


def test_no_limit_is_allow(http_sluiced):
    s = http_sluiced(rules=RULES)
    body = keys(s, "other=x")
    assert body["decision"] == "allow" and body["statuses"][0]["limit"] is None, body


def test_a_shadow_limit_never_shows_deny(http_sluiced):
    s = http_sluiced(rules=RULES)
    for _ in range(3):
        s.json("POST", "/v1/check", {"domain": "api", "descriptors": [{"trial": "t"}]})
    body = keys(s, "trial=t")
    st = body["statuses"][0]
    assert body["decision"] == "allow" and st["decision"] == "allow", body
    assert st["remaining"] == 0 and st["limit"] == "trial_shadow"
    assert st["shadow_denied"] is True, body  # it says it would have denied
