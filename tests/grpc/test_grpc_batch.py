# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""ShouldRateLimit calls that arrive in one read are decided as one batch;
every answer must be byte for byte the answer the same call gets alone.

Two sluiced with the same rules and the same test clock: one gets random
groups of calls in single writes (many HTTP/2 streams in one read), the
other every call alone, waiting for each answer. The groups mix every
algorithm, a rule of three limits, several descriptors in one call (not
batched: what is queued is decided first), hits of 0 to 3, Health/Check
calls, calls that are refused (no descriptors, an unknown method) and an
unknown domain; the clock moves between groups. The batched server's
/metrics must show batches of more than one call, or the test proved
nothing."""
import random
import re
import urllib.request

from grpc_client import CHECK, RLS, RawH2, frame_message, health_pb2, request
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401 (pytest fixtures)
from test_resp_batch import KEYS, RULES

VALUES = ["u0", "u1", "u2", "u3"]


def random_call(rnd):
    """(path, message bytes) of one call."""
    x = rnd.random()
    if x < 0.6:
        msg = request("d", [(rnd.choice(KEYS), rnd.choice(VALUES))],
                      hits=rnd.choice([0, 1, 1, 1, 2, 3]))
    elif x < 0.75:
        msg = request("d", *[[(rnd.choice(KEYS), rnd.choice(VALUES))]
                             for _ in range(rnd.randrange(2, 4))], hits=rnd.choice([0, 1]))
    elif x < 0.8:
        msg = request("nosuch", [("tb", "u0")])
    elif x < 0.87:
        return CHECK, health_pb2.HealthCheckRequest(service="").SerializeToString()
    elif x < 0.93:
        msg = request("d")  # no descriptors: INVALID_ARGUMENT
    else:
        return "/envoy.service.ratelimit.v3.RateLimitService/Nothing", b""
    return None, msg.SerializeToString()


def answers_batched(h2, calls, sid):
    """Every call on its own stream, all in one write; their answers."""
    frames = []
    for i, (path, msg) in enumerate(calls):
        frames += [h2.headers_frame(sid + 2 * i, path or RLS),
                   h2.data_frame(sid + 2 * i, frame_message(msg))]
    h2.send(*frames)
    return [h2.answer(sid + 2 * i) for i in range(len(calls))]


def answers_alone(h2, calls, sid):
    out = []
    for i, (path, msg) in enumerate(calls):
        h2.call(sid + 2 * i, msg, path or RLS)
        out.append(h2.answer(sid + 2 * i))
    return out


def comparable(answer):
    heads, data, trailers = answer
    return heads.get(":status"), heads.get("content-type"), data, \
        trailers.get("grpc-status"), trailers.get("grpc-message")


def metric(s, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{s.port}/metrics", timeout=5) as r:
        m = re.search("^" + re.escape(name) + r" (\d+)$", r.read().decode(), re.M)
    assert m, f"{name} not in /metrics"
    return int(m.group(1))


def test_calls_of_one_read_equal_calls_alone(grpc_sluiced):  # noqa: F811
    a, b = grpc_sluiced(rules=RULES), grpc_sluiced(rules=RULES)
    rnd = random.Random(20261124)
    ha, hb = RawH2(a.port), RawH2(b.port)
    sid, denied, statuses = 1, 0, set()
    try:
        for round_ in range(40):
            calls = [random_call(rnd) for _ in range(rnd.randrange(1, 40))]
            got = answers_batched(ha, calls, sid)
            want = answers_alone(hb, calls, sid)
            sid += 2 * len(calls)
            for call, g, w in zip(calls, got, want):
                assert comparable(g) == comparable(w), (round_, call)
                statuses.add(g[2].get("grpc-status"))
                denied += b"\x08\x02" in g[1][5:7]  # overall_code OVER_LIMIT
            if round_ % 4 == 3:
                a.advance(300)
                b.advance(300)
    finally:
        ha.close()
        hb.close()
    # The traces reached what they claim: denials, refusals, successes.
    assert denied > 20 and {"0", "3", "12"} <= statuses, (denied, statuses)
    batches = metric(a, "sluice_decision_batches_total")
    batched = metric(a, "sluice_decision_batched_total")
    assert batched > batches > 0, (batches, batched)  # some batch held several calls
