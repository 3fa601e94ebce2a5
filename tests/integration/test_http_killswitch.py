# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_killswitch.py - kill switches through the admin API.

PUT /v1/killswitch {"domain": D or "*", "mode": "shadow"|"off"|"enforce"}
changes enforcement at run time, on every worker, for HTTP and RESP checks;
GET lists the switches. Shadow: decided and counted, denials answered as
allowed (sluice_shadow_denials_total moves); off: answered allowed without
deciding (sluice_killswitch_off_total moves).
"""
import re

import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)


def check(s, user):
    return s.json("POST", "/v1/check", {"domain": "api", "descriptors": [{"user": user}]})


def metric(s, name, labels=""):
    _, _, body = s.request("GET", "/metrics")
    m = re.search(rb"^" + re.escape(name.encode()) + re.escape(labels.encode()) + rb" (\d+)$",
                  body, re.M)
    return int(m.group(1)) if m else 0


def put(s, domain, mode):
    return s.json("PUT", "/v1/killswitch", {"domain": domain, "mode": mode})


def test_shadow_then_off_then_enforce(http_sluiced):
    s = http_sluiced()
    for _ in range(3):
        assert check(s, "k")[0] == 200
    assert check(s, "k")[0] == 429  # 3 per minute

    status, _, body = put(s, "api", "shadow")
    assert (status, body) == (200, {"domain": "api", "mode": "shadow"})
    shadow_before = metric(s, "sluice_shadow_denials_total", '{domain="api",limit="api.user"}')
    status, h, body = check(s, "k")
    assert status == 200 and body["decision"] == "allow", body
    assert "retry-after" not in h
    assert metric(s, "sluice_shadow_denials_total",
                  '{domain="api",limit="api.user"}') == shadow_before + 1
    # RESP clients see the switch too
    r = redis.Redis(port=s.port)
    assert r.execute_command("SL.CHECK", "api", 1, "user", "k")[0] == b"allow"

    assert put(s, "api", "off")[0] == 200
    off_before = metric(s, "sluice_killswitch_off_total")
    status, _, body = check(s, "k")
    assert status == 200 and body["statuses"][0]["limit"] is None, body
    assert metric(s, "sluice_killswitch_off_total") == off_before + 1
    # other domains are untouched
    assert s.json("POST", "/v1/check", {"domain": "jobs", "descriptors": [{"tenant": "t"}]})[2][
        "statuses"][0]["limit"] == "jobs_in_flight"

    _, _, listing = s.json("GET", "/v1/killswitch")
    assert listing == {"switches": [{"domain": "api", "mode": "off"}]}

    assert put(s, "api", "enforce")[0] == 200
    assert check(s, "k")[0] == 429
    assert s.json("GET", "/v1/killswitch")[2] == {"switches": []}


def test_star_switches_every_domain(http_sluiced):
    s = http_sluiced()
    assert put(s, "*", "off")[0] == 200
    for _ in range(5):
        status, _, body = check(s, "star")
        assert status == 200 and body["statuses"][0]["limit"] is None
    assert s.json("GET", "/v1/killswitch")[2] == {"switches": [{"domain": "*", "mode": "off"}]}
    assert put(s, "*", "enforce")[0] == 200
    assert check(s, "star")[2]["statuses"][0]["limit"] == "api.user"


def test_bad_requests(http_sluiced):
    s = http_sluiced()
    for body in ({"domain": "api"}, {"domain": "api", "mode": "loud"}, {"mode": "off"},
                 {"domain": "", "mode": "off"}, {"domain": "x" * 129, "mode": "off"}, [1]):
        status, _, answer = s.json("PUT", "/v1/killswitch", body)
        assert status == 400, (body, answer)
    assert s.request("PUT", "/v1/killswitch", "{not json")[0] == 400
    for i in range(64):
        assert put(s, f"d{i}", "shadow")[0] == 200
    status, _, answer = put(s, "one-too-many", "shadow")
    assert status == 409, answer
    assert put(s, "d3", "enforce")[0] == 200  # frees a place
    assert put(s, "one-too-many", "shadow")[0] == 200
