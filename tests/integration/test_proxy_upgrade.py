# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy_upgrade.py - which protocol upgrades the proxy passes on:
only those a route lists in `upgrades:` ([websocket] by default), never
h2c. An `Upgrade: h2c` request (with its HTTP2-Settings) goes upstream as
a plain request, so an upstream that would answer 101 to it never opens a
tunnel in which later requests skip the routes and limits: of 10
requests on one connection to a 3-per-hour route, 3 are served. An
upstream that switches to a protocol the route does not list gets 502;
`upgrades: []` passes no upgrade at all; bad `upgrades` values are
configuration errors. HTTP/0.9 and HTTP/2.0 request lines get 400, on
the proxy listener and on the HTTP API's.
"""
import base64
import json
import os
import socket
import subprocess

from conftest import START_MS
from conftest_http import http_sluiced  # noqa: F401 (fixture)
from conftest_proxy import proxy_sluiced, route, upstream  # noqa: F401 (fixtures)

RULES = """\
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 3}
"""

H2C = ("GET /echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
       "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n").encode()
PLAIN = b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"


def start(proxy_sluiced, tmp_path, up, more=""):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    routes = route("edge", [f"127.0.0.1:{up.port}"],
                   extra="domain: edge\nrate_limits:\n  - actions: [{remote_address: {}}]\n"
                   + more)
    return proxy_sluiced(routes, extra=f"rules:\n  files: [{rules}]",
                         args=["--test-clock", str(START_MS)])


def response(f):
    """(status, headers, body) of one response read from file f; a 1xx has
    no body."""
    line = f.readline()
    assert line.startswith(b"HTTP/1.1 "), line
    status = int(line.split()[1])
    headers = {}
    while (h := f.readline()) not in (b"\r\n", b""):
        k, _, v = h.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", 0)) if status >= 200 else 0
    return status, headers, f.read(n)


def test_h2c_upgrade_opens_no_tunnel_past_the_limits(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, u)
    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    f = s.makefile("rb")
    s.sendall(H2C)
    status, _, body = response(f)
    assert status == 200, status  # not 101: forwarded as a plain request
    seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert "upgrade" not in seen and "http2-settings" not in seen, seen
    assert "upgrade" not in seen.get("connection", "").lower()
    served = 1
    for _ in range(9):  # the same connection: every request meets the limit
        s.sendall(PLAIN)
        status, _, _ = response(f)
        assert status in (200, 429), status
        served += status == 200
    s.close()
    assert served == 3, served
    assert u.stats()["requests"] == 3 + 1  # and /_stats itself


def test_h2c_alone_each_request_decided(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, u)
    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    f = s.makefile("rb")
    statuses = []
    for _ in range(10):
        s.sendall(H2C)
        statuses.append(response(f)[0])
    s.close()
    assert statuses == [200] * 3 + [429] * 7, statuses


def ws_request(path="/ws"):
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def test_websocket_upgrades_by_default_and_counts(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, u)
    got = []
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
        s.sendall(ws_request())
        status, headers, _ = response(s.makefile("rb"))
        got.append(status)
        if status == 101:
            assert headers["upgrade"] == "websocket"
        s.close()
    assert got == [101, 101, 101, 429], got  # the upgrade request itself is limited


def test_empty_upgrades_passes_no_websocket(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, u, more="upgrades: []")
    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s.sendall(ws_request())
    status, _, _ = response(s.makefile("rb"))
    s.close()
    assert status == 426  # the upstream saw a plain request, no Upgrade


def test_listed_protocols_only(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, u, more="upgrades: [Foo]")
    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s.sendall(ws_request())  # websocket is not in [foo]
    status, _, _ = response(s.makefile("rb"))
    s.close()
    assert status == 426


def test_upstream_switching_to_an_unlisted_protocol_is_502(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, u)
    got = p.raw(ws_request("/ws_as_h2c"))
    assert got.startswith(b"HTTP/1.1 502"), got[:200]
    assert b"101" not in got.split(b"\r\n")[0]


def check_config(tmp_path, upgrades):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("proxy:\n  routes:\n    - upstream: {servers: ['127.0.0.1:80']}\n"
                   f"      upgrades: {upgrades}\n")
    r = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                       text=True, timeout=10)
    return r.returncode, r.stderr


def test_upgrades_configuration_errors(tmp_path):
    rc, err = check_config(tmp_path, "websocket")
    assert rc == 1 and "c.yaml:4:17: upgrades must be a list of protocols" in err, err
    rc, err = check_config(tmp_path, "[websocket, h2c]")
    assert rc == 1 and "c.yaml:4:29: h2c cannot be tunnelled" in err, err
    rc, err = check_config(tmp_path, "[H2C]")
    assert rc == 1 and "h2c cannot be tunnelled" in err, err
    rc, err = check_config(tmp_path, "['web socket']")
    assert rc == 1 and "an upgrade is a protocol name like websocket" in err, err
    rc, err = check_config(tmp_path, "[websocket/13]")
    assert rc == 1 and "without a version" in err, err
    rc, err = check_config(tmp_path, "[" + ", ".join(f"p{i}" for i in range(9)) + "]")
    assert rc == 1 and "at most 8 upgrades" in err, err
    rc, err = check_config(tmp_path, "[{a: b}]")
    assert rc == 1 and "an upgrade is a protocol name" in err, err
    for ok in ("[]", "[websocket]", "[websocket, foo]"):
        rc, err = check_config(tmp_path, ok)
        assert rc == 0, (ok, err)


BAD_VERSIONS = [b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", b"GET /\r\n\r\n",
                b"GET / HTTP/0.9\r\nHost: x\r\n\r\n"]


def test_http09_and_http2_request_lines_proxy(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, u)
    for req in BAD_VERSIONS:
        got = p.raw(req)
        assert got.startswith(b"HTTP/1.1 400"), (req, got[:200])
    assert u.stats()["requests"] == 1  # only /_stats


def test_http09_and_http2_request_lines_api(http_sluiced):
    s = http_sluiced(protocols="http1")
    for req in BAD_VERSIONS:
        c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        c.sendall(req)
        got = b""
        while (piece := c.recv(4096)):
            got += piece
        c.close()
        assert got.startswith(b"HTTP/1.1 400"), (req, got[:200])
