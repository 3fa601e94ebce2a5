# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_conn.py - the gRPC listener as a connection: health checking,
one port shared with RESP and HTTP/1.1, 100 concurrent streams on one
connection, flow control (a client that stops reading is held to its
window and stalls no one else), h2load (Debian's nghttp2-client) as a
second, independent client, GOAWAY with the last stream id on SIGTERM,
PING, the connection layer's read and idle timeouts, the write timeout of
a client that grants no flow-control window, and docs/grpc.md's Envoy
snippet and keys.
Real sluiced (memory store, test clock), real clients; loads are bounded.
"""
import re
import signal
import subprocess
import time
import urllib.request

import grpc
import hyperframe.frame as hf
import pytest
import redis

from grpc_client import (CHECK, RawH2, channel, frame_message, health_pb2, health_stub,
                         request, rls_stub)
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401
from conftest import wait_for  # tests/integration's (on the path through grpc_fixtures)


def metric(s, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{s.port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_health_check(grpc_sluiced):
    s = grpc_sluiced()
    with channel(s.port) as ch:
        check = health_stub(ch)
        for service in ["", "envoy.service.ratelimit.v3.RateLimitService"]:
            r = check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert r.status == health_pb2.HealthCheckResponse.SERVING
        assert s.request("GET", "/readyz")[0] == 200  # the same test
        with pytest.raises(grpc.RpcError) as e:
            check(health_pb2.HealthCheckRequest(service="other"), timeout=5)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_one_port_three_protocols(grpc_sluiced):
    s = grpc_sluiced()
    assert redis.Redis(port=s.port, socket_timeout=5).ping()
    assert s.request("GET", "/healthz")[0] == 200
    with channel(s.port) as ch:
        assert rls_stub(ch)(request("api", [("user", "p")]), timeout=5).overall_code == 1


def test_100_concurrent_streams_on_one_connection(grpc_sluiced):
    s = grpc_sluiced()
    msg = request("api", [("path", "/c")]).SerializeToString()
    h = RawH2(s.port)
    h.read_until(lambda f: isinstance(f, hf.SettingsFrame))  # and ACK it
    h.send(*[f for sid in range(1, 201, 2)
             for f in (h.headers_frame(sid), h.data_frame(sid, frame_message(msg)))])
    statuses = {}
    for sid in range(1, 201, 2):
        head, data, trailers = h.answer(sid)
        assert head[":status"] == "200"
        statuses[sid] = trailers["grpc-status"]
    assert set(statuses.values()) == {"0"} and len(statuses) == 100
    h.close()
    # the same through grpcio: one channel is one connection
    with channel(s.port) as ch:
        rl = rls_stub(ch)
        futures = [rl.future(request("api", [("plan", f"f{i}")]), timeout=10) for i in range(100)]
        assert [f.result().overall_code for f in futures] == [1] * 100


def test_client_that_stops_reading_stalls_no_one(grpc_sluiced):
    s = grpc_sluiced()
    msg = request("api", [("plan", "stall")]).SerializeToString()
    stalled = RawH2(s.port)
    n = 1200  # more answers than the 65,535-byte window holds
    stalled.send(*[f for sid in range(1, 2 * n, 2)
                   for f in (stalled.headers_frame(sid), stalled.data_frame(sid, frame_message(msg)))])
    # Another connection is served meanwhile, promptly.
    with channel(s.port) as ch:
        rl = rls_stub(ch)
        # (a worker blocked by the stalled one would let these run into
        # their 5 s deadline: they would fail)
        assert all(rl(request("api", [("plan", f"o{i}")]), timeout=5).overall_code == 1
                   for i in range(50))
    # The stalled client got no more DATA than its window allowed ...
    data = 0
    try:
        while True:
            f = stalled.read_until(lambda f: True, timeout=1)
            if isinstance(f, hf.DataFrame):
                data += len(f.data)
    except TimeoutError:
        pass
    assert 0 < data <= 65535
    # ... and once it opens its window every stream is answered or refused.
    stalled.send(hf.WindowUpdateFrame(0, window_increment=1 << 24))
    done = {}
    for sid in range(1, 2 * n, 2):
        _, _, trailers = stalled.answer(sid, timeout=5)
        done[sid] = trailers.get("grpc-status") == "0" or trailers.get("rst") == 7
    assert all(done.values()) and len(done) == n
    stalled.close()


def closed_for_write_timeout(s):
    text = urllib.request.urlopen(f"http://127.0.0.1:{s.port}/metrics", timeout=5).read().decode()
    m = re.search(r'^sluice_connections_closed_total\{reason="write_timeout"\} (\S+)$', text, re.M)
    return float(m.group(1)) if m else 0.0


def test_client_that_grants_no_window_is_closed(grpc_sluiced):
    """A client that reads its socket but grants no flow-control window
    (SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE) holds its streams
    and their replies: after server.write_timeout without progress its
    connection ends (GOAWAY ENHANCE_YOUR_CALM) and its memory is freed,
    while a client that reads is served throughout."""
    s = grpc_sluiced(extra="server:\n  write_timeout: 1s\n")
    msg = request("api", [("plan", "window")]).SerializeToString()
    held = RawH2(s.port, settings=False)
    held.send(hf.SettingsFrame(0, settings={hf.SettingsFrame.INITIAL_WINDOW_SIZE: 0}))
    held.send(*[f for sid in range(1, 21, 2)
                for f in (held.headers_frame(sid), held.data_frame(sid, frame_message(msg)))])
    # the replies' headers leave (HEADERS are not flow-controlled), their messages wait
    assert held.read_until(lambda f: isinstance(f, hf.HeadersFrame) and f.stream_id == 19)
    assert metric(s, "sluice_connections") >= 2  # held, and this scrape's own
    with channel(s.port) as ch:
        rl = rls_stub(ch)
        for i in range(10):  # about 2 s: a reader is never cut by the timeout
            assert rl(request("api", [("plan", f"r{i}")]), timeout=5).overall_code == 1
            time.sleep(0.2)
        g = held.goaway(timeout=15)  # generous: 1 s is the timeout
        assert g is not None and g.error_code == 11  # ENHANCE_YOUR_CALM
        assert held.closed(timeout=10)
        assert not any(isinstance(f, hf.DataFrame) for f in held.frames)
        assert rl(request("api", [("plan", "after")]), timeout=5).overall_code == 1
    assert closed_for_write_timeout(s) == 1
    assert wait_for(lambda: metric(s, "sluice_connections") == 1), \
        metric(s, "sluice_connections")  # the scrape's own: the rest were freed


def test_h2load_framed_requests(grpc_sluiced, tmp_path):
    s = grpc_sluiced()
    body = tmp_path / "req.bin"
    body.write_bytes(frame_message(request("api", [("plan", "h2load")]).SerializeToString()))
    before = metric(s, "sluice_check_duration_seconds_count")
    out = subprocess.run(
        ["h2load", "-n", "2000", "-c", "4", "-m", "16", "-d", str(body),
         "-H", "content-type: application/grpc", "-H", "te: trailers",
         f"http://127.0.0.1:{s.port}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert re.search(r"requests: 2000 total, 2000 started, 2000 done, 2000 succeeded", out.stdout), \
        out.stdout
    assert "2000 2xx" in out.stdout
    assert metric(s, "sluice_check_duration_seconds_count") - before == 2000


def test_goaway_on_sigterm(grpc_sluiced):
    s = grpc_sluiced()
    h = RawH2(s.port)
    h.call(1, request("api", [("user", "g")]).SerializeToString())
    assert h.answer(1)[2]["grpc-status"] == "0"
    h.call(3, request("api", [("user", "g")]).SerializeToString())
    assert h.answer(3)[2]["grpc-status"] == "0"
    s.proc.send_signal(signal.SIGTERM)
    g = h.goaway()
    assert g is not None and g.error_code == 0 and g.last_stream_id == 3
    assert h.closed()
    assert s.proc.wait(10) == 0


def test_docs_snippet(grpc_sluiced):
    """docs/grpc.md's Envoy configuration: the fields that make Envoy speak
    what these tests speak, then one call as that Envoy would make it."""
    import pathlib
    import yaml
    text = (pathlib.Path(__file__).parents[2] / "docs" / "grpc.md").read_text()
    envoy = yaml.safe_load(re.findall(r"```yaml\n(.*?)```", text, re.S)[1])
    cluster = envoy["static_resources"]["clusters"][0]
    opts = cluster["typed_extension_protocol_options"][
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    assert "http2_protocol_options" in opts["explicit_http_config"]
    assert cluster["health_checks"][0]["grpc_health_check"] == {}  # service ""
    hcm = envoy["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    rl = hcm["typed_config"]["http_filters"][0]
    assert rl["name"] == "envoy.filters.http.ratelimit"
    svc = rl["typed_config"]["rate_limit_service"]
    assert svc["transport_api_version"] == "V3"
    assert svc["grpc_service"]["envoy_grpc"]["cluster_name"] == cluster["name"]
    timeout_ms = round(float(rl["typed_config"]["timeout"].rstrip("s")) * 1000)
    s = grpc_sluiced()
    h = RawH2(s.port)
    h.call(1, request(rl["typed_config"]["domain"], [("user", "envoy")]).SerializeToString(),
           extra=[("grpc-timeout", f"{timeout_ms}m"), ("user-agent", "envoy")])
    head, data, trailers = h.answer(1)
    assert head["content-type"] == "application/grpc" and trailers["grpc-status"] == "0"
    h.call(3, b"", path=CHECK)
    assert h.answer(3)[2]["grpc-status"] == "0"


def test_ping_answered(grpc_sluiced):
    s = grpc_sluiced()
    h = RawH2(s.port)
    h.send(hf.PingFrame(0, opaque_data=b"sluice!!"))
    ack = h.read_until(lambda f: isinstance(f, hf.PingFrame) and "ACK" in f.flags)
    assert ack.opaque_data == b"sluice!!"


def test_incomplete_call_read_timeout_and_idle_goaway(grpc_sluiced):
    """The connection layer's timeouts apply: a call whose message never
    completes is cut after server.read_timeout; a connection with no call
    is sent GOAWAY after server.idle_timeout, then closed."""
    s = grpc_sluiced(extra="server:\n  read_timeout: 1s\n  idle_timeout: 2s\n")
    stuck = RawH2(s.port)
    stuck.send(stuck.headers_frame(1), stuck.data_frame(1, b"\x00\x00\x00\x00\x10abc", end=False))
    idle = RawH2(s.port)
    idle.call(1, request("api", [("user", "i")]).SerializeToString())
    assert idle.answer(1)[2]["grpc-status"] == "0"
    assert stuck.closed(timeout=10)
    g = idle.goaway(timeout=10)
    assert g is not None and g.error_code == 0 and g.last_stream_id == 1
    assert idle.closed(timeout=10)
    served = RawH2(s.port)  # the listener itself is fine
    served.call(1, request("api", [("user", "j")]).SerializeToString())
    assert served.answer(1)[2]["grpc-status"] == "0"


def test_header_budget_below_the_list_refused(tmp_path):
    """A per-second budget smaller than one header list is refused with a
    message naming the key; 0 (no bound) is taken."""
    import os
    for value, ok in (("1KiB", False), ("0", True), ("16KiB", True)):
        cfg = tmp_path / "sluice.yaml"
        cfg.write_text(f"grpc:\n  max_header_bytes_per_second: {value}\n")
        out = subprocess.run([os.environ["SLUICED"], "-c", str(cfg), "-t"], capture_output=True,
                             text=True, timeout=10)
        assert (out.returncode == 0) == ok, (value, out.stdout, out.stderr)
        if not ok:
            assert "grpc.max_header_bytes_per_second must be 0 (no bound) or from " \
                   "grpc.max_header_list_bytes to 64GiB" in out.stdout + out.stderr


def test_config_keys_documented():
    """Every grpc.* key of sluiced --help is in docs/configuration.md and
    docs/grpc.md with the same default."""
    import os
    import pathlib
    root = pathlib.Path(__file__).parents[2]
    out = subprocess.run([os.environ["SLUICED"], "--help"], capture_output=True, text=True,
                         timeout=10).stdout
    keys = re.findall(r"^\s+(grpc\.\S+)\s+(\S+)\s", out, re.M)
    assert len(keys) == 6
    for doc in ("configuration.md", "grpc.md"):
        text = (root / "docs" / doc).read_text()
        for key, default in keys:
            assert f"| `{key}` | `{default}` |" in text, (doc, key, default)
