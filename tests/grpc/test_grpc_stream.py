# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_stream.py - the gRPC listener's streams: grpc.health.v1's
Watch (per service and overall, told NOT_SERVING when the server stops,
then ended UNAVAILABLE; a stream keeps an otherwise idle connection open;
bad requests refused), server reflection v1 and v1alpha (every request of
the protocol, errors that keep the stream going, descriptors a client
builds a working call from), and grpcurl - built with `go build` from
tests/tools/grpcurl, the module pinning it - as a second, independent
client: list, describe, a call made from reflection alone, a watch.
Real sluiced (memory store), real clients; every wait is bounded.
"""
import os
import pathlib
import signal
import subprocess
import time

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from grpc_client import (REFLECT, WATCH, RawH2, Watch, channel, frame_message, health_pb2,
                         reflect_stub, reflection_alpha_pb2, reflection_pb2, request, rls_pb2)
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401

SOURCE = pathlib.Path(os.environ.get("SLUICE_SOURCE", pathlib.Path(__file__).parents[2]))
RLS_SERVICE = "envoy.service.ratelimit.v3.RateLimitService"
SERVICES = {RLS_SERVICE, "envoy.service.rate_limit_quota.v3.RateLimitQuotaService",
            "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection"}
ST = health_pb2.HealthCheckResponse


def test_watch_per_service_and_overall(grpc_sluiced):
    s = grpc_sluiced()
    with channel(s.port) as ch:
        for service in ["", *sorted(SERVICES)]:
            w = Watch(ch, service)
            assert w.next() == ST.SERVING, service
            w.call.cancel()
        # a service sluiced does not serve: SERVICE_UNKNOWN, and the watch
        # stays open (the protocol: it may be served later)
        w = Watch(ch, "no.such.Service")
        assert w.next() == ST.SERVICE_UNKNOWN
        assert w.quiet(0.8)
        w.call.cancel()
        # Check knows the same services
        check = ch.unary_unary("/grpc.health.v1.Health/Check",
                               request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                               response_deserializer=ST.FromString)
        assert check(health_pb2.HealthCheckRequest(service="grpc.health.v1.Health"),
                     timeout=5).status == ST.SERVING


def test_watch_says_not_serving_on_stop(grpc_sluiced):
    s = grpc_sluiced()
    with channel(s.port) as ch:
        w = Watch(ch)
        assert w.next() == ST.SERVING
        assert w.quiet(0.6)  # nothing changed: nothing sent
        s.proc.send_signal(signal.SIGTERM)
        assert w.next() == ST.NOT_SERVING
        end = w.next()
        assert isinstance(end, grpc.RpcError) and end.code() == grpc.StatusCode.UNAVAILABLE
        assert "stopping" in end.details()
    assert s.proc.wait(10) == 0


def test_watch_keeps_an_idle_connection(grpc_sluiced):
    s = grpc_sluiced(extra="server:\n  idle_timeout: 1s\n")
    h = RawH2(s.port)
    h.send(h.headers_frame(1, WATCH),
           h.data_frame(1, frame_message(health_pb2.HealthCheckRequest().SerializeToString()),
                        end=False))
    first = h.read_until(lambda f: getattr(f, "stream_id", 0) == 1 and f.__class__.__name__ ==
                         "DataFrame")
    assert ST.FromString(first.data[5:]).status == ST.SERVING
    time.sleep(2.5)  # more than twice the idle timeout, and the stream is open
    h.call(3, health_pb2.HealthCheckRequest().SerializeToString(),
           path="/grpc.health.v1.Health/Check")
    assert h.answer(3)[2]["grpc-status"] == "0"
    h.close()


def test_watch_bad_requests(grpc_sluiced):
    s = grpc_sluiced()
    h = RawH2(s.port)
    # not a HealthCheckRequest
    h.call(1, b"\xff\xff\xff", path=WATCH)
    assert h.answer(1)[2]["grpc-status"] == "13"
    # two request messages on a server-streaming call
    msg = frame_message(health_pb2.HealthCheckRequest().SerializeToString())
    h.send(h.headers_frame(3, WATCH), h.data_frame(3, msg + msg))
    heads, data, trailers = h.answer(3)
    assert trailers["grpc-status"] == "13" and "more than one" in trailers["grpc-message"]
    # no request message at all
    h.send(h.headers_frame(5, WATCH), h.data_frame(5, b""))
    assert h.answer(5)[2]["grpc-status"] == "13"
    # a message above grpc.max_message_bytes on a stream
    h.send(h.headers_frame(7, REFLECT), h.data_frame(7, b"\x00\x7f\xff\xff\xff", end=False))
    assert h.answer(7)[2]["grpc-status"] == "8"
    # the connection goes on
    h.call(9, health_pb2.HealthCheckRequest().SerializeToString(),
           path="/grpc.health.v1.Health/Check")
    assert h.answer(9)[2]["grpc-status"] == "0"
    h.close()


def ask(pb, **kw):
    return pb.ServerReflectionRequest(host="h", **kw)


@pytest.mark.parametrize("alpha", [False, True], ids=["v1", "v1alpha"])
def test_reflection(grpc_sluiced, alpha):
    pb = reflection_alpha_pb2 if alpha else reflection_pb2
    s = grpc_sluiced()
    reqs = [
        ask(pb, list_services=""),
        ask(pb, file_containing_symbol=RLS_SERVICE),
        ask(pb, file_by_filename="grpc/health/v1/health.proto"),
        ask(pb, file_containing_symbol="no.such.Symbol"),
        ask(pb, file_by_filename="no/such.proto"),
        ask(pb, file_containing_extension=pb.ExtensionRequest(
            containing_type="envoy.service.ratelimit.v3.RateLimitRequest", extension_number=100)),
        ask(pb, all_extension_numbers_of_type="envoy.service.ratelimit.v3.RateLimitRequest"),
        ask(pb, all_extension_numbers_of_type="no.such.Message"),
        ask(pb),  # asks for nothing
        ask(pb, file_containing_symbol=RLS_SERVICE + ".ShouldRateLimit"),  # a method
        ask(pb, file_containing_symbol="grpc.health.v1.HealthCheckResponse.SERVING"),
    ]
    with channel(s.port) as ch:
        out = list(reflect_stub(ch, alpha)(iter(reqs), timeout=10))
    assert len(out) == len(reqs)  # one answer each, in order, on one stream
    for q, r in zip(reqs, out):
        assert r.original_request == q and r.valid_host == "h"
    assert {x.name for x in out[0].list_services_response.service} == SERVICES
    files = [descriptor_pb2.FileDescriptorProto.FromString(b)
             for b in out[1].file_descriptor_response.file_descriptor_proto]
    names = [f.name for f in files]
    assert names[0] == "envoy/service/ratelimit/v3/rls.proto"
    # the file and everything it imports, each once
    assert len(set(names)) == len(names)
    assert {"envoy/config/core/v3/base.proto", "google/protobuf/duration.proto",
            "envoy/extensions/common/ratelimit/v3/ratelimit.proto"} <= set(names)
    assert [descriptor_pb2.FileDescriptorProto.FromString(b).name for b in
            out[2].file_descriptor_response.file_descriptor_proto] == [
                "grpc/health/v1/health.proto"]
    for r in out[3:6]:
        assert r.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
    assert out[6].all_extension_numbers_response.base_type_name == \
        "envoy.service.ratelimit.v3.RateLimitRequest"
    assert list(out[6].all_extension_numbers_response.extension_number) == []
    assert out[7].error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
    assert out[8].error_response.error_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert out[9].file_descriptor_response.file_descriptor_proto[0] == \
        out[1].file_descriptor_response.file_descriptor_proto[0]
    assert descriptor_pb2.FileDescriptorProto.FromString(
        out[10].file_descriptor_response.file_descriptor_proto[0]).name == \
        "grpc/health/v1/health.proto"


def test_reflection_is_enough_to_call(grpc_sluiced):
    """What grpcurl does: the descriptors from reflection alone build the
    request and decode the answer of ShouldRateLimit."""
    s = grpc_sluiced()
    with channel(s.port) as ch:
        r = next(reflect_stub(ch)(iter([reflection_pb2.ServerReflectionRequest(
            file_containing_symbol=RLS_SERVICE)]), timeout=10))
        pool = descriptor_pool.DescriptorPool()
        pending = [descriptor_pb2.FileDescriptorProto.FromString(b)
                   for b in r.file_descriptor_response.file_descriptor_proto]
        added = set()
        while pending:  # dependencies first
            f = next(f for f in pending if set(f.dependency) <= added)
            pool.Add(f)
            added.add(f.name)
            pending.remove(f)
        method = pool.FindServiceByName(RLS_SERVICE).FindMethodByName("ShouldRateLimit")
        factory = message_factory.MessageFactory(pool)
        Req = factory.GetPrototype(method.input_type)
        Resp = factory.GetPrototype(method.output_type)
        req = Req()
        req.ParseFromString(request("api", [("user", "u1")]).SerializeToString())
        call = ch.unary_unary(f"/{RLS_SERVICE}/ShouldRateLimit",
                              request_serializer=Req.SerializeToString,
                              response_deserializer=Resp.FromString)
        got = call(req, timeout=5)
        assert rls_pb2.RateLimitResponse.FromString(got.SerializeToString()).overall_code == 1


def test_reflection_bad_request_ends_the_stream(grpc_sluiced):
    s = grpc_sluiced()
    h = RawH2(s.port)
    h.call(1, b"\xff\xff\xff", path=REFLECT)
    _, _, trailers = h.answer(1)
    assert trailers["grpc-status"] == "13"
    # the half-close ends a conversation OK
    q = reflection_pb2.ServerReflectionRequest(list_services="").SerializeToString()
    h.call(3, q, path=REFLECT)
    heads, data, trailers = h.answer(3)
    assert trailers["grpc-status"] == "0" and len(data) > 5
    h.close()


# ------------------------------------------------------------ grpcurl


@pytest.fixture(scope="module")
def grpcurl(tmp_path_factory):
    # scripts/go.sh: the Go on this machine, or the pinned release it fetches.
    r = subprocess.run([str(SOURCE / "scripts" / "go.sh")], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        pytest.skip("no Go toolchain for grpcurl (tests/tools/grpcurl): " + r.stderr.strip())
    go = r.stdout.strip()
    out = tmp_path_factory.mktemp("grpcurl") / "grpcurl"
    subprocess.run([go, "build", "-o", str(out), "github.com/fullstorydev/grpcurl/cmd/grpcurl"],
                   cwd=SOURCE / "tests" / "tools" / "grpcurl", check=True, timeout=600,
                   env={**os.environ, "GOFLAGS": "-mod=mod"})
    return str(out)


def run(grpcurl, port, *args, opts=(), timeout=20):
    """grpcurl -plaintext OPTS 127.0.0.1:PORT ARGS: (exit code, output)."""
    p = subprocess.run([grpcurl, "-plaintext", *opts, f"127.0.0.1:{port}", *args],
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_grpcurl(grpc_sluiced, grpcurl):
    s = grpc_sluiced()
    rc, out = run(grpcurl, s.port, "list")
    assert rc == 0 and set(out.split()) == SERVICES, out
    rc, out = run(grpcurl, s.port, "describe", RLS_SERVICE)
    assert rc == 0 and "rpc ShouldRateLimit" in out, out
    rc, out = run(grpcurl, s.port, "describe", ".envoy.service.ratelimit.v3.RateLimitRequest")
    assert rc == 0 and "hits_addend" in out, out
    rc, out = run(grpcurl, s.port, f"{RLS_SERVICE}/ShouldRateLimit",
                  opts=["-d", '{"domain": "api", "descriptors": [{"entries": [{"key": "user", '
                        '"value": "u1"}]}]}'])
    assert rc == 0 and '"overallCode": "OK"' in out, out
    # a watch: SERVING at once, then nothing until grpcurl's own deadline
    rc, out = run(grpcurl, s.port, "grpc.health.v1.Health/Watch", opts=["-max-time", "2"])
    assert '"status": "SERVING"' in out and "DeadlineExceeded" in out, out
    rc, out = run(grpcurl, s.port, "grpc.health.v1.Health/Watch",
                  opts=["-d", '{"service": "nope"}', "-max-time", "1"])
    assert '"status": "SERVICE_UNKNOWN"' in out, out
