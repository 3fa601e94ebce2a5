# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_bad.py - bad input on the gRPC listener, each refused with the
right HTTP/2 or gRPC error while other connections are served: garbage
after the preface, a 16 MB message, a malformed protobuf, an unknown
method, a header list above the cap, HPACK references that make the
server decode far more than it reads, a HEADERS flood past the stream
limit, SETTINGS, stream-reset, PRIORITY and unknown-frame floods. After
each, a fresh grpcio channel is answered (the daemon is alive and not
stalled). Raw frames through hyperframe/hpack; loads are bounded.
"""
import os

import grpc
import hpack
import hyperframe.frame as hf
import pytest

from grpc_client import (RLS, RawH2, channel, frame_message, request, rls_stub)
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401
from conftest import wait_for  # tests/integration's (on the path through grpc_fixtures)

PROTOCOL_ERROR, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM = 1, 6, 7, 8, 11
RESOURCE_EXHAUSTED, UNIMPLEMENTED, INTERNAL = "8", "12", "13"


@pytest.fixture
def s(grpc_sluiced):
    return grpc_sluiced()


def served(s):
    """Another connection is answered."""
    with channel(s.port) as ch:
        assert rls_stub(ch)(request("api", [("plan", "other")]), timeout=5).overall_code == 1
    assert s.proc.poll() is None


def test_garbage_after_preface(s):
    h = RawH2(s.port, settings=False)
    h.send(b"hello, this is not an HTTP/2 frame at all\r\n")
    g = h.goaway()
    assert g is not None and g.error_code in (PROTOCOL_ERROR, FRAME_SIZE_ERROR)
    assert h.closed()
    h = RawH2(s.port, settings=False)
    h.send(hf.PingFrame(0, opaque_data=b"12345678"))  # the first frame must be SETTINGS
    g = h.goaway()
    assert g is not None and g.error_code == PROTOCOL_ERROR and g.last_stream_id == 0
    served(s)


def test_16mb_message(s):
    h = RawH2(s.port)
    h.send(h.headers_frame(1), h.data_frame(1, (16 << 20).to_bytes(5, "big") + b"x" * 16000,
                                            end=False))
    head, _, trailers = h.answer(1)
    assert head[":status"] == "200" and trailers["grpc-status"] == RESOURCE_EXHAUSTED
    assert "grpc.max_message_bytes" in trailers["grpc-message"]
    rst = h.read_until(lambda f: isinstance(f, hf.RstStreamFrame) and f.stream_id == 1)
    assert rst.error_code == 0  # NO_ERROR: the rest of the request is not wanted
    # the same connection goes on
    h.call(3, request("api", [("plan", "after")]).SerializeToString())
    assert h.answer(3)[2]["grpc-status"] == "0"
    # grpcio sending the whole 16 MB: refused the same way
    with channel(s.port) as ch:
        with pytest.raises(grpc.RpcError) as e:
            rls_stub(ch)(request("api", [("user", "x" * (16 << 20))]), timeout=30)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    served(s)


def test_malformed_protobuf(s):
    h = RawH2(s.port)
    h.call(1, b"\x0a\xff\xff\xff\xff\x0f")  # a length beyond the message
    _, _, trailers = h.answer(1)
    assert trailers["grpc-status"] == INTERNAL
    assert "not a valid RateLimitRequest" in trailers["grpc-message"]
    h.send(h.headers_frame(3, end=True))  # no message at all
    assert h.answer(3)[2]["grpc-status"] == INTERNAL
    with channel(s.port) as ch:
        with pytest.raises(grpc.RpcError) as e:
            ch.unary_unary(RLS)(b"\x12\x03\x0a\x01", timeout=5)
        assert e.value.code() == grpc.StatusCode.INTERNAL
    served(s)


def test_unknown_method_and_not_grpc(s):
    h = RawH2(s.port)
    h.call(1, b"", path="/envoy.service.ratelimit.v3.RateLimitService/Nope")
    assert h.answer(1)[2]["grpc-status"] == UNIMPLEMENTED
    h.call(3, b"", path="/" + "x" * 300)
    assert h.answer(3)[2]["grpc-status"] == UNIMPLEMENTED
    h.send(hf.HeadersFrame(5, h.enc.encode([(":method", "GET"), (":scheme", "http"),
                                            (":path", RLS), (":authority", "s")]),
                           flags=["END_HEADERS", "END_STREAM"]))
    assert h.answer(5)[0][":status"] == "405"
    f = hf.HeadersFrame(7, h.enc.encode([(":method", "POST"), (":scheme", "http"),
                                         (":path", RLS), (":authority", "s"),
                                         ("content-type", "application/json")]),
                        flags=["END_HEADERS", "END_STREAM"])
    h.send(f)
    assert h.answer(7)[0][":status"] == "415"
    served(s)


def test_header_list_above_cap(s):
    """The client was told the limit (SETTINGS_MAX_HEADER_LIST_SIZE): a
    list above it ends the connection, after the call taken before it on
    the same connection is answered."""
    h = RawH2(s.port)
    block = h.enc.encode([(":method", "POST"), (":scheme", "http"), (":path", RLS),
                          (":authority", "s"), ("content-type", "application/grpc")] +
                         [(f"x-pad-{i}", "v" * 1000) for i in range(20)])
    first = hf.HeadersFrame(3, block[:16000])
    rest = hf.ContinuationFrame(3, block[16000:], flags=["END_HEADERS"])
    h.send(h.headers_frame(1), h.data_frame(1, frame_message(request("api", [("plan", "a")])
                                                              .SerializeToString())),
           first, rest, h.data_frame(3, frame_message(b"")))
    g = h.goaway()
    assert g is not None and g.error_code == ENHANCE_YOUR_CALM and g.last_stream_id < 3
    assert h.answer(1)[2]["grpc-status"] == "0"  # before the list, answered
    assert h.closed()
    assert not any(getattr(f, "stream_id", 0) == 3 and not isinstance(f, hf.RstStreamFrame)
                   for f in h.frames)  # the list above the limit was not answered
    served(s)


def big_entry(h, sid, size=4000):
    """Stream `sid`: a whole call whose headers put a `size`-byte field
    into the server's HPACK dynamic table (the newest entry: index 62)."""
    h.send(h.headers_frame(sid, extra=[("x-big", "a" * size)]),
           h.data_frame(sid, frame_message(request("api", [("plan", "big")]).SerializeToString())))
    assert h.answer(sid)[2]["grpc-status"] == "0"


def references(h, sid, n):
    """A HEADERS frame of a request whose header list is n one-byte
    references to dynamic table entry 62 (4,000 bytes each, decoded). Its
    other fields are never indexed: the table keeps the big entry."""
    block = h.enc.encode([hpack.NeverIndexedHeaderTuple(k, v) for k, v in [
        (":method", "POST"), (":scheme", "http"), (":path", RLS), (":authority", "s"),
        ("content-type", "application/grpc")]])
    return hf.HeadersFrame(sid, block + b"\xbe" * n, flags=["END_HEADERS", "END_STREAM"])


def server_cpu_s(s):
    with open(f"/proc/{s.proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_hpack_references_above_cap(s):
    """HEADERS frames of one-byte references to a 4,000-byte table entry:
    16 KB of them decode to 64 MB. The first frame ends the connection
    after five references; without that each frame is tens of ms of CPU."""
    h = RawH2(s.port)
    big_entry(h, 1)
    cpu = server_cpu_s(s)
    try:
        for i in range(100):  # bounded: 100 frames of 16,000 references
            h.send(references(h, 3 + 2 * i, 16000))
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed while they were still being sent
    g = h.goaway()
    assert g is not None and g.error_code == ENHANCE_YOUR_CALM and g.last_stream_id == 0
    assert h.closed()
    # 100 frames decoded whole are seconds of CPU; cut at once, a few ms
    assert server_cpu_s(s) - cpu < 0.5, server_cpu_s(s) - cpu
    served(s)


def test_hpack_references_within_cap_budgeted(grpc_sluiced):
    """Header lists each within the cap (three references, 12 KB), one
    stream after another: the decoded bytes a connection may cost in a
    second are bounded too (here 1 MiB: a test client cannot outrun the
    default's 256 MiB), and past them it ends the same way."""
    s = grpc_sluiced(extra="grpc:\n  max_header_bytes_per_second: 1MiB\n")
    h = RawH2(s.port)
    big_entry(h, 1)
    one = references(h, 1, 3).serialize()  # the same frame on stream 3, 5, ...
    for first in range(3, 8103, 180):  # bounded: 45 rounds of 90 calls, 48 MB decoded
        sids = range(first, first + 180, 2)  # 90: within the 100 concurrent streams
        try:
            h.send(b"".join(one[:5] + sid.to_bytes(4, "big") + one[9:] for sid in sids))
        except (BrokenPipeError, ConnectionResetError):
            break
        f = h.read_until(lambda f: isinstance(f, hf.GoAwayFrame) or
                         (isinstance(f, hf.HeadersFrame) and f.stream_id == sids[-1]))
        if not isinstance(f, hf.HeadersFrame):
            break
    g = next((f for f in h.frames if isinstance(f, hf.GoAwayFrame)), None) or h.goaway(timeout=10)
    assert g is not None and g.error_code == ENHANCE_YOUR_CALM
    assert h.closed()
    answered = {f.stream_id for f in h.frames if isinstance(f, hf.HeadersFrame)} - {1}
    assert 0 < len(answered) < 4050  # calls were answered (no message: INTERNAL), not all
    served(s)


def test_headers_flood(s):
    h = RawH2(s.port)
    h.read_until(lambda f: isinstance(f, hf.SettingsFrame))  # ACKed: the limit is in force
    # 1000 requests opened and never finished: only 100 may be open at once
    h.send(*[h.headers_frame(sid) for sid in range(1, 2001, 2)])
    f = h.read_until(lambda f: isinstance(f, (hf.GoAwayFrame, hf.RstStreamFrame)))
    if isinstance(f, hf.GoAwayFrame):
        assert f.error_code == PROTOCOL_ERROR and f.last_stream_id == 199  # the 100th
        assert h.closed()
    else:
        assert f.error_code == REFUSED_STREAM and f.stream_id == 201
    served(s)


def test_settings_flood(s):
    h = RawH2(s.port)
    h.send(*[hf.SettingsFrame(0) for _ in range(5000)])
    g = h.goaway()
    assert g is not None and g.error_code == ENHANCE_YOUR_CALM
    assert h.closed()
    served(s)


def test_stream_reset_flood(s):
    h = RawH2(s.port)
    frames = []
    for sid in range(1, 6001, 2):
        frames += [h.headers_frame(sid), hf.RstStreamFrame(sid, error_code=CANCEL)]
    h.send(*frames)
    g = h.goaway()
    assert g is not None and g.error_code == ENHANCE_YOUR_CALM
    assert h.closed()
    served(s)


def flood_while_served(s, frame, n):
    """Send n copies of a frame in bursts of 1,000 while another connection
    is served between the bursts: the GOAWAY the flooder gets."""
    h = RawH2(s.port)
    try:
        for _ in range(n // 1000):  # bounded
            h.send(frame * 1000)
            served(s)
    except (BrokenPipeError, ConnectionResetError):
        pass
    g = h.goaway()
    assert h.closed()
    return g


def test_priority_flood(s):
    """PRIORITY frames (which nghttp2 ignores: we send
    SETTINGS_NO_RFC7540_PRIORITIES) count in the flood budget."""
    frame = hf.PriorityFrame(1, depends_on=0, stream_weight=16).serialize()
    g = flood_while_served(s, frame, 10000)
    assert g is not None and g.error_code == ENHANCE_YOUR_CALM
    served(s)


def test_unknown_frame_flood(s):
    """Frames of a type no one speaks are ignored, and counted."""
    frame = bytes([0, 0, 0, 0x42, 0, 0, 0, 0, 0])  # empty, type 0x42, stream 0
    g = flood_while_served(s, frame, 10000)
    assert g is not None and g.error_code == ENHANCE_YOUR_CALM
    served(s)


def buffer_bytes(s):
    for line in s.request("GET", "/metrics")[2].decode().splitlines():
        if line.startswith("sluice_connection_buffer_bytes "):
            return float(line.split()[1])
    raise AssertionError("sluice_connection_buffer_bytes not in /metrics")


def hold_messages(h, streams, size=40000):
    """Open `streams` calls on h, each with `size` bytes of a larger
    message and no end, one after another within HTTP/2's flow control
    (the server's window update for the connection before the next): the
    stream ids whose answer came back, with those answers' trailers."""
    refused = {}
    for sid in range(1, 2 * streams, 2):
        body = frame_message(b"x" * 60000)[:size]
        h.send(h.headers_frame(sid), *[h.data_frame(sid, body[i:i + 16000], end=False)
                                       for i in range(0, len(body), 16000)])
        f = h.read_until(lambda f: (isinstance(f, hf.WindowUpdateFrame) and f.stream_id == 0) or
                         (isinstance(f, hf.HeadersFrame) and f.stream_id == sid))
        assert f is not None, "connection closed"
        if isinstance(f, hf.HeadersFrame):
            refused[sid] = h.answer(sid)[2]
            break
    return refused


def test_grpc_messages_within_the_buffer_budget(grpc_sluiced):
    """The calls' message buffers count in server.max_buffer_bytes, as the
    other protocols' buffers do: a client holding many incomplete large
    messages is refused a call (RESOURCE_EXHAUSTED) once the budget is
    spent, its connection goes on, small calls still pass, and closing it
    gives the memory back."""
    s = grpc_sluiced(extra="server:\n  max_buffer_bytes: 1MiB\n")
    h = RawH2(s.port)
    refused = hold_messages(h, 40)  # 40 x 64 KiB would be 2.5 MiB
    assert len(refused) == 1, "no call refused: the messages are outside the budget"
    (sid, trailers), = refused.items()
    assert sid > 1 and trailers["grpc-status"] == RESOURCE_EXHAUSTED
    assert "server.max_buffer_bytes" in trailers["grpc-message"]
    held = buffer_bytes(s)  # the budget, and small buffers that always pass
    assert 512 << 10 <= held <= (1 << 20) + (128 << 10), held
    # the same connection goes on; a small call passes
    h.call(sid + 2, request("api", [("plan", "small")]).SerializeToString())
    assert h.answer(sid + 2)[2]["grpc-status"] == "0"
    served(s)
    assert "grpc.buffer_budget" in s.log_text()
    # its memory goes back with it: another client may hold large messages
    h.close()
    assert wait_for(lambda: buffer_bytes(s) < 256 << 10), buffer_bytes(s)
    h2 = RawH2(s.port)
    assert hold_messages(h2, 4) == {}
    h2.close()
    assert s.proc.poll() is None
