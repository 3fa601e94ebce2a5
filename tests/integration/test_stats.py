# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_stats.py - GET /v1/stats and the dashboard's assets on the real
sluiced, with the test clock (seconds move only when the test moves them).

Per (domain, limit) the per-second series of every protocol's decisions,
the top limited keys with their entries (what a reset takes), a kill
switch in shadow counted as shadow-denied, the rules with their domain,
the store's round trip; stats.enabled off, the hash mode that never shows
a value; /ui and its assets only on the admin listener, without a token,
under a Content-Security-Policy; /v1/stats behind the token.
"""
import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXTRA = f"admin:\n  token: {TOKEN}\n"


def check(s, user):
    return s.json("POST", "/v1/check", {"domain": "api", "descriptors": [{"user": user}]})[0]


def start(http_sluiced, extra=""):
    s = http_sluiced(admin=True, extra=EXTRA + extra)
    s.admin_headers = AUTH
    return s


def stats(s, query="seconds=5"):
    status, _, body = s.json("GET", f"/v1/stats?{query}", headers=AUTH, port=s.admin_port)
    assert status == 200, body
    return body


def pair(doc, limit):
    return next(p for p in doc["series"] if p["limit"] == limit)


def test_series_top_keys_rules_store(http_sluiced):
    s = start(http_sluiced)
    for _ in range(5):
        check(s, "mallory")  # 3 allowed, 2 denied (3 a minute)
    s.advance(1000)
    r = redis.Redis(port=s.port)
    for _ in range(4):
        r.execute_command("SL.CHECK", "api", 1, "user", "mallory")  # RESP counts too
    check(s, "eve")
    doc = stats(s, "seconds=3&top=5")
    assert doc["enabled"] is True and doc["seconds"] == 3 and doc["keys"] == "values"
    p = pair(doc, "api.user")
    assert p["domain"] == "api"
    assert p["allow"] == [0, 3, 1] and p["deny"] == [0, 2, 4], p
    assert p["total"] == {"allow": 4, "delay": 0, "deny": 6, "shadow_deny": 0}
    assert p["rate"]["deny"] == 0.6
    top = p["top"]
    assert top[0]["key"] == "user=mallory" and top[0]["count"] == 6 and top[0]["error"] == 0
    assert top[0]["entries"] == [{"key": "user", "value": "mallory"}]
    assert not top[0]["partial"]
    assert [k["key"] for k in top] == ["user=mallory"]  # eve was allowed: not a limited key
    rules = {r["path"]: r for r in doc["rules"]}
    assert rules["api.user"]["domain"] == "api" and rules["api.user"]["requests"] == 3
    assert rules["jobs.tenant"]["algorithm"] == "concurrency"
    st = doc["store"]
    assert st["type"] == "memory" and st["ready"] is True
    assert sum(st["calls"]) == 10 and sum(st["failures"]) == 0
    assert st["p50_ns_recent"] > 0 and st["p99_ns_recent"] >= st["p50_ns_recent"]
    assert doc["killswitches"] == [] and doc["dropped"] == 0 and doc["workers"] == 2

    # the key's entries reset it
    status, _, _ = s.request("DELETE", "/v1/keys?domain=api&user=mallory", headers=AUTH,
                             port=s.admin_port)
    assert status == 200
    assert check(s, "mallory") == 200


def test_shadow_switch_counts_shadow_denials(http_sluiced):
    s = start(http_sluiced)
    for _ in range(3):
        check(s, "k")
    status, _, _ = s.json("PUT", "/v1/killswitch", {"domain": "api", "mode": "shadow"},
                          headers=AUTH, port=s.admin_port)
    assert status == 200
    assert check(s, "k") == 200
    doc = stats(s, "seconds=1")
    p = pair(doc, "api.user")
    assert p["shadow_deny"] == [1] and p["deny"] == [0] and p["allow"] == [4]
    assert p["top"][0]["key"] == "user=k"  # shadow-denied is limited
    assert doc["killswitches"] == [{"domain": "api", "mode": "shadow"}]


def test_seconds_and_top_are_bounded(http_sluiced):
    s = start(http_sluiced)
    doc = stats(s, "seconds=100000&top=0")
    assert doc["seconds"] == 900
    status, _, _ = s.request("GET", "/v1/stats?seconds=%zz", headers=AUTH, port=s.admin_port)
    assert status == 400


def test_disabled(http_sluiced):
    s = start(http_sluiced, "stats:\n  enabled: false\n")
    for _ in range(5):
        check(s, "k")
    doc = stats(s)
    assert doc["enabled"] is False and doc["series"] == []
    assert doc["rules"] and doc["store"]["ready"] is True


def test_hash_mode_never_shows_values(http_sluiced):
    s = start(http_sluiced, "stats:\n  keys: hash\n")
    for _ in range(5):
        check(s, "alice@example.com")
    doc = stats(s)
    (k,) = pair(doc, "api.user")["top"]
    assert k["key"].startswith("#") and len(k["key"]) == 17
    assert "alice" not in str(doc) and "entries" not in k and k["partial"]


def test_truncate_mode(http_sluiced):
    s = start(http_sluiced, "stats:\n  keys: truncate\n  key_bytes: 3\n")
    for _ in range(5):
        check(s, "alice@example.com")
    (k,) = pair(stats(s), "api.user")["top"]
    assert k["key"] == "user=ali..." and k["partial"] and "entries" not in k


def test_ui_on_the_admin_listener_only(http_sluiced):
    s = start(http_sluiced)
    status, h, body = s.request("GET", "/ui", headers={}, port=s.admin_port)  # no token needed
    assert status == 200 and h["content-type"].startswith("text/html")
    assert b"/ui/app.js" in body and b"http" not in body.replace(b"http-equiv", b"")
    csp = h["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    for path, kind in [("/ui/app.js", "text/javascript"), ("/ui/style.css", "text/css")]:
        status, h, body = s.request("GET", path, headers={}, port=s.admin_port)
        assert status == 200 and h["content-type"].startswith(kind) and len(body) > 1000
        assert h["x-content-type-options"] == "nosniff"
    # HEAD: the same head as GET (its length too), no body
    _, gh, gbody = s.request("GET", "/ui", headers={}, port=s.admin_port)
    status, h, body = s.request("HEAD", "/ui", headers={}, port=s.admin_port)
    assert status == 200 and body == b"" and h["content-type"] == gh["content-type"]
    assert h["content-length"] == str(len(gbody)) == gh["content-length"]
    status, h, body = s.request("HEAD", "/ui/app.js", headers={}, port=s.admin_port)
    assert status == 200 and body == b"" and int(h["content-length"]) > 1000
    assert s.request("HEAD", "/ui/nothing", headers={}, port=s.admin_port)[0] == 404
    assert s.request("HEAD", "/v1/stats", headers=AUTH, port=s.admin_port)[0] == 405
    assert s.request("HEAD", "/nothing", headers={}, port=s.admin_port)[0] == 404
    assert s.request("GET", "/ui/nothing", headers={}, port=s.admin_port)[0] == 404
    assert s.request("GET", "/ui", headers={})[0] == 404  # not on the public listener
    assert s.request("GET", "/v1/stats", headers={}, port=s.admin_port)[0] == 401
    assert s.request("GET", "/v1/stats", headers=AUTH)[0] == 404
