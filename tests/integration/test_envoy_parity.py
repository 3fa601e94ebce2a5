# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_envoy_parity.py - Envoy's API (POST /json) answers as
envoyproxy/ratelimit does, on every store.

Each behaviour below was read from envoyproxy/ratelimit's service and
configuration (the cases and rules here are the project's own) and is
checked on the memory store, the Redis store, and the Redis store with its
over-limit cache (a denial learned from Redis answered locally until it
ends):

- a limit reported with its rule's `name`, or "" when the rule has none;
- an `unlimited` rule: OK with limit_remaining 4294967295;
- a descriptor with no entries: OK;
- share_threshold: every value a wildcard rule shares one counter for
  counts in that one counter;
- once a request is denied from the over-limit cache, the request's other
  descriptors still report their limit and state, and are counted;
- hits_addend: 0 at the request level means 1, 0 on a descriptor peeks;
- errors in text/plain;
- the request's own `limit` (override): a fixed window of that rate, its
  own counter, never shadow; also through /v1/check and SL.CHECK;
- response_headers_to_add, in envoyproxy/ratelimit's names or the IETF
  draft's; /rlconfig, /healthcheck and the global shadow mode.
"""
import json
import re
import time

import pytest
import redis

from conftest import RedisServer
from conftest_http import http_sluiced  # noqa: F401 (fixture)


def wait_until(pred, seconds=5.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()

RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: named
    rate_limit: {unit: minute, requests_per_unit: 3, name: per_named}
  - key: free
    rate_limit: {unlimited: true}
  - key: tenant
    value: "acme-*"
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: plan
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: quiet
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: detail
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 5}
"""

STORES = ["memory", "redis", "redis-olc"]


@pytest.fixture(params=STORES)
def sl(request, http_sluiced):
    """A sluiced with the parity rules on one of the three stores."""
    extra = ""
    rds = None
    if request.param != "memory":
        rds = RedisServer()
        olc = 4096 if request.param == "redis-olc" else 0
        extra = f"""store:
  type: redis
  redis: {{port: {rds.port}, timeout: 500ms, over_limit_cache: {olc}}}
"""
    s = http_sluiced(rules=RULES, extra=extra)
    s.store = request.param
    # decisions from the store itself, not from its failure policy
    assert wait_until(lambda: s.request("GET", "/readyz")[0] == 200), "the store is not ready"
    yield s
    if rds is not None:
        rds.stop()


def envoy(s, *descs, hits=None, domain="api", raw=False):
    body = {"domain": domain, "descriptors": list(descs)}
    if hits is not None:
        body["hits_addend"] = hits
    status, headers, data = s.request("POST", "/json", json.dumps(body))
    return status, headers, data if raw else json.loads(data)


def d(**entries):
    """An Envoy descriptor; `limit`, `hits` and `entries_` are special."""
    out = {}
    if "limit" in entries:
        out["limit"] = entries.pop("limit")
    if "hits" in entries:
        out["hits_addend"] = entries.pop("hits")
    out["entries"] = [{"key": k, "value": v} for k, v in entries.items()]
    return out


def metric(s, name, labels=""):
    _, _, body = s.request("GET", "/metrics")
    m = re.search(rb"^" + re.escape(name.encode()) + re.escape(labels.encode()) + rb" (\d+)$",
                  body, re.M)
    return int(m.group(1)) if m else 0


def test_names_only_when_the_rule_has_one(sl):
    _, _, b = envoy(sl, d(user="a"), d(named="a"))
    assert b["statuses"][0]["currentLimit"]["name"] == ""
    assert b["statuses"][1]["currentLimit"]["name"] == "per_named"
    # Sluice's own endpoint keeps its names
    _, _, c = sl.json("POST", "/v1/check", {"domain": "api", "descriptors": [{"user": "a"}]})
    assert c["statuses"][0]["limit"] == "api.user"


def test_unlimited_reports_the_largest_remaining(sl):
    status, _, b = envoy(sl, d(free="x"), d(user="u"))
    assert status == 200
    assert b["statuses"][0] == {"code": "OK", "limitRemaining": 4294967295}
    assert b["statuses"][1]["currentLimit"]["requestsPerUnit"] == 3


def test_a_descriptor_without_entries_is_ok(sl):
    status, _, b = envoy(sl, {"entries": []}, d(user="e"))
    assert status == 200, b
    assert b["statuses"][0] == {"code": "OK"}
    status, _, b = envoy(sl, {})  # no entries at all
    assert status == 200 and b == {"overallCode": "OK", "statuses": [{"code": "OK"}]}


def test_share_threshold_shares_one_counter(sl):
    assert envoy(sl, d(tenant="acme-1"))[0] == 200
    assert envoy(sl, d(tenant="acme-2"))[0] == 200
    status, _, b = envoy(sl, d(tenant="acme-3"))  # 2 per minute across every acme-*
    assert status == 429 and b["statuses"][0]["code"] == "OVER_LIMIT"


def test_a_cached_denial_keeps_the_other_descriptors(sl):
    for _ in range(3):
        assert envoy(sl, d(user="c"))[0] == 200
    assert envoy(sl, d(user="c"))[0] == 429  # learned (and cached on redis-olc)
    before = metric(sl, "sluice_decisions_total",
                    '{domain="api",limit="api.plan",outcome="allow"}')
    status, _, b = envoy(sl, d(user="c"), d(plan="gold"))
    assert status == 429
    assert b["statuses"][0]["code"] == "OVER_LIMIT"
    other = b["statuses"][1]
    assert other["code"] == "OK"
    assert other["currentLimit"] == {"name": "", "requestsPerUnit": 100, "unit": "MINUTE"}
    assert other["limitRemaining"] == 100  # a denied request consumed nothing
    assert metric(sl, "sluice_decisions_total",
                  '{domain="api",limit="api.plan",outcome="allow"}') == before + 1


def test_hits_addend(sl):
    # request level: 0 means 1
    _, _, b = envoy(sl, d(user="h"), hits=0)
    assert b["statuses"][0]["limitRemaining"] == 2
    # descriptor level: 0 peeks
    _, _, b = envoy(sl, d(user="h", hits=0))
    assert b["statuses"][0]["limitRemaining"] == 2
    _, _, b = envoy(sl, d(user="h", hits="2"))
    assert b["statuses"][0]["limitRemaining"] == 0


def test_errors_are_text_plain(sl):
    status, h, body = envoy(sl, raw=True)  # no descriptors
    assert status == 400
    assert h["content-type"].startswith("text/plain")
    assert body.startswith(b"Bad Request")
    status, h, body = sl.request("POST", "/json", "{not json")
    assert status == 400 and h["content-type"].startswith("text/plain")
    # Sluice's own endpoints keep JSON errors
    status, h, body = sl.request("POST", "/v1/check", "{not json")
    assert status == 400 and json.loads(body)["error"]


def test_the_limit_override(sl):
    over = {"requests_per_unit": 2, "unit": "SECOND"}
    for _ in range(2):
        status, _, b = envoy(sl, d(user="o", limit=over))
        assert status == 200
        assert b["statuses"][0]["currentLimit"] == {"name": "", "requestsPerUnit": 2,
                                                    "unit": "SECOND"}
    status, _, b = envoy(sl, d(user="o", limit=over))
    assert status == 429
    # its own counter: the rule's 3 per minute for this user is untouched
    _, _, b = envoy(sl, d(user="o"))
    assert b["statuses"][0]["limitRemaining"] == 2
    # another rate is another counter
    assert envoy(sl, d(user="o", limit={"requests_per_unit": 5, "unit": "SECOND"}))[0] == 200
    # never shadow: a shadow rule's descriptor with an override is enforced
    q = {"requests_per_unit": 1, "unit": "MINUTE"}
    assert envoy(sl, d(quiet="z", limit=q))[0] == 200
    assert envoy(sl, d(quiet="z", limit=q))[0] == 429
    # a descriptor no rule matches is limited by its override in a known domain...
    assert envoy(sl, d(nothing="x", limit=q))[0] == 200
    assert envoy(sl, d(nothing="x", limit=q))[0] == 429
    # ...and an unknown domain stays OK, as in Envoy's service
    assert envoy(sl, d(k="v", limit=q), domain="nowhere")[0] == 200
    assert envoy(sl, d(k="v", limit=q), domain="nowhere")[0] == 200
    # a rate of 0 or an unknown unit is refused
    status, _, body = envoy(sl, d(user="x", limit={"requests_per_unit": 0, "unit": "SECOND"}),
                            raw=True)
    assert status == 400 and b"requests_per_unit" in body


def test_the_override_on_sluices_own_endpoints(sl):
    body = {"domain": "api", "descriptors": [{"user": "n"}],
            "overrides": [{"requests_per_unit": 1, "unit": "HOUR"}]}
    status, _, b = sl.json("POST", "/v1/check", body)
    assert status == 200 and b["statuses"][0]["quota"] == 1
    assert sl.json("POST", "/v1/check", body)[0] == 429
    r = redis.Redis(port=sl.port)
    reply = r.execute_command("SL.CHECK", "api", 1, "LIMIT", 1, "HOUR", "user", "n")
    assert reply[0] == b"deny"  # the same counter as /v1/check's override
    reply = r.execute_command("SL.CHECK", "api", 1, "LIMIT", 1, "day", "user", "n")
    assert reply[0] == b"allow"
    with pytest.raises(redis.ResponseError, match="unit"):
        r.execute_command("SL.CHECK", "api", 1, "LIMIT", 1, "fortnight", "user", "n")


def test_rlconfig_and_healthcheck(http_sluiced):
    s = http_sluiced(rules=RULES)
    status, h, body = s.request("GET", "/rlconfig")
    assert status == 200 and h["content-type"].startswith("text/plain")
    lines = body.decode().splitlines()
    assert ("api.user: unit=MINUTE requests_per_unit=3, shadow_mode: false, "
            "quota_mode: false") in lines
    assert any(line.startswith("api.quiet: unit=MINUTE requests_per_unit=1, shadow_mode: true")
               for line in lines)
    assert "api.free: unlimited, quota_mode: false" in lines
    assert s.request("GET", "/healthcheck")[0] == 200


def test_rlconfig_is_an_admin_endpoint(http_sluiced):
    s = http_sluiced(rules=RULES, admin=True)
    assert s.request("GET", "/rlconfig")[0] == 404  # not on the public listener
    assert s.request("GET", "/rlconfig", port=s.admin_port)[0] == 200


@pytest.mark.parametrize("style", ["ratelimit", "ietf", "renamed"])
def test_response_headers(http_sluiced, style):
    cfg = {"ratelimit": "envoy: {response_headers: true}\n",
           "ietf": "envoy: {response_headers: true, header_style: ietf}\n",
           "renamed": "envoy:\n  response_headers: true\n  header_names: {limit: X-L, "
                      "remaining: X-R, reset: X-T}\n"}[style]
    s = http_sluiced(rules=RULES, extra=cfg)
    _, _, b = envoy(s, d(plan="p"), d(user="hd"))
    got = {h["key"]: h["value"] for h in b["responseHeadersToAdd"]}
    if style == "ratelimit":
        # the descriptor closest to its limit speaks: user, 2 of 3 left
        assert got == {"RateLimit-Limit": "3", "RateLimit-Remaining": "2",
                       "RateLimit-Reset": str(60 - (1_700_000_000 % 60))}
    elif style == "renamed":
        assert sorted(got) == ["X-L", "X-R", "X-T"] and got["X-R"] == "2"
    else:
        assert set(got) == {"RateLimit-Policy", "RateLimit"}
        assert ';q=3;w=60' in got["RateLimit-Policy"]
    # off by default
    s2 = http_sluiced(rules=RULES)
    assert "responseHeadersToAdd" not in envoy(s2, d(user="hd"))[2]


def test_global_shadow_mode(http_sluiced):
    s = http_sluiced(rules=RULES, extra="rules:\n  shadow_mode: true\n")
    for _ in range(3):
        assert envoy(s, d(user="g"))[0] == 200
    status, _, b = envoy(s, d(user="g"), d(plan="p"))
    # as envoyproxy/ratelimit's global shadow mode: OK overall, the
    # descriptor that is over its limit still says so
    assert status == 200 and b["overallCode"] == "OK"
    assert b["statuses"][0]["code"] == "OVER_LIMIT"
    assert b["statuses"][1]["code"] == "OK"


def test_detailed_metric_and_unknown_domains_from_every_protocol(http_sluiced):
    s = http_sluiced(rules=RULES)
    r = redis.Redis(port=s.port)
    r.execute_command("SL.CHECK", "api", 1, "detail", "v1")
    envoy(s, d(detail="v1"))
    assert metric(s, "sluice_decisions_total",
                  '{domain="api",limit="detail_v1",outcome="allow"}') == 2
    before = metric(s, "sluice_unknown_domain_total")
    r.execute_command("SL.CHECK", "nowhere", 1, "k", "v")
    envoy(s, d(k="v"), domain="nowhere")
    assert metric(s, "sluice_unknown_domain_total") == before + 2
