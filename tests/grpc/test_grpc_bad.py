# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_bad.py - bad input on the gRPC listener, each refused with the
right HTTP/2 or gRPC error while other connections are served: garbage
after the preface, a 16 MB message, a malformed protobuf, an unknown
method, a header list above the cap, a HEADERS flood past the stream
limit, a SETTINGS flood and a stream-reset flood. After each, a fresh
grpcio channel is answered (the daemon is alive and not stalled). Raw
frames through hyperframe/hpack; loads are bounded.
"""
import grpc
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
    h = RawH2(s.port)
    block = h.enc.encode([(":method", "POST"), (":scheme", "http"), (":path", RLS),
                          (":authority", "s"), ("content-type", "application/grpc")] +
                         [(f"x-pad-{i}", "v" * 1000) for i in range(20)])
    first = hf.HeadersFrame(1, block[:16000])
    rest = hf.ContinuationFrame(1, block[16000:], flags=["END_HEADERS"])
    h.send(first, rest, h.data_frame(1, frame_message(b"")))
    _, _, trailers = h.answer(1)
    assert trailers["grpc-status"] == RESOURCE_EXHAUSTED
    assert "grpc.max_header_list_bytes" in trailers["grpc-message"]
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
