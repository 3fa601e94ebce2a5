# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""conftest_proxy.py - real upstreams and the real sluiced in proxy mode.

`upstream` starts proxy_upstream.py (its own process, on a free loopback
port or a given one) and `proxy_sluiced` starts $SLUICED with a listener
speaking [proxy] and the routes a test gives; both are factories, and
everything they started is killed by PID when the test ends.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import end_servers, free_port

HERE = Path(__file__).resolve().parent
PY = "/usr/bin/python3"


def kill(proc, sig=signal.SIGTERM, timeout=10):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Upstream:
    """proxy_upstream.py on 127.0.0.1:port (TLS with `tls`, a (cert, key)
    pair of PEM files)."""

    def __init__(self, port=None, tls=()):
        self.port = port or free_port()
        self.proc = subprocess.Popen([PY, str(HERE / "proxy_upstream.py"), str(self.port),
                                      *tls],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"upstream on {self.port} did not start: {line!r}")

    def stats(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        c.request("GET", "/_stats", headers={"Connection": "close"})
        s = json.loads(c.getresponse().read())
        c.close()
        return s  # this request counts as one connection and one request

    def stop(self):
        kill(self.proc, signal.SIGKILL)
        self.proc.stdout.close()


class ProxySluiced:
    def __init__(self, tmp_path, routes, extra, workers, address="127.0.0.1", listeners="",
                 args=()):
        self.port = free_port()
        self.address = address
        self.config = tmp_path / "sluice.yaml"
        self.config.write_text(f"""listeners:
  - address: {address}
    port: {self.port}
    protocols: [proxy]
{listeners}workers: {workers}
log:
  level: debug
{extra}
proxy:
  routes:
{routes}
""")
        self.log_path = tmp_path / "sluiced.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([os.environ["SLUICED"], "-c", str(self.config), *args],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while "info server.ready " not in self.log_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("sluiced did not start:\n" + self.log_text())
            time.sleep(0.02)

    def token(self):
        """The admin token sluiced created beside its configuration."""
        return (self.config.parent / "admin.token").read_text().split()[0]

    def log_text(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def conn(self, timeout=10):
        return http.client.HTTPConnection(self.address, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        """(status, headers dict (lower-case names), body bytes)."""
        c = conn or self.conn()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        out = (r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        if conn is None:
            c.close()
        return out

    def raw(self, data, timeout=5):
        """Send raw bytes; everything read until the proxy closes."""
        s = socket.create_connection((self.address, self.port), timeout=timeout)
        s.sendall(data)
        got = b""
        while True:
            try:
                piece = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not piece:
                break
            got += piece
        s.close()
        return got

    def rss_kb(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self):
        kill(self.proc)
        self.log.close()
        return self.proc.returncode


def route(name, servers, prefix="/", extra="", upstream_extra=""):
    """One route's YAML lines, indented for proxy.routes."""
    lst = ", ".join(f'"{s}"' for s in servers)
    text = f"""    - name: {name}
      path_prefix: {prefix}
      upstream:
        servers: [{lst}]
"""
    for line in upstream_extra.splitlines():
        text += f"        {line}\n"
    for line in extra.splitlines():
        text += f"      {line}\n"
    return text


@pytest.fixture
def upstream():
    started = []

    def start(port=None, tls=()):
        u = Upstream(port, tls)
        started.append(u)
        return u

    yield start
    for u in started:
        u.stop()


@pytest.fixture
def proxy_sluiced(tmp_path, request):
    started = []

    def start(routes, extra="", workers=1, **kw):
        """kw: address (the proxy listener's), listeners (more YAML list
        items), args (more command-line arguments)."""
        d = tmp_path / f"p{len(started)}"
        d.mkdir()
        p = ProxySluiced(d, routes, extra, workers, **kw)
        started.append(p)
        return p

    yield start
    end_servers(request, started, stop=ProxySluiced.stop)


def dead_port():
    """A loopback port nothing listens on (as far as one can tell)."""
    return free_port()

