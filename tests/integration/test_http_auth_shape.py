# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_auth_shape.py - a client-controlled value never changes the
shape of a descriptor, and a domain can deny what no rule matches.

The attack: behind a proxy that writes a client's header into the query of
GET /v1/auth, `X-User: carol&x` became a second entry, no rule matched and
carol was never limited; a second `domain=` won. Now a name given twice is
a 400; `entries=KEY,...` fixes the shape in the query and takes each value
from an `X-Sluice-Entry-KEY` header, where `&`, `=` and `%` are plain
bytes; and `on_unmatched: deny` in a domain denies a descriptor no rule
matches, the same through /v1/auth, /v1/check, Envoy's /json and RESP.
"""
import json

import redis

from conftest import DEFAULT_RULES
from conftest_http import http_sluiced  # noqa: F401 (fixture)

DENY_UNMATCHED = DEFAULT_RULES.replace("domain: api\n", "domain: api\non_unmatched: deny\n", 1)


def auth(s, query, headers=None):
    status, _, body = s.request("GET", "/v1/auth?" + query, headers=headers or {})
    return status, body


def test_a_name_given_twice_is_400(http_sluiced):
    s = http_sluiced()
    for query in ("domain=jobs&user=a&domain=api", "domain=api&user=a&user=b",
                  "domain=api&entries=user&entries=path", "domain=api&entries=user,user"):
        status, body = auth(s, query, {"X-Sluice-Entry-user": "a"})
        assert status == 400, (query, body)
    # the same query with each name once is served
    assert auth(s, "domain=api&user=a")[0] == 200


def test_entries_from_headers_keep_the_shape(http_sluiced):
    s = http_sluiced()
    for value in ("carol&x", "carol&domain=jobs", "carol%26x", "a=b, c"):
        for _ in range(3):
            status, body = auth(s, "domain=api&entries=user", {"X-Sluice-Entry-user": value})
            assert status == 200, (value, body)
            assert json.loads(body)["statuses"][0]["limit"] == "api.user"
        assert auth(s, "domain=api&entries=user", {"X-Sluice-Entry-user": value})[0] == 403
    # the header's name is any case; the value is the bytes sent
    status, _, keys = s.json("GET", "/v1/keys?domain=api&entries=user",
                             headers={**s.admin_headers, "x-sluice-entry-USER": "carol&x"})
    assert status == 200 and keys["statuses"][0]["remaining"] == 0
    # a missing header is an empty value: the shape stays, the empty user is limited
    for _ in range(3):
        assert auth(s, "domain=api&entries=user")[0] == 200
    assert auth(s, "domain=api&entries=user")[0] == 403
    # two entries in the listed order
    status, body = auth(s, "domain=api&entries=user,path",
                        {"X-Sluice-Entry-path": "/x", "X-Sluice-Entry-user": "dan"})
    assert status == 200  # (user, path) has no rule in api: Envoy's default lets it pass


def test_headers_that_would_change_the_shape_are_400(http_sluiced):
    s = http_sluiced()
    for query, headers in (
            ("domain=api&entries=user", {"X-Sluice-Entry-user": "a", "X-Sluice-Entry-x": "1"}),
            ("domain=api&entries=user&path=/x", {"X-Sluice-Entry-user": "a"}),
            ("domain=api&user=a", {"X-Sluice-Entry-path": "/x"}),
            ("domain=api&entries=", {}),
            ("domain=api&entries=us%20er", {})):
        status, body = auth(s, query, headers)
        assert status == 400, (query, headers, body)
    # a header given twice: raw, since a client library would merge them
    with s.raw() as sock:
        sock.sendall(b"GET /v1/auth?domain=api&entries=user HTTP/1.1\r\nHost: x\r\n"
                     b"X-Sluice-Entry-user: a\r\nx-sluice-entry-user: b\r\n"
                     b"Connection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 400 "), data


def test_unmatched_descriptors_are_denied_on_every_protocol(http_sluiced):
    s = http_sluiced(rules=DENY_UNMATCHED)
    # /v1/auth: the attack's query is denied from the first request
    status, body = auth(s, "domain=api&user=carol&x")
    assert status == 403, body
    answer = json.loads(body)
    assert answer["statuses"] == [{"decision": "deny", "limit": None, "unmatched": True}]
    assert "on_unmatched: deny" in answer["message"]
    # /v1/check
    status, _, answer = s.json("POST", "/v1/check",
                               {"domain": "api", "descriptors": [{"user": "carol"},
                                                                 {"user": "carol", "x": ""}]})
    assert status == 429 and answer["decision"] == "deny", answer
    assert answer["statuses"][0]["decision"] == "allow"  # peeked, not counted
    assert answer["statuses"][1] == {"decision": "deny", "limit": None, "unmatched": True}
    # Envoy's /json: OVER_LIMIT without a currentLimit
    status, _, answer = s.json("POST", "/json", {
        "domain": "api", "descriptors": [{"entries": [{"key": "user", "value": "carol"},
                                                      {"key": "x", "value": ""}]}]})
    assert status == 429, answer  # as for any OVER_LIMIT on /json
    assert answer == {"overallCode": "OVER_LIMIT", "statuses": [{"code": "OVER_LIMIT"}]}
    # a descriptor without entries matches no rule either
    status, _, answer = s.json("POST", "/json", {"domain": "api", "descriptors": [{}]})
    assert answer["overallCode"] == "OVER_LIMIT"
    # RESP: a denial whose limit is nil and which can never be retried
    r = redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=5)
    reply = r.execute_command("SL.CHECK", "api", 1, "user", "carol", "x", "")
    assert reply[0] == b"deny" and reply[2] == [[b"deny", None, 0, 0, 0, -1, 0]], reply
    # nothing of it was counted: carol has her whole quota
    status, _, answer = s.json("POST", "/v1/check",
                               {"domain": "api", "descriptors": [{"user": "carol"}]})
    assert status == 200 and answer["statuses"][0]["remaining"] == 2
    # counted in the metrics under a limit of its own
    metrics = s.request("GET", "/metrics")[2].decode()
    assert 'domain="api",limit="__unmatched__",outcome="deny"' in metrics
    # matched descriptors and other domains are as before
    assert auth(s, "domain=api&user=dan")[0] == 200
    assert auth(s, "domain=nosuch&user=dan")[0] == 200
    # the kill switch in shadow lets it through, marked
    assert s.json("PUT", "/v1/killswitch", {"domain": "api", "mode": "shadow"})[0] == 200
    assert auth(s, "domain=api&user=carol&x")[0] == 200


def test_unmatched_descriptors_pass_by_default(http_sluiced):
    """Envoy's behaviour, kept as the default: what no rule matches is not limited."""
    s = http_sluiced()
    for _ in range(8):
        status, body = auth(s, "domain=api&user=carol&x")
        assert status == 200 and json.loads(body)["statuses"] == [
            {"decision": "allow", "limit": None}]
