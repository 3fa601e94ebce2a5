# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_tls.py - TLS on the listeners (docs/tls.md), with real clients.

Certificates are made for each test in its temporary directory with the
openssl command (a test CA with ECDSA P-256, a server certificate from it,
an RSA 2048 one chosen by SNI, a client certificate, and a second CA
nobody trusts). sluiced gets a clear listener [resp, http1] (the readiness
PING and /metrics) and the TLS listeners under test:

- `openssl s_client`: TLS 1.2 and 1.3 accepted, 1.0 and 1.1 refused (the
  failure counter says the server refused them); ALPN h2 on gRPC,
  http/1.1 on HTTP/1.1, http/1.1 for a client offering both on a listener
  serving both; SNI picks the certificate;
- curl --cacert: POST /v1/check answers as in clear, and the admin
  listener over TLS; redis-cli --tls: SL.CHECK; both back-ends
  (io_uring and libuv's readiness loop);
- grpcio with ssl_channel_credentials: the rate limit and health services;
  with verify_client: require, refused without a client certificate and
  served with one;
- a plain-text request on the TLS port: HTTP's gets nginx's 400, other
  bytes a close; a client that does not trust the certificate, or finds
  another name in it, refuses it, and the server counts its alert; a
  handshake that stops half-way is closed after server.read_timeout;
- a bad `tls:` (missing file, key of another certificate, min_version
  "1.1") stops the start with a message naming the problem.
"""
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grpc"))
import grpc_client as gc  # noqa: E402
from conftest import free_port, wait_for  # noqa: E402
from conftest_proxy import upstream  # noqa: E402,F401 (fixture)
from conftest_tls import (CHECK_BODY, pki, run, s_client, tls_map,  # noqa: E402,F401 (fixtures)
                          tls_sluiced)


# ------------------------------------------------------------ versions, ALPN, SNI

def test_versions_alpn_and_sni(tls_sluiced, pki):
    sni = ("{certificates: [{cert_file: %s, key_file: %s}, "
           "{cert_file: %s, key_file: %s, server_names: [rsa.test]}]}"
           % (pki.path("server.pem"), pki.path("server.key"), pki.path("rsa.pem"),
              pki.path("rsa.key")))
    s = tls_sluiced({"h1": ("http1", tls_map(pki), False),
                     "grpc": ("grpc", tls_map(pki), False),
                     "both": ("http1, grpc", tls_map(pki), False),
                     "sni": ("http1", sni, False)})
    ca = ["-CAfile", pki.path("ca.pem"), "-verify_return_error"]
    for v, name in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
        rc, out = s_client(s.ports["h1"], v, *ca)
        assert rc == 0 and f"New, {name}, Cipher is" in out, out
        assert "Verify return code: 0 (ok)" in out, out
    before = s.failures("protocol_version")
    for v in ("-tls1", "-tls1_1"):  # the client offers them (security level 0): refused
        rc, out = s_client(s.ports["h1"], v, "-cipher", "DEFAULT@SECLEVEL=0", *ca)
        assert rc != 0 and "alert protocol version" in out, out
    assert wait_for(lambda: s.failures("protocol_version") == before + 2, 10)

    rc, out = s_client(s.ports["grpc"], "-alpn", "h2", *ca)
    assert rc == 0 and "ALPN protocol: h2" in out, out
    rc, out = s_client(s.ports["h1"], "-alpn", "h2,http/1.1", *ca)
    assert rc == 0 and "ALPN protocol: http/1.1" in out, out
    rc, out = s_client(s.ports["both"], "-alpn", "h2,http/1.1", *ca)
    assert rc == 0 and "ALPN protocol: http/1.1" in out, out
    rc, out = s_client(s.ports["both"], "-alpn", "h2", *ca)
    assert rc == 0 and "ALPN protocol: h2" in out, out

    rc, out = s_client(s.ports["sni"], "-servername", "rsa.test", *ca)
    assert rc == 0 and "CN = rsa.test" in out and "Peer signature type: RSA" in out, out
    rc, out = s_client(s.ports["sni"], "-servername", "other.test", *ca)
    assert rc == 0 and "CN = localhost" in out and "ECDSA" in out, out


def test_ciphers(tls_sluiced, pki):
    """The default TLS 1.2 list takes forward-secret AEAD suites only; a
    configured list and TLS 1.3 suites are what is offered."""
    only = tls_map(pki, ciphers="ECDHE-ECDSA-AES256-GCM-SHA384",
                   ciphersuites="TLS_CHACHA20_POLY1305_SHA256")
    s = tls_sluiced({"dflt": ("http1", tls_map(pki), False), "only": ("http1", only, False)})
    ca = ["-CAfile", pki.path("ca.pem"), "-verify_return_error"]
    for suite in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"):
        rc, out = s_client(s.ports["dflt"], "-tls1_2", "-cipher", suite, *ca)
        assert rc == 0 and f"Cipher is {suite}" in out, out
    before = s.failures("no_shared_cipher")
    for suite in ("ECDHE-ECDSA-AES128-SHA", "AES128-GCM-SHA256"):  # CBC; no forward secrecy
        rc, out = s_client(s.ports["dflt"], "-tls1_2", "-cipher", suite, *ca)
        assert rc != 0 and "handshake failure" in out, out
    rc, out = s_client(s.ports["only"], "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256", *ca)
    assert rc != 0 and "handshake failure" in out, out
    assert wait_for(lambda: s.failures("no_shared_cipher") == before + 3, 10)
    rc, out = s_client(s.ports["only"], "-tls1_2", *ca)
    assert rc == 0 and "Cipher is ECDHE-ECDSA-AES256-GCM-SHA384" in out, out
    rc, out = s_client(s.ports["only"], "-tls1_3", *ca)
    assert rc == 0 and "Cipher is TLS_CHACHA20_POLY1305_SHA256" in out, out
    rc, out = s_client(s.ports["only"], "-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256", *ca)
    assert rc != 0 and "handshake failure" in out, out


# ------------------------------------------------------------ every protocol

@pytest.mark.parametrize("io", ["auto", "off"])
def test_http_admin_and_resp_over_tls(tls_sluiced, pki, io):
    s = tls_sluiced({"h1": ("http1, resp", tls_map(pki), False),
                     "admin": ("http1", tls_map(pki), True)},
                    extra=f"server:\n  io_uring: {io}\n")
    url = f"https://127.0.0.1:{s.ports['h1']}/v1/check"
    r = run("curl", "-sS", "--cacert", pki.path("ca.pem"), "-H", "Content-Type: application/json",
            "-d", CHECK_BODY, "-w", "\n%{http_code} %{http_version}", url)
    body, _, status = r.stdout.decode().rpartition("\n")
    assert r.returncode == 0 and status == "200 1.1", r.stderr
    assert '"decision":"allow"' in body.replace(" ", ""), body
    r = run("curl", "-sS", "--cacert", pki.path("ca.pem"), "-H", f"Authorization: Bearer {s.token}",
            "-w", "\n%{http_code}", f"https://localhost:{s.ports['admin']}/v1/config")
    assert r.returncode == 0 and r.stdout.decode().endswith("\n200"), r.stdout + r.stderr
    # a large answer leaves in many records and several sends
    r = run("curl", "-sS", "--cacert", pki.path("ca.pem"), "-o", "/dev/null", "-w", "%{http_code}",
            f"https://127.0.0.1:{s.ports['h1']}/metrics")
    assert r.stdout == b"200", r.stderr

    r = run("redis-cli", "--tls", "--cacert", pki.path("ca.pem"), "-h", "127.0.0.1", "-p",
            str(s.ports["h1"]), "SL.CHECK", "api", "1", "user", "bob")
    assert r.returncode == 0 and r.stdout.split()[0] == b"allow", r.stdout + r.stderr
    # many commands on one connection, pipelined
    cmds = b"".join(b"SL.CHECK api 1 path p%d\n" % i for i in range(500))
    r = run("redis-cli", "--tls", "--cacert", pki.path("ca.pem"), "-h", "127.0.0.1", "-p",
            str(s.ports["h1"]), input=cmds)
    assert r.returncode == 0 and r.stdout.split().count(b"path_bucket") == 500, r.stderr


def test_grpc_over_tls_and_client_certificates(tls_sluiced, pki):
    ca = Path(pki.path("ca.pem")).read_bytes()
    s = tls_sluiced({"grpc": ("grpc", tls_map(pki), False),
                     "mtls": ("grpc", tls_map(pki, ca_file=pki.path("ca.pem"),
                                          verify_client="require"), False)})

    def channel(port, cert=False):
        creds = grpc.ssl_channel_credentials(
            root_certificates=ca,
            private_key=Path(pki.path("client.key")).read_bytes() if cert else None,
            certificate_chain=Path(pki.path("client.pem")).read_bytes() if cert else None)
        return grpc.secure_channel(f"localhost:{port}", creds)

    with channel(s.ports["grpc"]) as ch:
        resp = gc.rls_stub(ch)(gc.request("api", [("user", "carol")]), timeout=10)
        assert resp.overall_code == 1  # OK
        assert gc.health_stub(ch)(gc.health_pb2.HealthCheckRequest(), timeout=10).status == 1

    before = s.failures("client_certificate")
    with channel(s.ports["mtls"]) as ch:
        with pytest.raises(grpc.RpcError) as e:
            gc.health_stub(ch)(gc.health_pb2.HealthCheckRequest(), timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert wait_for(lambda: s.failures("client_certificate") > before, 10)
    with channel(s.ports["mtls"], cert=True) as ch:
        assert gc.health_stub(ch)(gc.health_pb2.HealthCheckRequest(), timeout=10).status == 1
        resp = gc.rls_stub(ch)(gc.request("api", [("user", "dave")]), timeout=10)
        assert resp.overall_code == 1


# ------------------------------------------------------------ bad peers

def read_to_close(sock, timeout=10):
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_plaintext_on_a_tls_port_is_closed(tls_sluiced, pki):
    s = tls_sluiced({"h1": ("http1, resp", tls_map(pki), False)})
    with socket.create_connection(("127.0.0.1", s.ports["h1"]), timeout=10) as c:
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = read_to_close(c)
    assert data.startswith(b"HTTP/1.1 400 ") and data.endswith(
        b"The plain HTTP request was sent to HTTPS port\n"), data
    with socket.create_connection(("127.0.0.1", s.ports["h1"]), timeout=10) as c:
        c.sendall(b"*1\r\n$4\r\nPING\r\n")
        assert read_to_close(c) == b""
    assert wait_for(lambda: s.failures("plaintext") == 2, 10)
    assert redis.Redis(port=s.port).ping()  # the server goes on


def test_untrusted_or_misnamed_certificate_is_refused(tls_sluiced, pki):
    s = tls_sluiced({"h1": ("http1", tls_map(pki), False)})
    port = s.ports["h1"]
    before = s.failures("peer_alert")
    r = run("curl", "-sS", "--cacert", pki.path("other_ca.pem"), f"https://localhost:{port}/healthz")
    assert r.returncode == 60, r.stderr  # the peer's certificate cannot be verified
    r = run("curl", "-sS", "--cacert", pki.path("ca.pem"), "--resolve",
            f"wrong.test:{port}:127.0.0.1", f"https://wrong.test:{port}/healthz")
    assert r.returncode == 60 and b"wrong.test" in r.stderr, r.stderr
    # (curl checks the name once the handshake is done: only the unknown CA
    # aborts the handshake, with an alert the server counts)
    assert wait_for(lambda: s.failures("peer_alert") == before + 1, 10)
    r = run("curl", "-sS", "--cacert", pki.path("ca.pem"), f"https://localhost:{port}/healthz")
    assert r.returncode == 0 and r.stdout.startswith(b"ok"), r.stdout + r.stderr


def test_a_stalled_handshake_is_closed_after_read_timeout(tls_sluiced, pki):
    s = tls_sluiced({"h1": ("http1", tls_map(pki), False)},
                    extra="server:\n  read_timeout: 1s\n  header_timeout: 120s\n")
    with socket.create_connection(("127.0.0.1", s.ports["h1"]), timeout=30) as c:
        c.sendall(b"\x16\x03\x01\x02\x00\x01")  # a ClientHello's first bytes, then nothing
        start = time.monotonic()
        assert read_to_close(c, timeout=30) == b""
        assert time.monotonic() - start < 25  # the read timeout, not the header timeout
    assert wait_for(lambda: s.failures("handshake_timeout") == 1, 10)


# ------------------------------------------------------------ configuration

@pytest.mark.parametrize("tls, says", [
    ("{cert_file: missing.pem, key_file: missing.key}",
     "tls: cannot read the certificate"),
    ("{cert_file: CERT, key_file: RSAKEY}",
     "the private key does not match the certificate"),
    ('{cert_file: CERT, key_file: KEY, min_version: "1.1"}',
     'tls.min_version must be "1.2" or "1.3"'),
    ("{cert_file: CERT, key_file: KEY, verify_client: require}",
     "tls.verify_client: require needs tls.ca_file"),
    ("{key_file: KEY}", "tls needs cert_file and key_file"),
])
def test_a_bad_tls_mapping_stops_the_start(tmp_path, pki, tls, says):
    tls = (tls.replace("RSAKEY", pki.path("rsa.key")).replace("CERT", pki.path("server.pem"))
           .replace("KEY", pki.path("server.key")))
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"""listeners:
  - address: 127.0.0.1
    port: {free_port()}
    protocols: [http1]
    tls: {tls}
""")
    r = subprocess.run([os.environ["SLUICED"], "-c", str(cfg)], capture_output=True, timeout=30)
    assert r.returncode != 0
    err = r.stderr.decode()
    assert f"{cfg}:5:" in err and says in err, err


# ------------------------------------------------------------ the stream itself

def read_responses(c, n):
    """Read n whole HTTP/1.1 responses (Content-Length bodies): their
    statuses, and what came after them."""
    data, statuses = b"", []
    while len(statuses) < n:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            head = data[:head_end].decode()
            length = int(re.search(r"(?im)^content-length: *(\d+)", head).group(1))
            if len(data) >= head_end + 4 + length:
                statuses.append(int(head.split()[1]))
                data = data[head_end + 4 + length:]
                continue
        chunk = c.recv(65536)
        assert chunk, (statuses, data[-200:])
        data += chunk
    return statuses, data


def test_pipelined_requests_large_bodies_and_close_notify(tls_sluiced, pki):
    """Many requests in one write, a body spanning many records, and a
    client that ends with close_notify: the transform keeps the order and
    the bytes, whatever the records' boundaries."""
    import ssl
    s = tls_sluiced({"h1": ("http1", tls_map(pki), False)})
    ctx = ssl.create_default_context(cafile=pki.path("ca.pem"))
    req = (b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (len(CHECK_BODY), CHECK_BODY.encode()))
    with socket.create_connection(("127.0.0.1", s.ports["h1"]), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as c:
            c.sendall(req * 300)
            statuses, rest = read_responses(c, 300)
            assert rest == b"" and statuses.count(200) == 3 and statuses.count(429) == 297
            # a body of 700 KB (under server.max_frame_bytes) in 16 KB records:
            # JSON padded with blanks, decided only if it arrived whole
            body = b'{"domain": "api",' + b" " * 700_000 + b'"descriptors": [{"user": "erin"}]}'
            c.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            statuses, rest = read_responses(c, 1)
            assert rest == b"" and statuses == [200], statuses
            c.unwrap()  # close_notify both ways
    assert redis.Redis(port=s.port).ping()


def test_proxy_over_tls(tls_sluiced, pki, upstream):
    """The reverse proxy terminates TLS on its client side: with the test CA
    curl reaches the upstream through it, keep-alive, over ALPN http/1.1;
    the upstream sees the requests in clear."""
    up = upstream()
    s = tls_sluiced({"proxy": ("proxy", tls_map(pki), False)}, extra=f"""proxy:
  routes:
    - path_prefix: /
      upstream: {{servers: [127.0.0.1:{up.port}]}}
""")
    code, out = s_client(s.ports["proxy"], "-alpn", "http/1.1")
    assert "ALPN protocol: http/1.1" in out, out
    before = up.stats()["requests"]
    url = f"https://127.0.0.1:{s.ports['proxy']}/echo/tls"
    r = run("curl", "-sS", "--cacert", pki.path("ca.pem"), "-o", "/dev/null", "-o", "/dev/null",
            "-w", "%{http_code} %{http_version}\n", url, url)
    assert r.returncode == 0 and r.stdout.decode().split("\n")[:2] == ["200 1.1", "200 1.1"], \
        r.stdout + r.stderr
    assert up.stats()["requests"] >= before + 2
