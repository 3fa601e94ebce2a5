# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy_tls.py - the proxy to upstreams over TLS (`upstream.tls`),
with Debian's nginx as the TLS server (certificates from conftest_tls.Pki):
requests pass with the upstream's certificate verified against the test CA
(by address and by name); a certificate for another name and one of an
untrusted CA are refused (502, counted by reason in /metrics), and
`verify: false` accepts the untrusted one; a client keep-alive's requests
share a few pooled TLS connections, and new connections resume the last
session; a client certificate reaches an nginx that requires one; files
that cannot be read and a key that is not its certificate's refuse the
start, naming the key.
"""
import base64
import hashlib
import json
import os
import re
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import free_port
from conftest_proxy import proxy_sluiced, route, upstream  # noqa: F401 (fixtures)
from conftest_tls import pki  # noqa: F401 (fixture)

NGINX = "/usr/sbin/nginx"


class Nginx:
    """One nginx with TLS servers on free loopback ports: `servers` maps a
    name to its extra directives (certificate and key at least)."""

    def __init__(self, d, servers):
        d.mkdir()
        self.d = d
        self.ports = {name: free_port() for name in servers}
        blocks = ""
        for name, extra in servers.items():
            blocks += f"""    server {{
        listen 127.0.0.1:{self.ports[name]} ssl;
        keepalive_requests 10000;
        {extra}
        location / {{
            return 200 "{name} c=$connection r=$ssl_session_reused dn=$ssl_client_s_dn\\n";
        }}
    }}
"""
        (d / "nginx.conf").write_text(f"""worker_processes 1; daemon off; pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
{blocks}}}
""")
        self.proc = subprocess.Popen([NGINX, "-e", str(d / "error.log"), "-p", str(d),
                                      "-c", str(d / "nginx.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        for port in self.ports.values():
            while True:
                assert self.proc.poll() is None, (d / "error.log").read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "nginx did not start"
                    time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def nginx(tmp_path):
    started = []

    def start(servers):
        assert os.path.exists(NGINX), "nginx is not installed (scripts/deps.sh test installs it)"
        n = Nginx(tmp_path / f"nginx{len(started)}", servers)
        started.append(n)
        return n

    yield start
    for n in started:
        n.stop()


def cert(pki, name):
    return (f"ssl_certificate {pki.path(name + '.pem')}; "
            f"ssl_certificate_key {pki.path(name + '.key')};")


def tls_route(name, server, tls, prefix=None, upstream_extra=""):
    return route(name, [server], prefix=prefix or f"/{name}",
                 upstream_extra=f"tls: {{{tls}}}\n{upstream_extra}")


def start(proxy_sluiced, routes):
    admin = free_port()
    p = proxy_sluiced(routes,
                      listeners=f"  - {{address: 127.0.0.1, port: {admin}, protocols: [http1]}}\n")
    p.admin = admin
    return p


def metrics(p):
    with urllib.request.urlopen(f"http://127.0.0.1:{p.admin}/metrics", timeout=5) as r:
        return r.read().decode()


def counter(p, name, reason=None):
    label = '\\{reason="%s"\\}' % reason if reason else ""
    m = re.search(r"^%s%s (\d+)$" % (name, label), metrics(p), re.M)
    assert m, f"no {name} {reason or ''} in /metrics"
    return int(m.group(1))


def failures(p, reason):
    return counter(p, "sluice_proxy_upstream_tls_failures_total", reason)


def test_verified_pooled_and_resumed(proxy_sluiced, pki, nginx):
    ng = nginx({"good": cert(pki, "server")})
    port = ng.ports["good"]
    ca = pki.path("ca.pem")
    p = start(proxy_sluiced,
              tls_route("byip", f"127.0.0.1:{port}", f"ca_file: {ca}")
              + tls_route("byname", f"localhost:{port}", f"ca_file: {ca}")
              + tls_route("fresh", f"127.0.0.1:{port}", f"ca_file: {ca}",
                          upstream_extra="keepalive: 0"))
    # Verified by address (127.0.0.1 in the certificate) and by name (SNI).
    for path in ("/byip", "/byname"):
        status, _, body = p.request("GET", path)
        assert status == 200 and body.startswith(b"good c="), body

    # One client keep-alive, 40 requests: the upstream sees one or two
    # TLS connections (the pool's), not 40 handshakes.
    before = counter(p, "sluice_proxy_upstream_tls_handshakes_total")
    c = p.conn()
    conns = set()
    for _ in range(40):
        status, _, body = p.request("GET", "/byip/x", conn=c)
        assert status == 200, body
        conns.add(re.search(rb"c=(\d+)", body).group(1))
    c.close()
    assert len(conns) <= 2, conns
    assert counter(p, "sluice_proxy_upstream_tls_handshakes_total") - before <= 2

    # keepalive: 0, so every request opens a connection: after the first,
    # they resume the server's last session.
    reused = []
    for _ in range(5):
        status, _, body = p.request("GET", "/fresh")
        assert status == 200, body
        reused.append(re.search(rb"r=(\S+)", body).group(1))
    assert reused[1:].count(b"r") >= 3, reused
    assert counter(p, "sluice_proxy_upstream_tls_resumed_total") >= 3
    for reason in ("verify", "name", "handshake", "other"):
        assert failures(p, reason) == 0


def test_wrong_name_and_untrusted_refused(proxy_sluiced, pki, nginx):
    pki.leaf("stranger", "localhost", "DNS:localhost,IP:127.0.0.1", ca="other_ca")
    ng = nginx({"good": cert(pki, "server"), "stranger": cert(pki, "stranger")})
    ca = pki.path("ca.pem")
    good, stranger = ng.ports["good"], ng.ports["stranger"]
    p = start(proxy_sluiced,
              tls_route("wrongname", f"127.0.0.1:{good}", f"ca_file: {ca}, server_name: other.test")
              + tls_route("untrusted", f"127.0.0.1:{stranger}", f"ca_file: {ca}")
              + tls_route("unverified", f"127.0.0.1:{stranger}", "verify: false")
              + tls_route("sysstore", f"localhost:{good}", ""))
    status, _, body = p.request("GET", "/wrongname")
    assert status == 502, body
    assert failures(p, "name") == 1 and failures(p, "verify") == 0

    status, _, body = p.request("GET", "/untrusted")
    assert status == 502, body
    assert failures(p, "verify") == 1

    # The system's trust store (no ca_file) does not know the test CA.
    status, _, body = p.request("GET", "/sysstore")
    assert status == 502, body
    assert failures(p, "verify") == 2

    # For tests only: no verification at all.
    status, _, body = p.request("GET", "/unverified")
    assert status == 200 and body.startswith(b"stranger"), body
    assert failures(p, "name") == 1 and failures(p, "verify") == 2


def test_bodies_and_websocket_over_tls(proxy_sluiced, pki, upstream):
    u = upstream(tls=(pki.path("server.pem"), pki.path("server.key")))
    p = start(proxy_sluiced, route("py", [f"localhost:{u.port}"], extra="max_body_bytes: 0",
                                   upstream_extra=f"tls: {{ca_file: {pki.path('ca.pem')}}}"))
    c = p.conn()
    body = os.urandom(3 << 20)
    status, _, data = p.request("PUT", "/echo", body=body, conn=c)
    assert status == 200, data
    echo = json.loads(data)
    assert echo["body_len"] == len(body)
    assert echo["body_sha256"] == hashlib.sha256(body).hexdigest()
    status, _, data = p.request("GET", "/download?n=5000000&chunked=1", conn=c)
    assert status == 200 and len(data) == 5000000
    c.close()

    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    head, rest = got.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 101"), head
    mask = os.urandom(4)
    msg = b"hello over tls"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(msg))
    s.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + masked)
    while len(rest) < 2 + len(msg):
        rest += s.recv(4096)
    assert rest[:2] == bytes([0x81, len(msg)]) and rest[2:2 + len(msg)] == msg, rest
    s.close()


def test_client_certificate(proxy_sluiced, pki, nginx):
    ca = pki.path("ca.pem")
    ng = nginx({"mtls": cert(pki, "server") +
                f" ssl_client_certificate {ca}; ssl_verify_client on;"})
    port = ng.ports["mtls"]
    p = start(proxy_sluiced,
              tls_route("withcert", f"127.0.0.1:{port}",
                        f"ca_file: {ca}, cert_file: {pki.path('client.pem')}, "
                        f"key_file: {pki.path('client.key')}")
              + tls_route("nocert", f"127.0.0.1:{port}", f"ca_file: {ca}"))
    status, _, body = p.request("GET", "/withcert")
    assert status == 200 and b"CN=sluice-client" in body, body
    status, _, body = p.request("GET", "/nocert")
    assert status in (400, 502), (status, body)
    assert b"CN=sluice-client" not in body


def check(tmp_path, tls):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("listeners: [{address: 127.0.0.1, port: 0, protocols: [proxy]}]\n"
                   "proxy:\n  routes:\n    - upstream:\n        servers: ['127.0.0.1:1']\n"
                   f"        tls: {{{tls}}}\n")
    r = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                       text=True, timeout=10)
    return r.returncode, r.stderr


def test_config_errors(tmp_path, pki):
    rc, err = check(tmp_path, f"ca_file: {tmp_path}/missing.pem")
    assert rc == 1 and "upstream.tls.ca_file: cannot read" in err, err
    rc, err = check(tmp_path, f"ca_file: {pki.path('ca.key')}")
    assert rc == 1 and "upstream.tls.ca_file: no certificate" in err, err
    rc, err = check(tmp_path, f"cert_file: {pki.path('client.pem')}, "
                              f"key_file: {pki.path('server.key')}")
    assert rc == 1 and "upstream.tls.key_file" in err and "cert_file" in err, err
    rc, err = check(tmp_path, f"cert_file: {pki.path('client.pem')}")
    assert rc == 1 and "cert_file and key_file go together" in err, err
    rc, err = check(tmp_path, "verify: maybe")
    assert rc == 1 and "upstream.tls.verify must be true or false" in err, err
    rc, err = check(tmp_path, "ca: x")
    assert rc == 1 and "unknown key 'ca' in upstream.tls" in err, err
    # Relative paths are the configuration file's directory's.
    (tmp_path / "ca.pem").write_bytes(open(pki.path("ca.pem"), "rb").read())
    rc, err = check(tmp_path, "ca_file: ca.pem, server_name: api.test")
    assert rc == 0, err
