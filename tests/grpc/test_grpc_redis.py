# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_redis.py - gRPC with the Redis store when Redis stops
answering (a redis-server started here and frozen with SIGSTOP, killed by
PID at the end): every call is answered by its domain's failure policy
within a generous bound of the store timeout, the health check says
NOT_SERVING exactly while /readyz says 503; a decision not made within
grpc-timeout is answered DEADLINE_EXCEEDED by the server itself; on
SIGTERM the server sends GOAWAY with the last stream id, then completes the
streams in flight before it closes; and a Health/Watch follows readiness
from a start before Redis is up (NOT_SERVING, then SERVING), through an
outage and back, to the stop (NOT_SERVING, then UNAVAILABLE), sending each
change once.
"""
import signal
import time

import hyperframe.frame as hf
import pytest

import grpc

from grpc_client import RawH2, Watch, channel, health_pb2, health_stub, request, rls_stub
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401

RULES = """\
domain: open
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 1000000}
---
domain: closed
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 1000000}
"""


def wait_until(pred, seconds=10.0, step=0.02):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


@pytest.fixture
def rds():
    from conftest import RedisServer
    server = RedisServer()
    server.proc.port = server.port
    yield server.proc
    server.stop()


def start(grpc_sluiced, rds, timeout):
    # http.readyz: store - not ready while Redis does not decide (the default,
    # decisions, stays ready while the local policy answers)
    s = grpc_sluiced(rules=RULES, extra=f"""store:
  type: redis
  redis:
    port: {rds.port}
    timeout: {timeout}
    failure_policy: local
    policies: {{open: allow, closed: deny}}
http:
  readyz: store
""")
    assert wait_until(lambda: s.request("GET", "/readyz")[0] == 200)
    return s


def serving(check):
    return check(health_pb2.HealthCheckRequest(), timeout=5).status


def test_outage_answered_by_policy_within_timeout(grpc_sluiced, rds):
    s = start(grpc_sluiced, rds, "20ms")
    with channel(s.port) as ch:
        rl, check = rls_stub(ch), health_stub(ch)
        # Redis decides (the first calls of a loaded machine may still take
        # longer than 20 ms and get the policy's answer)
        assert wait_until(lambda: rl(request("closed", [("k", "v")]), timeout=5).overall_code == 1)
        assert serving(check) == health_pb2.HealthCheckResponse.SERVING
        rds.send_signal(signal.SIGSTOP)
        # a Redis that never answers: without the store's timeout these
        # calls would run into the client's deadline (5 s) and fail
        for i in range(20):
            for domain, want in (("open", 1), ("closed", 2)):
                assert rl(request(domain, [("k", f"v{i}")]), timeout=5).overall_code == want
        # NOT_SERVING exactly while /readyz says 503
        assert wait_until(lambda: serving(check) == health_pb2.HealthCheckResponse.NOT_SERVING)
        assert s.request("GET", "/readyz")[0] == 503
        rds.send_signal(signal.SIGCONT)
        assert wait_until(lambda: serving(check) == health_pb2.HealthCheckResponse.SERVING)
        assert s.request("GET", "/readyz")[0] == 200


def test_deadline_exceeded_by_the_server(grpc_sluiced, rds):
    s = start(grpc_sluiced, rds, "3s")
    rds.send_signal(signal.SIGSTOP)
    h = RawH2(s.port)
    h.call(1, request("open", [("k", "d")]).SerializeToString(), extra=[("grpc-timeout", "200m")])
    _, _, trailers = h.answer(1, timeout=10)
    # The store would have answered OK (policy allow) after 3 s; the server
    # itself ended the call at its deadline.
    assert trailers["grpc-status"] == "4", trailers
    h.call(3, request("open", [("k", "e")]).SerializeToString(), extra=[("grpc-timeout", "0n")])
    assert h.answer(3)[2]["grpc-status"] == "4"
    rds.send_signal(signal.SIGCONT)
    h.call(5, request("open", [("k", "f")]).SerializeToString(), extra=[("grpc-timeout", "5S")])
    assert h.answer(5, timeout=10)[2]["grpc-status"] == "0"


def test_goaway_on_sigterm_completes_streams_in_flight(grpc_sluiced, rds):
    s = start(grpc_sluiced, rds, "1s")
    h = RawH2(s.port)
    h.call(1, request("open", [("k", "warm")]).SerializeToString())
    assert h.answer(1)[2]["grpc-status"] == "0"
    rds.send_signal(signal.SIGSTOP)
    for sid in range(3, 23, 2):  # 10 calls waiting on the frozen store
        h.call(sid, request("open", [("k", f"w{sid}")]).SerializeToString())
    time.sleep(0.2)  # let them reach the server
    s.proc.send_signal(signal.SIGTERM)
    g = h.goaway()
    assert g.error_code == 0 and g.last_stream_id == 21
    assert not any(isinstance(f, hf.HeadersFrame) and f.stream_id > 1 for f in h.frames)
    for sid in range(3, 23, 2):  # answered by policy when the store times out
        head, data, trailers = h.answer(sid, timeout=10)
        assert trailers["grpc-status"] == "0" and data
    assert h.closed()
    assert s.proc.wait(10) == 0


def test_watch_follows_readiness_across_start_outage_and_stop(grpc_sluiced):
    from conftest import RedisServer, free_port
    ST = health_pb2.HealthCheckResponse
    port = free_port()
    # started before its Redis: not ready (http.readyz: store)
    s = grpc_sluiced(rules=RULES, extra=f"""store:
  type: redis
  redis:
    port: {port}
    timeout: 100ms
    failure_policy: local
    policies: {{open: allow, closed: deny}}
http:
  readyz: store
""")
    rds = None
    try:
        with channel(s.port) as ch:
            w = Watch(ch, "envoy.service.ratelimit.v3.RateLimitService")
            assert w.next() == ST.NOT_SERVING
            rds = RedisServer(port=port)
            assert w.next(timeout=30) == ST.SERVING
            assert s.request("GET", "/readyz")[0] == 200
            rds.proc.send_signal(signal.SIGSTOP)
            # decisions notice the outage
            for i in range(5):
                rls_stub(ch)(request("open", [("k", f"o{i}")]), timeout=5)
            assert w.next(timeout=30) == ST.NOT_SERVING
            rds.proc.send_signal(signal.SIGCONT)
            assert w.next(timeout=30) == ST.SERVING
            s.proc.send_signal(signal.SIGTERM)
            assert w.next() == ST.NOT_SERVING
            end = w.next()
            assert isinstance(end, grpc.RpcError) and end.code() == grpc.StatusCode.UNAVAILABLE
        assert s.proc.wait(10) == 0
    finally:
        if rds is not None:
            rds.proc.send_signal(signal.SIGCONT)
            rds.stop()
