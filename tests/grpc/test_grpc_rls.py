# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_rls.py - ShouldRateLimit over gRPC answers exactly as POST
/json does: the real sluiced (test clock), called with python3-grpcio, and
every answer compared field by field with /json's answer to the same
request on a twin key in the same state (same rule, same history). What it
shows: a burst then OVER_LIMIT with limit_remaining and
duration_until_reset; several descriptors with one denying; request and
per-descriptor hits_addend (0 peeks); an unknown domain answered OK; shadow
mode (the kill switch and a rule's shadow_mode), whose denials add no
field to Envoy's message; refusals with /json's
words; and the Envoy-parity behaviours both share (limit override, response
headers, unlimited, empty entries).
"""
import json

import grpc
import pytest

from grpc_client import RLS, as_json, channel, request, rls_pb2, rls_stub, to_json
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401

RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: path
    limits:
      - {name: path_bucket, algorithm: token_bucket, requests: 1, period: 1s, burst: 5}
  - key: plan
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: trial
    rate_limit: {unit: minute, requests_per_unit: 2}
    shadow_mode: true
  - key: open
    rate_limit: {unlimited: true}
"""

UNIT_MINUTE = 2


@pytest.fixture
def s(grpc_sluiced):
    return grpc_sluiced(rules=RULES)


@pytest.fixture
def rl(s):
    ch = channel(s.port)
    yield rls_stub(ch)
    ch.close()


def twin(s, rl, domain, *descs, hits=0, suffix="-json"):
    """Ask gRPC with `descs`, and /json with the same descriptors whose
    values carry `suffix` (a twin key in the same state); both answers, the
    gRPC one as /json's JSON."""
    g = rl(request(domain, *descs, hits=hits), timeout=5)

    def renamed(d):
        if isinstance(d, dict):
            return {**d, "entries": [(k, v + suffix) for k, v in d["entries"]]}
        return [(k, v + suffix) for k, v in d]
    body = as_json(request(domain, *[renamed(d) for d in descs], hits=hits))
    status, _, j = s.json("POST", "/json", json.loads(body))
    assert status == (429 if j.get("overallCode") == "OVER_LIMIT" else 200), j
    return to_json(g), j


def test_burst_then_over_limit_as_json(s, rl):
    answers = [twin(s, rl, "api", [("path", "/a")]) for _ in range(7)]
    for g, j in answers:
        assert g == j
    remaining = [g["statuses"][0]["limitRemaining"] for g, _ in answers]
    codes = [g["overallCode"] for g, _ in answers]
    assert remaining == [4, 3, 2, 1, 0, 0, 0]  # a bucket of 5
    assert codes == ["OK"] * 5 + ["OVER_LIMIT"] * 2
    assert answers[-1][0]["statuses"][0]["currentLimit"] == {
        "name": "path_bucket", "requestsPerUnit": 1, "unit": "SECOND"}
    assert answers[-1][0]["statuses"][0]["durationUntilReset"] == "5s"  # full again in 5 s
    s.advance(1000)  # one token back
    g, j = twin(s, rl, "api", [("path", "/a")])
    assert g == j and g["overallCode"] == "OK"


def test_fixed_window_remaining_and_reset(s, rl):
    got = [rl(request("api", [("user", "u1")]), timeout=5) for _ in range(4)]
    assert [r.statuses[0].limit_remaining for r in got] == [2, 1, 0, 0]
    assert [r.overall_code for r in got] == [1, 1, 1, 2]
    st = got[-1].statuses[0]
    assert (st.current_limit.requests_per_unit, st.current_limit.unit) == (3, UNIT_MINUTE)
    assert 0 < st.duration_until_reset.seconds <= 60


def test_several_descriptors_one_denying(s, rl):
    for _ in range(3):
        rl(request("api", [("user", "full")]), timeout=5)
    g, j = twin(s, rl, "api", [("plan", "p")], [("user", "full")], [("path", "/b")],
                suffix="")
    # the twin is the same key here: /json's call counts too, so compare
    # the shape and codes of gRPC's answer with its own next answer
    assert g["overallCode"] == "OVER_LIMIT"
    assert [st["code"] for st in g["statuses"]] == ["OK", "OVER_LIMIT", "OK"]
    assert j["overallCode"] == "OVER_LIMIT"
    # all-or-nothing: the denied request consumed nothing of the others
    assert g["statuses"][0]["limitRemaining"] == j["statuses"][0]["limitRemaining"]


def test_hits_addend_request_and_per_descriptor(s, rl):
    g, j = twin(s, rl, "api", [("plan", "a")], hits=4)
    assert g == j and g["statuses"][0]["limitRemaining"] == 6
    # a descriptor's own cost beats the request's; 0 peeks
    g, j = twin(s, rl, "api", {"entries": [("plan", "a")], "hits": 2},
                {"entries": [("plan", "b")], "hits": 0}, hits=5)
    assert g == j
    assert [st["limitRemaining"] for st in g["statuses"]] == [4, 10]
    # absent: the request's cost (0 or unset counts 1)
    g, j = twin(s, rl, "api", {"entries": [("plan", "a")]})
    assert g == j and g["statuses"][0]["limitRemaining"] == 3


def test_unknown_domain_is_ok(s, rl):
    g, j = twin(s, rl, "nobody", [("user", "u")], [("x", "y")])
    assert g == j == {"overallCode": "OK", "statuses": [{"code": "OK"}, {"code": "OK"}]}


def test_shadow_mode_rule_and_kill_switch(s, rl):
    answers = [twin(s, rl, "api", [("trial", "t")]) for _ in range(3)]
    assert all(g == j for g, j in answers)
    assert all(g["overallCode"] == "OK" for g, _ in answers)  # shadow: never denies
    status, _, body = s.json("PUT", "/v1/killswitch", {"domain": "api", "mode": "shadow"})
    assert status == 200, body
    for _ in range(3):
        rl(request("api", [("user", "k")]), timeout=5)
    g, j = twin(s, rl, "api", [("user", "k")], suffix="")
    assert g["overallCode"] == "OK" and j["overallCode"] == "OK"
    s.json("PUT", "/v1/killswitch", {"domain": "api", "mode": "enforce"})
    assert rl(request("api", [("user", "k")]), timeout=5).overall_code == 2


def test_a_shadow_denial_adds_no_field(s):
    """The native answers say shadow_denied; Envoy's message does not: the
    bytes of a shadow denial hold only RateLimitResponse's own fields."""
    ch = channel(s.port)
    raw = ch.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                         response_deserializer=None)
    try:
        answers = [raw(request("api", [("trial", "shadowed")]), timeout=5) for _ in range(3)]
        status, _, body = s.json("PUT", "/v1/killswitch", {"domain": "api", "mode": "shadow"})
        assert status == 200, body
        answers += [raw(request("api", [("user", "ks")]), timeout=5) for _ in range(4)]
    finally:
        ch.close()
    _, _, native = s.json("POST", "/v1/check", {"domain": "api",
                                                 "descriptors": [{"trial": "shadowed"}]})
    assert native["statuses"][0]["shadow_denied"] is True, native  # there was one to say
    for b in answers:
        m = rls_pb2.RateLimitResponse.FromString(b)
        assert m.overall_code == 1
        known = rls_pb2.RateLimitResponse.FromString(b)
        known.DiscardUnknownFields()
        assert len(known.SerializeToString()) == len(b), b  # nothing unknown to Envoy
        assert {f.name for f, _ in m.ListFields()} <= {"overall_code", "statuses"}


def test_refusals_say_what_json_says(s, rl):
    entry = {"entries": [{"key": "user", "value": "u"}]}
    many = request("api", *[[("user", str(i))] for i in range(33)])
    cases = [  # (gRPC request, the same in proto3 JSON with its empty fields written)
        (request("", [("user", "u")]), {"domain": "", "descriptors": [entry]}),
        (request("api"), {"domain": "api", "descriptors": []}),
        (many, json.loads(as_json(many))),
        (request("api", [("", "v")]),
         {"domain": "api", "descriptors": [{"entries": [{"key": "", "value": "v"}]}]}),
    ]
    for req, body in cases:
        with pytest.raises(grpc.RpcError) as e:
            rl(req, timeout=5)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        status, _, text = s.request("POST", "/json", json.dumps(body))
        # /json answers errors in text/plain, as envoyproxy/ratelimit does
        assert status == 400 and text.decode() == f"Bad Request: {e.value.details()}\n", (
            e.value.details(), text)


def test_override_unit_out_of_range_refused(s, rl):
    req = request("api", {"entries": [("user", "o")], "limit": (5, 1)})
    req.descriptors[0].limit.unit = 9  # not an Envoy unit
    with pytest.raises(grpc.RpcError) as e:
        rl(req, timeout=5)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unit must be SECOND" in e.value.details()


# ---- Envoy parity, shared with /json through the decision path


def test_limit_override_applied(s, rl):
    got = [rl(request("api", {"entries": [("user", "ov")], "limit": (5, 1)}), timeout=5)
           for _ in range(6)]
    st = got[0].statuses[0]
    assert (st.current_limit.requests_per_unit, st.current_limit.unit) == (5, 1)
    assert [r.overall_code for r in got] == [1] * 5 + [2]


def test_response_headers_to_add(grpc_sluiced):
    s = grpc_sluiced(rules=RULES, extra="envoy: {response_headers: true}\n")
    ch = channel(s.port)
    r = rls_stub(ch)(request("api", [("user", "h")]), timeout=5)
    ch.close()
    got = {h.key: h.value for h in r.response_headers_to_add}
    assert got["RateLimit-Limit"] == "3" and got["RateLimit-Remaining"] == "2"
    # the same as /json's answer for a twin key
    _, _, j = s.json("POST", "/json", {"domain": "api", "descriptors": [
        {"entries": [{"key": "user", "value": "h2"}]}]})
    assert {h["key"]: h["value"] for h in j["responseHeadersToAdd"]} == got


def test_unlimited_reports_max_remaining(s, rl):
    r = rl(request("api", [("open", "x")]), timeout=5)
    assert r.overall_code == 1 and r.statuses[0].limit_remaining == 4294967295


def test_descriptor_without_entries_is_ok(s, rl):
    req = request("api", [("user", "e")])
    req.descriptors.add()  # no entries
    r = rl(req, timeout=5)
    assert r.overall_code == 1 and len(r.statuses) == 2
