# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""conftest_tls.py - what the TLS tests share: test certificates made with
the openssl command (Pki), sluiced with a clear listener and TLS listeners
(TlsSluiced, the tls_sluiced fixture), and small client helpers."""
import os
import re
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import DEFAULT_RULES, end_servers, free_port  # noqa: E402

CHECK_BODY = '{"domain": "api", "descriptors": [{"user": "alice"}]}'


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, timeout=30, **kw)


class Pki:
    """Test certificates in `d`: ca, server (EC, localhost), rsa (RSA,
    rsa.test), client (EC), and other_ca, which signed nothing here."""

    def __init__(self, d):
        self.d = d
        self._ca("ca")
        self._ca("other_ca")
        self._leaf("server", "ec", "localhost", "DNS:localhost,IP:127.0.0.1")
        self._leaf("rsa", "rsa", "rsa.test", "DNS:rsa.test")
        self._leaf("client", "ec", "sluice-client", "DNS:sluice-client")

    def _key(self, kind):
        return (["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] if kind == "ec"
                else ["-newkey", "rsa:2048"])

    def _ca(self, name):
        r = run("openssl", "req", "-x509", *self._key("ec"), "-nodes", "-days", "2",
                "-subj", f"/CN={name}", "-keyout", str(self.d / f"{name}.key"),
                "-out", str(self.d / f"{name}.pem"))
        assert r.returncode == 0, r.stderr

    def leaf(self, name, cn, san, ca="ca", kind="ec"):
        """Another leaf certificate, name.pem and name.key, signed by `ca`
        (ca or other_ca)."""
        self._leaf(name, kind, cn, san, ca)
        return self.path(f"{name}.pem"), self.path(f"{name}.key")

    def _leaf(self, name, kind, cn, san, ca="ca"):
        d = self.d
        ext = d / f"{name}.ext"
        ext.write_text(f"subjectAltName={san}\n")
        r = run("openssl", "req", *self._key(kind), "-nodes", "-subj", f"/CN={cn}",
                "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"))
        assert r.returncode == 0, r.stderr
        r = run("openssl", "x509", "-req", "-in", str(d / f"{name}.csr"),
                "-CA", str(d / f"{ca}.pem"), "-CAkey", str(d / f"{ca}.key"),
                "-CAcreateserial", "-days", "2",
                "-extfile", str(ext), "-out", str(d / f"{name}.pem"))
        assert r.returncode == 0, r.stderr

    def expired(self, name, cn):
        """A client certificate from `ca` whose validity ended yesterday
        (the openssl command of Debian 12 cannot date one in the past)."""
        import datetime
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
        ca_key = serialization.load_pem_private_key((self.d / "ca.key").read_bytes(), None)
        ca = x509.load_pem_x509_certificate((self.d / "ca.pem").read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.utcnow()
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
                .issuer_name(ca.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=3))
                .not_valid_after(now - datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        (self.d / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (self.d / f"{name}.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        return self.path(f"{name}.pem"), self.path(f"{name}.key")

    def path(self, name):
        return str(self.d / name)


@pytest.fixture
def pki(tmp_path):
    d = tmp_path / "pki"
    d.mkdir()
    return Pki(d)


class PortTaken(Exception):
    pass


class TlsSluiced:
    """sluiced with a clear listener [resp, http1] on self.port and the TLS
    listeners given: {name: (protocols, tls mapping text, admin)} on
    self.ports[name]. A port found free can be taken by a test running at
    the same time before sluiced binds it: then new ports, up to 3 tries."""

    def __init__(self, d, listeners, extra="", rules=DEFAULT_RULES):
        self.dir = d
        for attempt in range(3):
            try:
                self._start(d, listeners, extra, rules)
                break
            except PortTaken:
                if attempt == 2:
                    raise AssertionError("no free ports after 3 tries")
        self.token = (d / "admin.token").read_text().split()[0]

    def _start(self, d, listeners, extra, rules):
        self.port = free_port()
        self.ports = {name: free_port() for name in listeners}
        (d / "rules.yaml").write_text(rules)
        text = f"""listeners:
  - address: 127.0.0.1
    port: {self.port}
    protocols: [resp, http1]
"""
        for name, (protos, tls, admin) in listeners.items():
            text += f"""  - address: 127.0.0.1
    port: {self.ports[name]}
    protocols: [{protos}]
    admin: {"true" if admin else "false"}
    tls: {tls}
"""
        text += f"""workers: 2
rules:
  files: [rules.yaml]
  watch: false
log:
  level: debug
{extra}
"""
        (d / "sluice.yaml").write_text(text)
        self.log_path = d / "sluiced.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([os.environ["SLUICED"], "-c", str(d / "sluice.yaml")],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.close()
                text = self.log_path.read_text()
                if "Address already in use" in text:
                    raise PortTaken()
                raise AssertionError("sluiced exited early:\n" + text)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("sluiced did not start:\n" + self.log_path.read_text())

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return r.read().decode()

    def failures(self, reason):
        m = re.search(r'^sluice_tls_failures_total\{reason="%s"\} (\d+)$' % reason,
                      self.metrics(), re.M)
        assert m, "no sluice_tls_failures_total{reason=%r} in /metrics" % reason
        return int(m.group(1))


@pytest.fixture
def tls_sluiced(tmp_path, request):
    started = []

    def start(listeners, extra="", rules=DEFAULT_RULES):
        d = tmp_path / f"t{len(started)}"
        d.mkdir()
        s = TlsSluiced(d, listeners, extra, rules)
        started.append(s)
        return s

    yield start
    end_servers(request, started)


def tls_map(pki, **more):
    fields = {"cert_file": pki.path("server.pem"), "key_file": pki.path("server.key"), **more}
    return "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}"


def s_client(port, *args, stdin=b""):
    """openssl s_client's result: (exit code, its output)."""
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *args],
                       input=stdin, capture_output=True, timeout=30)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace")
