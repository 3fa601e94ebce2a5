# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_api.py - sluiced's HTTP endpoints with a real HTTP client
(http.client): the native check, Envoy's /json, /v1/auth for nginx, keys,
acquire/release, metrics, health and the test clock. Times come from the
test clock, so every header value is derived, not waited for.
"""
import re

from conftest_http import http_sluiced  # noqa: F401 (fixture)
from conftest import START_MS

CHECK = {"domain": "api", "descriptors": [{"user": "alice"}]}
# The rule: 3 per minute, epoch-aligned; the test clock sits 20 s into a minute.
WINDOW_END_S = (START_MS // 60000 + 1) * 60
RESET_S = WINDOW_END_S - START_MS // 1000


def test_check_allows_then_denies_with_headers_and_body(http_sluiced):
    s = http_sluiced()
    for remaining in (2, 1, 0):
        status, h, body = s.json("POST", "/v1/check", CHECK)
        assert status == 200
        assert body["decision"] == "allow" and body["delay_ms"] == 0
        assert body["statuses"][0]["remaining"] == remaining
        assert h["ratelimit-policy"] == '"api.user";q=3;w=60'
        assert h["ratelimit"] == f'"api.user";r={remaining};t={RESET_S}'
        assert h["x-ratelimit-limit"] == "3"
        assert h["x-ratelimit-remaining"] == str(remaining)
        assert h["x-ratelimit-reset"] == str(WINDOW_END_S)
        assert "retry-after" not in h and "message" not in body
    status, h, body = s.json("POST", "/v1/check", CHECK)
    assert status == 429
    assert h["retry-after"] == str(RESET_S)
    assert body["decision"] == "deny"
    st = body["statuses"][0]
    assert st == {"decision": "deny", "limit": "api.user", "quota": 3, "remaining": 0,
                  "reset_ms": RESET_S * 1000, "retry_after_ms": RESET_S * 1000,
                  "shadow_denied": False}
    assert body["message"] == f"rate limit 'api.user' exceeded: 3 per 1m; retry in {RESET_S} s"
    # Once the window is over, the same client passes again.
    s.advance(RESET_S * 1000)
    status, _, body = s.json("POST", "/v1/check", CHECK)
    assert status == 200 and body["statuses"][0]["remaining"] == 2


def test_check_hits_and_peek(http_sluiced):
    s = http_sluiced()
    status, _, body = s.json("POST", "/v1/check", dict(CHECK, hits=2))
    assert status == 200 and body["statuses"][0]["remaining"] == 1
    status, _, body = s.json("POST", "/v1/check", dict(CHECK, hits=0))
    assert status == 200 and body["statuses"][0]["remaining"] == 1  # a peek consumes nothing
    status, _, body = s.json("POST", "/v1/check", dict(CHECK, hits=2))
    assert status == 429 and body["statuses"][0]["remaining"] == 1  # denied, not consumed


def test_check_errors(http_sluiced):
    s = http_sluiced()
    cases = [
        (b"{not json", "body: not valid JSON"),
        ({"descriptors": [{"user": "a"}]}, "domain: missing"),
        ({"domain": "api", "descriptors": [{"user": 5}]}, "descriptors[0].user: value must be"),
        ({"domain": "api", "descriptors": [{"k": "v"}] * 33}, "descriptors: too many"),
        ({"domain": "api", "descriptors": [{"user": "a"}], "hits": -1}, "hits"),
        # a key the table cannot take: the error says which cap
        ({"domain": "api", "descriptors": [{"user": "a" * 3000}]}, "under 1 KiB"),
    ]
    for body, want in cases:
        status, h, data = s.json("POST", "/v1/check", body)
        assert status == 400, (body, data)
        assert want in data["error"]
        assert h["content-type"] == "application/json"


def envoy(user, **extra):
    d = {"entries": [{"key": "user", "value": user}]}
    d.update(extra.pop("desc", {}))
    return dict({"domain": "api", "descriptors": [d]}, **extra)


def test_envoy_json(http_sluiced):
    s = http_sluiced()
    status, _, body = s.json("POST", "/json", envoy("bob", hits_addend=0))  # 0 means 1
    assert status == 200
    assert body == {"overallCode": "OK", "statuses": [{
        "code": "OK",  # an unnamed rule: no made-up name in Envoy's API
        "currentLimit": {"name": "", "requestsPerUnit": 3, "unit": "MINUTE"},
        "limitRemaining": 2, "durationUntilReset": f"{RESET_S}s"}]}
    # A per-descriptor hits addend of 0 is a peek.
    status, _, body = s.json("POST", "/json", envoy("bob", desc={"hitsAddend": "0"}))
    assert body["statuses"][0]["limitRemaining"] == 2
    status, _, body = s.json("POST", "/json", envoy("bob", hitsAddend=2))
    assert status == 200 and body["statuses"][0]["limitRemaining"] == 0
    status, h, body = s.json("POST", "/json", envoy("bob"))
    assert status == 429
    assert body["overallCode"] == "OVER_LIMIT"
    assert body["statuses"][0]["code"] == "OVER_LIMIT"
    assert h["retry-after"] == str(RESET_S)


def test_envoy_unknown_domain_is_ok_and_counted(http_sluiced):
    s = http_sluiced()
    for _ in range(2):
        status, _, body = s.json("POST", "/json", dict(envoy("x"), domain="nope"))
        assert status == 200
        assert body == {"overallCode": "OK", "statuses": [{"code": "OK"}]}
    status, _, text = s.request("GET", "/metrics")
    assert status == 200
    assert re.search(rb"^sluice_unknown_domain_total 2$", text, re.M)


def test_auth_for_nginx(http_sluiced):
    s = http_sluiced()
    path = "/v1/auth?domain=api&user=carol"
    for _ in range(3):
        status, h, _ = s.request("GET", path)
        assert status == 200 and h["x-ratelimit-limit"] == "3"
    status, h, data = s.request("GET", path)
    assert status == 403
    assert h["retry-after"] == str(RESET_S)
    assert h["ratelimit"] == f'"api.user";r=0;t={RESET_S}'
    assert b'"decision":"deny"' in data
    # Percent-encoded values are decoded: this is another user.
    status, _, _ = s.request("GET", "/v1/auth?domain=api&user=car%6fl%20x")
    assert status == 200
    for bad in ("/v1/auth?user=carol", "/v1/auth?domain=api", "/v1/auth?domain=api&user=%zz"):
        assert s.request("GET", bad)[0] == 400


def test_keys_inspect_and_reset(http_sluiced):
    s = http_sluiced()
    for _ in range(4):
        s.request("POST", "/v1/check", CHECK)
    keys = "/v1/keys?domain=api&user=alice"
    for _ in range(2):  # inspecting consumes nothing
        status, _, body = s.json("GET", keys)
        assert status == 200 and body["statuses"][0]["remaining"] == 0
    status, _, body = s.json("DELETE", keys)
    assert status == 200 and body["statuses"][0]["remaining"] == 3
    assert s.json("POST", "/v1/check", CHECK)[0] == 200


def test_acquire_release(http_sluiced):
    s = http_sluiced()
    req = {"domain": "jobs", "descriptors": [{"tenant": "t1"}]}
    leases = []
    for _ in range(2):
        status, _, body = s.json("POST", "/v1/acquire", req)
        assert status == 200 and body["lease"]
        leases.append(body["lease"])
    status, _, body = s.json("POST", "/v1/acquire", req)
    assert status == 429 and "in flight" in body["message"]
    status, _, body = s.json("POST", "/v1/release", {"lease": leases[0]})
    assert status == 200 and body == {"released": True}
    assert s.json("POST", "/v1/release", {"lease": leases[0]})[0] == 404  # already free
    assert s.json("POST", "/v1/release", {"lease": "not a lease"})[0] == 400
    assert s.json("POST", "/v1/release", {"id": 1})[0] == 400
    assert s.json("POST", "/v1/acquire", req)[0] == 200


def test_concurrency_retry_after_follows_the_hold_times(http_sluiced):
    """jobs_in_flight: 2 in flight, lease 30 s. With no lease released yet
    a denial's Retry-After is the oldest lease's expiry (at most the
    lease); once one was released after 4 s on the test clock, the wait is
    that hold time, not the lease."""
    s = http_sluiced()
    req = {"domain": "jobs", "descriptors": [{"tenant": "t1"}]}
    leases = [s.json("POST", "/v1/acquire", req)[2]["lease"] for _ in range(2)]
    status, h, body = s.json("POST", "/v1/acquire", req)
    assert status == 429 and h["retry-after"] == "30"
    assert body["message"] == ("rate limit 'jobs_in_flight' exceeded: too many requests in "
                               "flight (2); retry in about 30 s")
    s.advance(4000)
    assert s.json("POST", "/v1/release", {"lease": leases[0]})[0] == 200  # held 4 s
    assert s.json("POST", "/v1/acquire", req)[0] == 200
    # the other lease, taken 4 s ago, is already due: one more usual hold
    status, h, body = s.json("POST", "/v1/acquire", req)
    assert status == 429 and h["retry-after"] == "4"
    assert body["statuses"][0]["retry_after_ms"] == 4000
    assert body["message"].endswith("too many requests in flight (2); retry in about 4 s")
    # the newest lease, taken at 4 s, is expected to end at 8 s
    assert s.json("POST", "/v1/release", {"lease": leases[1]})[0] == 200  # held 4 s
    assert s.json("POST", "/v1/acquire", req)[0] == 200
    s.advance(1500)
    status, h, _ = s.json("POST", "/v1/acquire", req)
    assert status == 429 and h["retry-after"] == "3"  # 2.5 s, rounded up


def test_metrics_count_decisions(http_sluiced):
    s = http_sluiced()
    for _ in range(5):
        s.request("POST", "/v1/check", CHECK)
    status, h, text = s.request("GET", "/metrics")
    assert status == 200 and h["content-type"].startswith("text/plain")
    series = dict(re.findall(rb"^(sluice_decisions_total\{[^}]*\}) (\d+)$", text, re.M))
    assert series[b'sluice_decisions_total{domain="api",limit="api.user",outcome="allow"}'] == b"3"
    assert series[b'sluice_decisions_total{domain="api",limit="api.user",outcome="deny"}'] == b"2"
    count = re.search(rb"^sluice_check_duration_seconds_count (\d+)$", text, re.M)
    assert int(count.group(1)) == 5
    assert re.search(rb"^sluice_table_entries [1-9]", text, re.M)


def test_health_and_clock(http_sluiced):
    s = http_sluiced()
    assert s.request("GET", "/healthz")[:1] == (200,)
    assert s.request("GET", "/readyz")[0] == 200
    assert s.advance(1500) == START_MS + 1500
    assert s.json("POST", "/v1/debug/clock", {"advance_ms": -1})[0] == 400
    assert s.json("POST", "/v1/debug/clock", {"advance_ms": "x"})[0] == 400
    real = http_sluiced(test_clock=False)
    status, _, body = real.json("POST", "/v1/debug/clock", {"advance_ms": 1})
    assert status == 403 and "--test-clock" in body["error"]
