# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_gate.py - who may call the admin endpoints.

Without an admin listener, loopback listeners serve them; with a listener
marked `admin: true`, only that one does (404 elsewhere); with admin.token,
a request needs `Authorization: Bearer TOKEN` (401 with WWW-Authenticate
otherwise). Check endpoints stay open everywhere.
"""
import pytest
import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)

ADMIN_GETS = ["/v1/config", "/v1/killswitch", "/v1/keys?domain=api&user=a", "/v1/rules"]
CHECK = {"domain": "api", "descriptors": [{"user": "gate"}]}


def test_admin_listener_serves_admin_paths_and_main_listener_does_not(http_sluiced):
    s = http_sluiced(admin=True, database=True)
    for path in ADMIN_GETS:
        status, _, body = s.request("GET", path)
        assert status == 404, (path, body)
        status, _, body = s.request("GET", path, port=s.admin_port)
        assert status == 200, (path, body)
    # a wrong method on a hidden admin path is still "no such endpoint"
    assert s.request("DELETE", "/v1/config")[0] == 404
    # the debug clock is admin too
    assert s.json("POST", "/v1/debug/clock", {"advance_ms": 1})[0] == 404
    assert s.advance(1000) > 0
    # checks are served on both listeners
    assert s.json("POST", "/v1/check", CHECK)[0] == 200
    assert s.json("POST", "/v1/check", CHECK, port=s.admin_port)[0] == 200
    _, _, cfg = s.json("GET", "/v1/config", port=s.admin_port)
    assert [l["admin"] for l in cfg["listeners"]] == [False, True]


def test_bearer_token_required_when_configured(http_sluiced):
    s = http_sluiced(extra="admin:\n  token: s3cret-token\n")
    s.admin_headers = {"Authorization": "Bearer s3cret-token"}
    for headers in ({}, {"Authorization": "Bearer wrong-token!"},
                    {"Authorization": "Bearer s3cret-toke"},
                    {"Authorization": "Bearer s3cret-tokenX"},
                    {"Authorization": "Basic czNjcmV0LXRva2Vu"}):
        status, h, body = s.request("GET", "/v1/config", headers=headers)
        assert status == 401, (headers, body)
        assert h["www-authenticate"].startswith("Bearer"), h
        assert b"admin.token" in body
    status, _, cfg = s.json("GET", "/v1/config", headers=s.admin_headers)
    assert status == 200
    assert "s3cret" not in str(cfg)  # the secret is never echoed
    assert cfg["admin"]["token_required"] is True
    assert s.request("GET", "/v1/config", headers={"Authorization": "bearer s3cret-token"})[0] == 200
    # the checks themselves need no token
    assert s.json("POST", "/v1/check", CHECK)[0] == 200
    assert s.request("GET", "/metrics")[0] == 200
    # the clock helper uses the token
    assert s.advance(5) > 0


def test_token_file(http_sluiced, tmp_path):
    tok = tmp_path / "token"
    tok.write_text("from-a-file\n")
    s = http_sluiced(extra=f"admin:\n  token_file: {tok}\n")
    assert s.request("GET", "/v1/killswitch")[0] == 401
    ok = {"Authorization": "Bearer from-a-file"}
    assert s.request("GET", "/v1/killswitch", headers=ok)[0] == 200


def test_wrong_credentials_budget_per_address(http_sluiced):
    """admin.max_failures wrong credentials a minute from one address; past
    them every admin request from it is refused unread (even with the right
    token), over HTTP (429, Retry-After) and RESP AUTH alike, while checks
    go on; the event is logged. An address is one budget across protocols."""
    s = http_sluiced(extra="admin:\n  token: s3cret-token\n  max_failures: 3\n",
                     protocols="resp, http1")
    good = {"Authorization": "Bearer s3cret-token"}
    bad = {"Authorization": "Bearer guess"}
    assert s.request("GET", "/v1/config", headers=good)[0] == 200
    assert [s.request("GET", "/v1/config", headers=bad)[0] for _ in range(2)] == [401, 401]
    r = redis.Redis(port=s.port, socket_timeout=5)
    with pytest.raises(redis.ResponseError, match="WRONGPASS"):
        r.execute_command("AUTH", "another-guess")  # the third, through RESP
    status, headers, body = s.request("GET", "/v1/config", headers=good)
    assert status == 429, body
    assert 1 <= int(headers["retry-after"]) <= 20  # one try back every 60 s / 3
    assert b"admin.max_failures" in body
    with pytest.raises(redis.ResponseError, match="too many wrong AUTH"):
        r.execute_command("AUTH", "s3cret-token")
    assert s.json("POST", "/v1/check", CHECK)[0] == 200  # checks are not admin
    assert "admin.locked" in s.log_text()
