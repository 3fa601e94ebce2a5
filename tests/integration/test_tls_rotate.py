# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""Certificate rotation without a restart, the expiry and reload metrics,
and session resumption by tickets (docs/tls.md)."""
import os
import re
import signal
import ssl
import time
import http.client

from conftest import wait_for  # noqa: F401
from conftest_tls import CHECK_BODY, pki, run, s_client, tls_map, tls_sluiced  # noqa: F401


def leaf(pki, name, cn):
    """A new server certificate `name` signed by the test CA."""
    pki._leaf(name, "ec", cn, "DNS:localhost,IP:127.0.0.1")
    return pki.path(f"{name}.pem"), pki.path(f"{name}.key")


def subject(port):
    rc, out = s_client(port, "-servername", "localhost")
    m = re.search(r"subject=.*CN ?= ?([\w.-]+)", out)
    return m.group(1) if m else out


def metric(s, name, **labels):
    for line in s.metrics().splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                return int(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} {labels} in /metrics")


def until(pred, what):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def https(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)


def post(conn):
    conn.request("POST", "/v1/check", body=CHECK_BODY, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    return r.status


def start(tls_sluiced, pki, cert, key, **more):
    fields = {"cert_file": cert, "key_file": key, **more}
    m = "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}"
    return tls_sluiced({"h": ("http1", m, False)})


def test_sighup_rotates_and_old_connection_keeps_working(tls_sluiced, pki, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    cert.write_bytes(open(pki.path("server.pem"), "rb").read())
    key.write_bytes(open(pki.path("server.key"), "rb").read())
    s = start(tls_sluiced, pki, cert, key)
    port = s.ports["h"]
    assert subject(port) == "localhost"
    old = https(port)
    assert post(old) == 200
    c2, k2 = leaf(pki, "next", "next.test")
    cert.write_bytes(open(c2, "rb").read())
    key.write_bytes(open(k2, "rb").read())
    s.proc.send_signal(signal.SIGHUP)
    until(lambda: subject(port) == "next.test", "the new certificate")
    assert post(old) == 200  # the connection made before keeps its context
    assert metric(s, "sluice_tls_reloads_total", result="ok") >= 1
    want = ssl.cert_time_to_seconds(
        run("openssl", "x509", "-noout", "-enddate", "-in", c2).stdout.decode()
        .strip().split("=", 1)[1])
    until(lambda: metric(s, "sluice_tls_certificate_expiry_seconds", cert_file=str(cert)) == want,
          "the expiry metric")


def test_bad_certificate_keeps_the_old_one(tls_sluiced, pki, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    cert.write_bytes(open(pki.path("server.pem"), "rb").read())
    key.write_bytes(open(pki.path("server.key"), "rb").read())
    s = start(tls_sluiced, pki, cert, key)
    port = s.ports["h"]
    failed = metric(s, "sluice_tls_reloads_total", result="failed")
    cert.write_text("not a certificate\n")
    s.proc.send_signal(signal.SIGHUP)
    until(lambda: metric(s, "sluice_tls_reloads_total", result="failed") > failed, "a failure")
    assert subject(port) == "localhost"
    log = s.log_path.read_text()
    assert "tls.reload_failed" in log and str(cert) in log


def test_kubernetes_symlink_swap(tls_sluiced, pki, tmp_path):
    sec = tmp_path / "secret"
    sec.mkdir()
    v1 = sec / "..v1"
    v1.mkdir()
    (v1 / "tls.crt").write_bytes(open(pki.path("server.pem"), "rb").read())
    (v1 / "tls.key").write_bytes(open(pki.path("server.key"), "rb").read())
    os.symlink("..v1", sec / "..data")
    os.symlink("..data/tls.crt", sec / "tls.crt")
    os.symlink("..data/tls.key", sec / "tls.key")
    s = start(tls_sluiced, pki, sec / "tls.crt", sec / "tls.key")
    port = s.ports["h"]
    assert subject(port) == "localhost"
    c2, k2 = leaf(pki, "k8s", "k8s.test")
    v2 = sec / "..v2"
    v2.mkdir()
    (v2 / "tls.crt").write_bytes(open(c2, "rb").read())
    (v2 / "tls.key").write_bytes(open(k2, "rb").read())
    os.symlink("..v2", sec / "..data_tmp")
    os.rename(sec / "..data_tmp", sec / "..data")
    until(lambda: subject(port) == "k8s.test", "the swapped certificate")


def test_rotation_under_load(tls_sluiced, pki, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    cert.write_bytes(open(pki.path("server.pem"), "rb").read())
    key.write_bytes(open(pki.path("server.key"), "rb").read())
    s = start(tls_sluiced, pki, cert, key)
    port = s.ports["h"]
    pairs = [leaf(pki, f"r{i}", f"r{i}.test") for i in range(3)]
    keep = https(port)
    failures, done, i = 0, 0, 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if done % 20 == 0:
            c, k = pairs[i % len(pairs)]
            i += 1
            tmp = tmp_path / "new.pem"
            tmp.write_bytes(open(k, "rb").read())
            os.rename(tmp, key)
            tmp.write_bytes(open(c, "rb").read())
            os.rename(tmp, cert)
            s.proc.send_signal(signal.SIGHUP)
        try:
            fresh = https(port)
            # an answer, allowed or limited (the rules allow alice a few)
            ok = post(fresh) in (200, 429) and post(keep) in (200, 429)
            fresh.close()
        except (OSError, http.client.HTTPException) as e:
            print("request failed:", repr(e))
            ok = False
        failures += not ok
        done += 1
    assert done > 20 and failures == 0, (done, failures)


# a request answered, then closed: the TLS 1.3 tickets, sent after the
# handshake, have arrived before s_client ends
REQ = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"


def resumes(port, tmp_path, version):
    sess = tmp_path / f"sess{version}"
    args = ["-servername", "localhost", f"-tls{version}", "-ign_eof"]
    rc, out = s_client(port, *args, "-sess_out", str(sess), stdin=REQ)
    assert rc == 0, out
    rc, out = s_client(port, *args, "-sess_in", str(sess), stdin=REQ)
    return "Reused," in out


def test_resumption(tls_sluiced, pki, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    cert.write_bytes(open(pki.path("server.pem"), "rb").read())
    key.write_bytes(open(pki.path("server.key"), "rb").read())
    s = start(tls_sluiced, pki, cert, key)
    port = s.ports["h"]
    assert resumes(port, tmp_path, "1_3")
    assert resumes(port, tmp_path, "1_2")
    assert metric(s, "sluice_tls_resumed_total") >= 2
    # a ticket made before a rotation resumes after it
    sess = tmp_path / "before"
    args = ["-servername", "localhost", "-tls1_3", "-ign_eof"]
    rc, out = s_client(port, *args, "-sess_out", str(sess), stdin=REQ)
    c2, k2 = leaf(pki, "after", "after.test")
    cert.write_bytes(open(c2, "rb").read())
    key.write_bytes(open(k2, "rb").read())
    s.proc.send_signal(signal.SIGHUP)
    until(lambda: subject(port) == "after.test", "the rotation")
    rc, out = s_client(port, *args, "-sess_in", str(sess), stdin=REQ)
    assert "Reused," in out, out


def test_no_session_tickets(tls_sluiced, pki, tmp_path):
    s = start(tls_sluiced, pki, pki.path("server.pem"), pki.path("server.key"),
              session_tickets="false")
    port = s.ports["h"]
    assert not resumes(port, tmp_path, "1_3")
    assert not resumes(port, tmp_path, "1_2")
    assert metric(s, "sluice_tls_resumed_total") == 0


def test_bad_session_keys_are_refused(tmp_path, pki):
    for value, want in (("0s", "tls.session_timeout"), ("forever", "tls.session_timeout"),
                        ("maybe", "tls.session_tickets")):
        key = "session_tickets" if want.endswith("tickets") else "session_timeout"
        (tmp_path / "rules.yaml").write_text("domains: []\n")
        (tmp_path / "sluice.yaml").write_text(f"""listeners:
  - address: 127.0.0.1
    port: 0
    protocols: [http1]
    tls: {{cert_file: {pki.path("server.pem")}, key_file: {pki.path("server.key")}, {key}: {value}}}
rules:
  files: [rules.yaml]
""")
        r = run(os.environ["SLUICED"], "-t", "-c", str(tmp_path / "sluice.yaml"))
        assert r.returncode != 0
        assert want in (r.stdout + r.stderr).decode(), (r.stdout + r.stderr).decode()
