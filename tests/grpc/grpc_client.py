# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""grpc_client.py - what the gRPC tests share: the messages, compiled from
sluiced's own .proto files with Debian's protoc (--python_out) into a
temporary directory; python3-grpcio callables for ShouldRateLimit and
Health/Check (channel.unary_unary, as python3-grpc-tools is too old); the
conversion of a RateLimitResponse into the proto3 JSON POST /json writes;
and a raw HTTP/2 client over hyperframe and hpack (python3-h2's pieces)
for what grpcio will not send: bad frames, floods, a client that stops
reading; callables for the streams (Health/Watch, server reflection).
It asserts nothing itself.
"""
import importlib.util
import os
import pathlib
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time

import grpc
import hpack
import hyperframe.frame as hf

SOURCE = pathlib.Path(os.environ.get("SLUICE_SOURCE", pathlib.Path(__file__).parents[2]))
PROTO_DIR = SOURCE / "server" / "grpc" / "proto"
RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
CHECK = "/grpc.health.v1.Health/Check"
WATCH = "/grpc.health.v1.Health/Watch"
REFLECT = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
REFLECT_ALPHA = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _compile():
    out = pathlib.Path(tempfile.mkdtemp(prefix="sluice-pb-"))
    protos = [str(p.relative_to(PROTO_DIR)) for p in PROTO_DIR.rglob("*.proto")]
    subprocess.run(["protoc", f"-I{PROTO_DIR}", f"--python_out={out}", *protos], check=True)
    return out


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_out = _compile()
sys.path.insert(0, str(_out))
from envoy.service.ratelimit.v3 import rls_pb2  # noqa: E402

# The generated package "grpc.health.v1" would shadow grpcio's "grpc".
health_pb2 = _load(_out / "grpc" / "health" / "v1" / "health_pb2.py", "sluice_health_pb2")
reflection_pb2 = _load(_out / "grpc" / "reflection" / "v1" / "reflection_pb2.py",
                       "sluice_reflection_pb2")
reflection_alpha_pb2 = _load(_out / "grpc" / "reflection" / "v1alpha" / "reflection_pb2.py",
                             "sluice_reflection_alpha_pb2")


def request(domain, *descriptors, hits=0):
    """A RateLimitRequest; each descriptor is a list of (key, value) or a
    dict {"entries": [(k, v)], "hits": N, "limit": (rpu, unit)}."""
    r = rls_pb2.RateLimitRequest(domain=domain, hits_addend=hits)
    for d in descriptors:
        if not isinstance(d, dict):
            d = {"entries": d}
        pd = r.descriptors.add()
        for k, v in d["entries"]:
            pd.entries.add(key=k, value=v)
        if "hits" in d:
            pd.hits_addend.value = d["hits"]
        if "limit" in d:
            pd.limit.requests_per_unit, pd.limit.unit = d["limit"]
    return r


def as_json(req):
    """The same request as POST /json's body (proto3 JSON)."""
    from google.protobuf import json_format
    return json_format.MessageToJson(req, preserving_proto_field_name=True)


def rls_stub(channel):
    return channel.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                               response_deserializer=rls_pb2.RateLimitResponse.FromString)


def health_stub(channel, path=CHECK):
    return channel.unary_unary(path,
                               request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                               response_deserializer=health_pb2.HealthCheckResponse.FromString)


def watch_stub(channel):
    return channel.unary_stream(WATCH,
                                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                response_deserializer=health_pb2.HealthCheckResponse.FromString)


def reflect_stub(channel, alpha=False):
    pb = reflection_alpha_pb2 if alpha else reflection_pb2
    return channel.stream_stream(
        REFLECT_ALPHA if alpha else REFLECT,
        request_serializer=pb.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb.ServerReflectionResponse.FromString)


class Watch:
    """One Health/Watch stream read by a thread into a queue: statuses,
    then the RpcError (or None) that ended it."""

    def __init__(self, ch, service="", timeout=60):
        self.q = queue.Queue()
        self.call = watch_stub(ch)(health_pb2.HealthCheckRequest(service=service),
                                   timeout=timeout)
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        try:
            for r in self.call:
                self.q.put(r.status)
            self.q.put(None)
        except grpc.RpcError as e:
            self.q.put(e)

    def next(self, timeout=10):
        return self.q.get(timeout=timeout)

    def quiet(self, seconds):
        """Nothing arrives (no status, no end) for `seconds`."""
        try:
            got = self.q.get(timeout=seconds)
        except queue.Empty:
            return True
        raise AssertionError(f"unexpected {got!r}")


def channel(port):
    return grpc.insecure_channel(f"127.0.0.1:{port}")


CODE = {0: "UNKNOWN", 1: "OK", 2: "OVER_LIMIT"}
UNIT = {0: "UNKNOWN", 1: "SECOND", 2: "MINUTE", 3: "HOUR", 4: "DAY", 5: "MONTH", 6: "YEAR",
        7: "WEEK"}


def to_json(resp):
    """A RateLimitResponse as POST /json writes it, to compare field by field."""
    out = {"overallCode": CODE[resp.overall_code], "statuses": []}
    for st in resp.statuses:
        if not st.HasField("current_limit"):
            out["statuses"].append({"code": CODE[st.code]})
            continue
        lim = st.current_limit
        out["statuses"].append({
            "code": CODE[st.code],
            "currentLimit": {"name": lim.name, "requestsPerUnit": lim.requests_per_unit,
                             "unit": UNIT[lim.unit]},
            "limitRemaining": st.limit_remaining,
            "durationUntilReset": f"{st.duration_until_reset.seconds}s"})
    if resp.response_headers_to_add:
        out["responseHeadersToAdd"] = [{"key": h.key, "value": h.value}
                                       for h in resp.response_headers_to_add]
    return out


def frame_message(msg):
    """A gRPC length-prefixed message."""
    return b"\x00" + len(msg).to_bytes(4, "big") + msg


class RawH2:
    """A hand-driven HTTP/2 client: frames out as given, frames in parsed."""

    def __init__(self, port, settings=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.enc, self.dec = hpack.Encoder(), hpack.Decoder()
        self.buf = b""
        self.frames = []
        self.sock.sendall(PREFACE + (hf.SettingsFrame(0).serialize() if settings else b""))

    def send(self, *frames):
        self.sock.sendall(b"".join(f.serialize() if hasattr(f, "serialize") else f
                                   for f in frames))

    def headers_frame(self, sid, path=RLS, end=False, extra=()):
        hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path),
                (":authority", "sluice"), ("content-type", "application/grpc"),
                ("te", "trailers"), *extra]
        f = hf.HeadersFrame(sid, self.enc.encode(hdrs))
        f.flags.add("END_HEADERS")
        if end:
            f.flags.add("END_STREAM")
        return f

    @staticmethod
    def data_frame(sid, payload, end=True):
        f = hf.DataFrame(sid, payload)
        if end:
            f.flags.add("END_STREAM")
        return f

    def call(self, sid, msg, path=RLS, extra=()):
        """Send one unary call on stream `sid` (no waiting)."""
        self.send(self.headers_frame(sid, path, extra=extra),
                  self.data_frame(sid, frame_message(msg)))

    def _read_frame(self, deadline):
        while True:
            if len(self.buf) >= 9:
                f, length = hf.Frame.parse_frame_header(memoryview(self.buf[:9]))
                if len(self.buf) >= 9 + length:
                    f.parse_body(memoryview(self.buf[9:9 + length]))
                    self.buf = self.buf[9 + length:]
                    if isinstance(f, hf.HeadersFrame):
                        f.decoded = dict(self.dec.decode(f.data, raw=False))
                    return f
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def read_until(self, pred, timeout=5):
        """Read frames (kept in self.frames) until pred(frame) or EOF; the
        frame that matched, or None at EOF."""
        deadline = time.monotonic() + timeout
        while True:
            f = self._read_frame(deadline)
            if f is None:
                return None
            self.frames.append(f)
            if isinstance(f, hf.SettingsFrame) and "ACK" not in f.flags:
                self.send(hf.SettingsFrame(0, flags=["ACK"]))
            if pred(f):
                return f

    def goaway(self, timeout=5):
        return self.read_until(lambda f: isinstance(f, hf.GoAwayFrame), timeout)

    def closed(self, timeout=5):
        """True when the server closes the connection (EOF or reset)."""
        try:
            while self.read_until(lambda f: False, timeout) is not None:
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass
        return True

    def answer(self, sid, timeout=5):
        """The answer on stream `sid`, from the frames read so far and more:
        (headers dict, data bytes, trailers dict) once it ends; an
        RST_STREAM ends it with trailers {"rst": code}."""
        def ended(f):
            return getattr(f, "stream_id", 0) == sid and (
                isinstance(f, hf.RstStreamFrame) or
                (isinstance(f, (hf.HeadersFrame, hf.DataFrame)) and "END_STREAM" in f.flags))
        if not any(ended(f) for f in self.frames):
            assert self.read_until(ended, timeout) is not None, \
                "connection closed before the answer"
        heads, data = [], b""
        for f in self.frames:
            if getattr(f, "stream_id", 0) != sid:
                continue
            if isinstance(f, hf.RstStreamFrame):
                return (heads[0] if heads else None), data, {"rst": f.error_code}
            if isinstance(f, hf.HeadersFrame):
                heads.append(f.decoded)
            elif isinstance(f, hf.DataFrame):
                data += f.data
            if ended(f):
                break
        return heads[0], data, (heads[1] if len(heads) > 1 else heads[0])

    def close(self):
        self.sock.close()
