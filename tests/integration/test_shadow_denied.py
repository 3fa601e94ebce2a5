# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_shadow_denied.py - a caller sees that a shadow limit would have
denied it: /v1/check's statuses carry "shadow_denied", SL.CHECK's statuses
a 7th element (1 or 0; the first six keep their positions), `sluice
simulate`'s lines "shadow_denied" -- for a shadow limit and for the shadow
kill switch alike. Envoy's /json answer stays as envoyproxy/ratelimit's,
with no such field.
"""
import json
import os
import subprocess

import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULES = """\
domain: api
descriptors:
  - key: trial
    limits:
      - {name: trial_shadow, algorithm: fixed_window, requests: 1, period: 1m,
         shadow_mode: true}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


def check(s, key, value):
    return s.json("POST", "/v1/check", {"domain": "api", "descriptors": [{key: value}]})


def sl_check(s, key, value):
    return redis.Redis(port=s.port).execute_command("SL.CHECK", "api", 1, key, value)


def test_v1_check_says_shadow_denied(http_sluiced):
    s = http_sluiced(rules=RULES)
    status, _, body = check(s, "trial", "t")
    assert status == 200 and body["statuses"][0]["shadow_denied"] is False, body
    status, _, body = check(s, "trial", "t")  # over the shadow limit: allowed, and said so
    st = body["statuses"][0]
    assert status == 200 and body["decision"] == "allow", body
    assert st["decision"] == "allow" and st["limit"] == "trial_shadow"
    assert st["shadow_denied"] is True, body


def test_sl_check_has_a_seventh_element(http_sluiced):
    s = http_sluiced(rules=RULES)
    first = sl_check(s, "trial", "r")
    assert len(first[2][0]) == 7 and first[2][0][6] == 0, first
    second = sl_check(s, "trial", "r")
    st = second[2][0]
    assert second[0] == b"allow" and st[0] == b"allow" and st[1] == b"trial_shadow"
    assert st[3] == 0 and st[6] == 1, second  # remaining in its place; shadow_denied 7th


def test_the_shadow_kill_switch_says_it_too(http_sluiced):
    s = http_sluiced(rules=RULES)
    status, _, body = s.json("PUT", "/v1/killswitch", {"domain": "api", "mode": "shadow"})
    assert status == 200, body
    check(s, "user", "u")
    status, _, body = check(s, "user", "u")  # enforced limit over, answered allowed
    assert status == 200 and body["statuses"][0]["shadow_denied"] is True, body
    assert sl_check(s, "user", "u")[2][0][6] == 1


def test_envoy_json_has_no_such_field(http_sluiced):
    s = http_sluiced(rules=RULES)
    req = {"domain": "api", "descriptors": [{"entries": [{"key": "trial", "value": "e"}]}]}
    for _ in range(2):
        status, _, body = s.json("POST", "/json", req)
        assert status == 200
        assert set(body) == {"overallCode", "statuses"}, body
        assert set(body["statuses"][0]) == {"code", "currentLimit", "limitRemaining",
                                            "durationUntilReset"}, body


def test_simulate_says_shadow_denied(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    line = '{"t_ms": 1700000000000, "domain": "api", "descriptors": [{"trial": "x"}]}\n'
    out = subprocess.run([os.environ["SLUICE_CLI"], "simulate", "-r", str(rules)],
                         input=line * 2 + line.replace('"trial"', '"nothing"'),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    got = [json.loads(ln)["statuses"][0] for ln in out.stdout.splitlines()]
    assert [st["shadow_denied"] for st in got] == [False, True, False], got
    assert got[1]["decision"] == "allow"
