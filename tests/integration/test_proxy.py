# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy.py - sluiced as a reverse proxy in front of a real upstream
(proxy_upstream.py), driven by curl and Python's http.client: methods with
and without bodies, the headers it adds and drops, keep-alive reuse,
chunked bodies both ways, Expect: 100-continue, a WebSocket tunnel, local
answers (404, 413), and the configuration checks. Failures, smuggling and
the access log are in test_proxy_fail.py; 1 GB bodies in
test_proxy_stream.py.
"""
import base64
import hashlib
import json
import os
import socket
import subprocess

from conftest_proxy import proxy_sluiced, route, upstream  # noqa: F401 (fixtures)


def echo(p, method, path="/echo", body=None, headers=None):
    status, h, data = p.request(method, path, body=body, headers=headers)
    assert status == 200, data
    return h, json.loads(data)


def hdrs(e):
    return {k.lower(): v for k, v in e["headers"]}


def test_methods_with_and_without_bodies(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    _, e = echo(p, "GET", "/echo/a?x=1")
    assert (e["method"], e["path"], e["body_len"]) == ("GET", "/echo/a?x=1", 0)
    _, e = echo(p, "POST", body=b"hello", headers={"Content-Type": "text/plain"})
    assert (e["method"], e["body"]) == ("POST", "hello")
    assert hdrs(e)["content-length"] == "5"
    _, e = echo(p, "PUT", body=b"x" * 100000)
    assert (e["method"], e["body_len"]) == ("PUT", 100000)
    assert e["body_sha256"] == hashlib.sha256(b"x" * 100000).hexdigest()
    _, e = echo(p, "PUT", headers={"Content-Length": "0"})
    assert (e["method"], e["body_len"]) == ("PUT", 0)
    _, e = echo(p, "DELETE")
    assert e["method"] == "DELETE"
    # curl, a second real client
    out = subprocess.run(["curl", "-sS", "-X", "POST", "--data-binary", "curl body",
                          f"http://127.0.0.1:{p.port}/echo/curl"],
                         capture_output=True, timeout=10, check=True)
    e = json.loads(out.stdout)
    assert (e["method"], e["path"], e["body"]) == ("POST", "/echo/curl", "curl body")


def test_forwarding_headers_added_and_hop_by_hop_dropped(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    h, e = echo(p, "GET", headers={
        "X-Forwarded-For": "203.0.113.7", "Forwarded": "for=203.0.113.7",
        "Via": "1.1 edge", "Connection": "keep-alive, X-Secret", "X-Secret": "drop me",
        "Keep-Alive": "timeout=5", "TE": "trailers", "Proxy-Connection": "keep-alive",
        "X-Kept": "yes"})
    got = hdrs(e)
    assert got["x-forwarded-for"] == "203.0.113.7, 127.0.0.1"
    assert got["forwarded"] == "for=203.0.113.7, for=127.0.0.1;proto=http"
    assert got["via"] == "1.1 edge, 1.1 sluice"
    assert got["x-forwarded-proto"] == "http"
    assert got["x-kept"] == "yes"
    for gone in ["x-secret", "keep-alive", "te", "proxy-connection", "connection"]:
        assert gone not in got, gone
    assert h["via"] == "1.1 sluice"  # on the response too
    # a terminator in front already said https: kept
    _, e = echo(p, "GET", headers={"X-Forwarded-Proto": "https"})
    assert hdrs(e)["x-forwarded-proto"] == "https"


def test_keepalive_reuse(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    before = u.stats()["connections"]
    for _ in range(5):  # five client connections, four requests each
        c = p.conn()
        for _ in range(4):
            assert p.request("GET", "/echo", conn=c)[0] == 200
        c.close()
    used = u.stats()["connections"] - before - 1  # minus the stats request's own
    assert 1 <= used < 20, used


def test_chunked_request_body(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    pieces = [b"a" * 10, b"b" * 70000, b"c"]
    c = p.conn()
    c.request("POST", "/echo", body=iter(pieces), encode_chunked=True,
              headers={"Transfer-Encoding": "chunked"})
    r = c.getresponse()
    e = json.loads(r.read())
    assert r.status == 200
    assert e["body_len"] == 70011
    assert e["body_sha256"] == hashlib.sha256(b"".join(pieces)).hexdigest()
    assert hdrs(e)["transfer-encoding"] == "chunked"
    assert "content-length" not in hdrs(e)


def test_chunked_response(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    status, h, data = p.request("GET", "/download?n=300000&chunked=1")
    assert status == 200 and h["transfer-encoding"] == "chunked"
    assert data == (bytes(range(256)) * 1200)[:300000]
    # an HTTP/1.0 client gets the body until the connection closes
    raw = p.raw(b"GET /download?n=1000&chunked=1 HTTP/1.0\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" in head
    assert b"Transfer-Encoding" not in head and body == bytes(range(256)) * 3 + bytes(range(232))


def test_expect_100_continue(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
              b"Expect: 100-continue\r\n\r\n")
    assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
    s.sendall(b"hello")
    f = s.makefile("rb")
    assert f.readline().startswith(b"HTTP/1.1 200")
    head = b""
    while (line := f.readline()) != b"\r\n":
        head += line
    n = int([ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")][0]
            .split(b":")[1])
    e = json.loads(f.read(n))
    assert e["body"] == "hello" and "expect" not in hdrs(e)
    s.close()
    # curl sends Expect and waits for the 100 before the body
    out = subprocess.run(["curl", "-sS", "-H", "Expect: 100-continue", "--expect100-timeout", "5",
                          "--data-binary", "@-", f"http://127.0.0.1:{p.port}/echo"],
                         input=b"y" * 500000, capture_output=True, timeout=10, check=True)
    assert json.loads(out.stdout)["body_len"] == 500000
    # over the route's max_body_bytes (1MiB): 413 instead of 100, the body never sent
    out = subprocess.run(["curl", "-sS", "-w", "%{http_code} %{size_upload}", "-o", "/dev/null",
                          "-H", "Expect: 100-continue", "--expect100-timeout", "5",
                          "--data-binary", "@-", f"http://127.0.0.1:{p.port}/echo"],
                         input=b"y" * 2000000, capture_output=True, timeout=10, check=True)
    assert out.stdout.split()[0] == b"413", out.stdout
    assert float(out.stdout.split()[1]) < 2000000


def ws_frame(payload, opcode=1):
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 126
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked


def test_websocket_upgrade_echo(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    key = base64.b64encode(os.urandom(16)).decode()
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall((f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101")
    want = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    assert b"Sec-WebSocket-Accept: " + want in head
    assert b"Upgrade: websocket" in head
    for msg in [b"hello", b"through the tunnel"]:
        s.sendall(ws_frame(msg))
        got = b""
        while len(got) < 2 + len(msg):
            got += s.recv(100)
        assert got == bytes([0x81, len(msg)]) + msg
    s.sendall(ws_frame(b"", opcode=8))  # close: the upstream echoes it and closes
    got = b""
    while (piece := s.recv(100)):
        got += piece
    assert got == b"\x88\x00"
    s.close()


def test_no_route_404_and_body_limit_413(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"], prefix="/api/",
                            extra="methods: [GET, POST]\nmax_body_bytes: 1000"))
    status, _, body = p.request("GET", "/other")
    assert status == 404 and b"no route" in body
    assert p.request("DELETE", "/api/echo")[0] == 404
    assert p.request("POST", "/api/echo", body=b"x" * 1000)[0] == 200
    status, h, _ = p.request("POST", "/api/echo", body=b"x" * 1001)
    assert status == 413 and h["connection"] == "close"


def test_routes_by_host_and_prefix(proxy_sluiced, upstream):
    a, b = upstream(), upstream()
    p = proxy_sluiced(route("by_host", [f"127.0.0.1:{a.port}"], extra="host: api.example")
                      + route("rest", [f"127.0.0.1:{b.port}"]))
    assert p.request("GET", "/echo", headers={"Host": "api.example:8080"})[0] == 200
    assert p.request("GET", "/echo", headers={"Host": "other.example"})[0] == 200
    assert a.stats()["requests"] == 2 and b.stats()["requests"] == 2


def test_nginx_as_upstream(proxy_sluiced, tmp_path):
    """Real nginx (Debian's nginx-light) behind sluiced."""
    from conftest import free_port
    port = free_port()
    d = tmp_path / "nginx"
    d.mkdir()
    (d / "nginx.conf").write_text(f"""worker_processes 1; daemon off; pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "nginx says $request_method $request_length\\n"; }}
    }}
}}
""")
    ng = subprocess.Popen(["nginx", "-p", str(d), "-c", str(d / "nginx.conf")],
                          stderr=subprocess.DEVNULL)
    try:
        p = proxy_sluiced(route("nginx", [f"127.0.0.1:{port}"]))
        import time
        deadline = time.monotonic() + 10
        while p.request("GET", "/")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        c = p.conn()
        for method, body in [("GET", None), ("POST", b"abc"), ("PUT", b"x" * 5000), ("PUT", None)]:
            status, _, data = p.request(method, "/thing", body=body, conn=c)
            assert status == 200 and data.startswith(f"nginx says {method}".encode())
        c.request("POST", "/chunked", body=iter([b"a" * 100, b"b"]), encode_chunked=True,
                  headers={"Transfer-Encoding": "chunked"})
        r = c.getresponse()
        assert r.status == 200 and r.read().startswith(b"nginx says POST")
        log = (d / "access.log").read_text().splitlines()
        assert len(log) >= 5  # the last line may still be on its way
    finally:
        ng.terminate()
        ng.wait(10)


def test_config_checks(tmp_path):
    def check(text):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(text)
        r = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                           text=True, timeout=10)
        return r.returncode, r.stderr

    rc, err = check("listeners: [{address: 127.0.0.1, port: 0, protocols: [proxy, http1]}]\n"
                    "proxy: {routes: [{upstream: {servers: ['127.0.0.1:1']}}]}\n")
    assert rc == 1 and "cannot share a listener" in err
    rc, err = check("listeners: [{address: 127.0.0.1, port: 0, protocols: [proxy]}]\n")
    assert rc == 1 and "proxy.routes is empty" in err
    rc, err = check("proxy:\n  routes:\n    - upstream: {servers: ['nohost']}\n")
    assert rc == 1 and "c.yaml:3:28: a server is host:port" in err, err
    rc, err = check("proxy:\n  routes:\n    - upstream: {servers: ['127.0.0.1:80']}\n"
                    "      read_timeout: 5\n")
    assert rc == 1 and "c.yaml:4:21: read_timeout must be a duration" in err, err
    rc, err = check("proxy:\n  routes:\n    - path_prefix: /x\n")
    assert rc == 1 and "a route needs an upstream" in err
    rc, err = check("listeners: [{address: 127.0.0.1, port: 0, protocols: [proxy]}]\n"
                    "proxy:\n  read_timeout: 2s\n  routes:\n"
                    "    - upstream: {servers: ['127.0.0.1:80', '[::1]:81']}\n")
    assert rc == 0, err
