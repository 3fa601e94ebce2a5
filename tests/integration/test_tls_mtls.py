# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_tls_mtls.py - client certificates (docs/tls.md): the admin
privilege granted by a certificate's name (admin.client_cert_names) over
HTTP and RESP, the server-supplied `client_cert_name` descriptor entry
(overwritten when a client forges it, dropped without a certificate),
expired and untrusted client certificates refused and counted, and nghttp
(HTTP/2 over TLS, ALPN h2) against the gRPC listener."""
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grpc"))
from conftest import wait_for  # noqa: E402
from conftest_tls import pki, run, s_client, tls_map, tls_sluiced  # noqa: E402,F401 (fixtures)

MESH_RULES = """\
domain: mesh
descriptors:
  - key: client_cert_name
    rate_limit:
      unit: minute
      requests_per_unit: 2
"""


def curl(pki, url, *args, cert=None):
    """(status, body) of curl over TLS with the test CA (and a client
    certificate: (pem, key))."""
    extra = ["--cert", cert[0], "--key", cert[1]] if cert else []
    r = run("curl", "-sS", "--cacert", pki.path("ca.pem"), *extra, "-w", "\n%{http_code}",
            *args, url)
    body, _, status = r.stdout.decode().rpartition("\n")
    return int(status or 0), body


def check(pki, port, value, cert=None):
    body = json.dumps({"domain": "mesh", "descriptors": [{"client_cert_name": value}]})
    return curl(pki, f"https://127.0.0.1:{port}/v1/check", "-H",
                "Content-Type: application/json", "-d", body, cert=cert)[0]


def test_client_cert_name_is_the_servers(tls_sluiced, pki):
    """Two services with their own certificates get two budgets; a forged
    name is replaced by the verified one; without a certificate the entry
    is dropped, so it matches no rule and spends nobody's budget."""
    other = pki.leaf("other", "other-service", "URI:spiffe://mesh.test/other,DNS:other.test")
    mine = (pki.path("client.pem"), pki.path("client.key"))
    opt = tls_map(pki, ca_file=pki.path("ca.pem"), verify_client="optional")
    s = tls_sluiced({"h1": ("http1", opt, False)}, rules=MESH_RULES)
    port = s.ports["h1"]
    # sluice-client: 2 a minute, whatever it claims to be
    assert check(pki, port, "sluice-client", cert=mine) == 200
    assert check(pki, port, "other-service", cert=mine) == 200  # forged: counted as itself
    assert check(pki, port, "anything", cert=mine) == 429
    # the other service (its URI SAN is its name) still has its own two
    assert check(pki, port, "sluice-client", cert=other) == 200
    assert check(pki, port, "spiffe://mesh.test/other", cert=other) == 200
    assert check(pki, port, "x", cert=other) == 429
    # no certificate: the forged entry goes; the descriptor matches nothing
    for _ in range(5):
        assert check(pki, port, "sluice-client") == 200
    # each certificate's budget is spent, and the clear requests spent none
    for cert in (mine, other):
        status, body = curl(pki, f"https://127.0.0.1:{port}/v1/check", "-H",
                            "Content-Type: application/json", "-d",
                            json.dumps({"domain": "mesh", "hits": 0,
                                        "descriptors": [{"client_cert_name": "?"}]}), cert=cert)
        assert status == 200 and '"remaining":0' in body, body
    status, body = curl(pki, f"https://127.0.0.1:{port}/v1/check", "-H",
                        "Content-Type: application/json", "-d",
                        json.dumps({"domain": "mesh", "hits": 0,
                                    "descriptors": [{"client_cert_name": "sluice-client"}]}))
    assert status == 200 and '"limit":null' in body, body


def test_admin_by_client_certificate(tls_sluiced, pki):
    """A certificate named in admin.client_cert_names holds the admin
    privilege on the admin listener over HTTP and RESP without the token;
    another certificate does not; the token still works."""
    ops = pki.leaf("ops", "ops", "URI:spiffe://mesh.test/ops")
    # listed by a SAN that is not the name it would be keyed by
    ops2 = pki.leaf("ops2", "ops2", "DNS:first.test,DNS:ops.internal")
    mine = (pki.path("client.pem"), pki.path("client.key"))
    opt = tls_map(pki, ca_file=pki.path("ca.pem"), verify_client="optional")
    s = tls_sluiced({"admin": ("http1, resp", opt, True)},
                    extra="admin:\n  client_cert_names: [spiffe://mesh.test/ops, ops.internal]\n")
    url = f"https://127.0.0.1:{s.ports['admin']}/v1/keys?domain=api&user=alice"
    status, body = curl(pki, url, "-X", "DELETE", cert=ops)
    assert status == 200, body
    status, body = curl(pki, url, "-X", "DELETE", cert=ops2)
    assert status == 200, body
    status, body = curl(pki, url, "-X", "DELETE", cert=mine)
    assert status == 401 and "client_cert_names" in body, body
    assert curl(pki, url, "-X", "DELETE")[0] == 401
    status, _ = curl(pki, url, "-X", "DELETE", "-H", f"Authorization: Bearer {s.token}",
                     cert=mine)
    assert status == 200

    def cli(cert, *cmd):
        r = run("redis-cli", "--tls", "--cacert", pki.path("ca.pem"), "--cert", cert[0],
                "--key", cert[1], "-p", str(s.ports["admin"]), *cmd)
        return r.stdout.decode() + r.stderr.decode()
    assert "NOPERM" not in cli(ops, "SL.RESET", "api", "user", "alice")
    out = cli(mine, "SL.RESET", "api", "user", "alice")
    assert "NOPERM" in out and "client_cert_names" in out, out


def test_admin_cert_names_need_a_verifying_admin_listener(tmp_path, pki):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text(f"""listeners:
  - address: 127.0.0.1
    port: 0
    protocols: [http1]
    admin: true
    tls: {tls_map(pki)}
admin:
  client_cert_names: [ops]
""")
    import os
    r = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                       timeout=30)
    out = (r.stdout + r.stderr).decode()
    assert r.returncode != 0 and "admin.client_cert_names needs a listener" in out, out


@pytest.mark.parametrize("which", ["expired", "untrusted"])
def test_bad_client_certificates_are_refused_and_counted(tls_sluiced, pki, which):
    if which == "expired":
        cert = pki.expired("old", "old-service")
    else:
        cert = pki.leaf("stranger", "stranger", "DNS:stranger", ca="other_ca")
    req = tls_map(pki, ca_file=pki.path("ca.pem"), verify_client="require")
    s = tls_sluiced({"h1": ("http1", req, False)})
    before = s.failures("client_certificate")
    rc, out = s_client(s.ports["h1"], "-cert", cert[0], "-key", cert[1], "-CAfile",
                       pki.path("ca.pem"), "-ign_eof", stdin=b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert "200 OK" not in out, out
    alert = "certificate expired" if which == "expired" else "unknown ca"
    assert alert in out, out
    assert wait_for(lambda: s.failures("client_certificate") == before + 1, 10)
    # the good certificate still gets in
    rc, out = s_client(s.ports["h1"], "-cert", pki.path("client.pem"), "-key",
                       pki.path("client.key"), "-CAfile", pki.path("ca.pem"), "-ign_eof",
                       stdin=b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert "200 OK" in out, out


def test_nghttp_over_tls_to_the_grpc_listener(tls_sluiced, pki):
    """nghttp (nghttp2's client) negotiates h2 by ALPN and gets the health
    service's answer: status 200, grpc-status 0, a framed SERVING."""
    s = tls_sluiced({"grpc": ("grpc", tls_map(pki), False)})
    body = Path(s.dir) / "health.bin"
    body.write_bytes(b"\x00\x00\x00\x00\x00")  # an empty HealthCheckRequest, framed
    r = run("nghttp", "-v", "-n", "-H", "content-type: application/grpc", "-H", "te: trailers",
            "-d", str(body), f"https://127.0.0.1:{s.ports['grpc']}/grpc.health.v1.Health/Check")
    out = r.stdout.decode(errors="replace")
    assert "The negotiated protocol: h2" in out, out
    assert ":status: 200" in out and "grpc-status: 0" in out, out
    # HTTP/2 in clear (prior knowledge) is refused on the TLS port, then closed
    with socket.create_connection(("127.0.0.1", s.ports["grpc"]), timeout=5) as c:
        c.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        got = b""
        while chunk := c.recv(4096):
            got += chunk
        assert got.startswith(b"HTTP/1.1 400") and b"sent to HTTPS port" in got, got
