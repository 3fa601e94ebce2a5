# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""No allocation from the general heap per request on the RESP, HTTP/1.1
and proxy paths with the memory store: sluiced runs under a counting
allocator (tests/alloc/alloc_count.c, LD_PRELOAD, $SL_ALLOC_SHIM) that
counts every malloc/calloc/realloc of the process in a file; after a
warm-up on one connection (buffers grow to their working size), thousands
more requests on the same connection must add (almost) nothing. The bound
(SLACK) allows for the work a loop does once a second whatever the load
(the sweep gives back idle buffers, which the next request takes again),
not for one allocation per request. gRPC (one connection per h2load run):
N more calls on a connection add nothing either, its messages living in
the connection's reused arena.
"""
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import free_port
from conftest_proxy import Upstream, kill
from conftest_tls import pki  # noqa: F401 (fixture)

SHIM = os.environ.get("SL_ALLOC_SHIM")
N = 2000
SLACK = 12

RULES = """\
domain: bench
descriptors:
  - key: user
    limits:
      - {name: per_user, algorithm: token_bucket, requests: 1000000000, period: 1s}
  - key: remote_address
    limits:
      - {name: per_ip, algorithm: gcra, requests: 1000000000, period: 1s}
"""

pytestmark = pytest.mark.skipif(not SHIM, reason="needs $SL_ALLOC_SHIM (a build without sanitizers)")


class Counted:
    """sluiced with the counting allocator; `allocs()` reads the count."""

    def __init__(self, tmp_path, port, listeners, extra=""):
        self.counter = tmp_path / "allocs"
        (tmp_path / "rules.yaml").write_text(RULES)
        cfg = tmp_path / "sluice.yaml"
        cfg.write_text(f"""listeners:
{listeners}workers: 1
rules: {{files: [rules.yaml], watch: false}}
log: {{level: warn}}
{extra}""")
        env = dict(os.environ, LD_PRELOAD=SHIM, SL_ALLOC_COUNTER=str(self.counter))
        self.log_path = tmp_path / "sluiced.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([os.environ["SLUICED"], "-c", str(cfg)], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not self.counter.exists() or not self._accepts(port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("sluiced did not start:\n" + self.log_path.read_text())
            time.sleep(0.02)

    @staticmethod
    def _accepts(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False

        assert self.allocs() > 10  # the counter counts: starting up allocates

    def allocs(self):
        return struct.unpack("<Q", self.counter.read_bytes()[:8])[0]

    def stop(self):
        kill(self.proc)
        self.log.close()


@pytest.fixture
def counted(tmp_path):
    started = []

    def start(port, listeners, extra=""):
        d = tmp_path / f"c{len(started)}"
        d.mkdir()
        c = Counted(d, port, listeners, extra)
        started.append(c)
        return c

    yield start
    for c in started:
        if c.proc.poll() is None:
            os.kill(c.proc.pid, signal.SIGKILL)
            c.proc.wait()


def listener(port, protos):
    return f"  - {{address: 127.0.0.1, port: {port}, protocols: [{protos}]}}\n"


def measured(s, run):
    """Allocations during run(N) after run(N) as warm-up."""
    run(N)
    before = s.allocs()
    run(N)
    return s.allocs() - before


def resp_runner(port, command):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)

    def run(n):
        done = 0
        while done < n:  # pipelines of 50 (a batch and more), one read each
            k = min(50, n - done)
            sock.sendall(command * k)
            got = b""
            while got.count(b"\r\n") < k * lines_per_reply:
                chunk = sock.recv(65536)
                assert chunk
                got += chunk
            done += k

    probe = socket.create_connection(("127.0.0.1", port), timeout=10)
    probe.sendall(command)
    reply = probe.recv(65536)
    probe.close()
    assert not reply.startswith(b"-"), reply
    lines_per_reply = reply.count(b"\r\n")
    return run


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_resp_paths_allocate_nothing_per_request(counted):
    port = free_port()
    s = counted(port, listener(port, "resp"))
    throttle = measured(s, resp_runner(port, encode("CL.THROTTLE", "user1", 15, 30, 60)))
    check = measured(s, resp_runner(port, encode("SL.CHECK", "bench", 1, "user", "u1")))
    keys = measured(s, resp_runner(port, encode("SL.CHECKM", "bench", 1, 1, "user", "u2",
                                                1, "remote_address", "a")))
    print(f"allocations per {N} requests: CL.THROTTLE {throttle}, SL.CHECK {check}, "
          f"SL.CHECKM {keys}")
    assert throttle <= SLACK and check <= SLACK and keys <= SLACK
    s.stop()


def complete(data):
    """How many whole HTTP/1.1 responses (with Content-Length) data holds."""
    n, i = 0, 0
    while True:
        end = data.find(b"\r\n\r\n", i)
        if end < 0:
            return n
        head = data[i:end].lower()
        at = head.find(b"content-length:")
        length = int(head[at + 15:].split(b"\r\n")[0]) if at >= 0 else 0
        if len(data) < end + 4 + length:
            return n
        n, i = n + 1, end + 4 + length


def test_http_check_allocates_nothing_per_request(counted):
    port = free_port()
    s = counted(port, listener(port, "http1"))
    body = json.dumps({"domain": "bench", "descriptors": [{"user": "u1"}]})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def run(n):
        for _ in range(n):
            conn.request("POST", "/v1/check", body=body,
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            assert r.status == 200

    pipelined = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = (f"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n{body}").encode()

    def run_pipelined(n):
        done = 0
        while done < n:
            k = min(16, n - done)
            pipelined.sendall(req * k)
            got = b""
            while complete(got) < k:
                chunk = pipelined.recv(65536)
                assert chunk
                got += chunk
            assert got.count(b"HTTP/1.1 200 ") == k
            done += k

    one = measured(s, run)
    many = measured(s, run_pipelined)
    print(f"allocations per {N} requests: /v1/check {one}, pipelined by 16 {many}")
    assert one <= SLACK and many <= SLACK
    s.stop()


def get_200s(port):
    """run(n) for measured(): n GET /status/200 on one keep-alive
    connection to the proxy on `port`, each answered 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def run(n):
        for _ in range(n):
            conn.request("GET", "/status/200")
            r = conn.getresponse()
            r.read()
            assert r.status == 200
    return run


def test_proxy_allocates_nothing_per_request(counted):
    up = Upstream()
    try:
        port = free_port()
        s = counted(port, listener(port, "proxy"), extra=f"""proxy:
  routes:
    - name: api
      path_prefix: /
      upstream:
        servers: ["127.0.0.1:{up.port}"]
      domain: bench
      rate_limits:
        - actions: [{{remote_address: {{}}}}]
""")
        n = measured(s, get_200s(port))
        print(f"allocations per {N} proxied requests: {n}")
        assert n <= SLACK
        s.stop()
    finally:
        up.stop()


def test_proxy_adaptive_concurrency_allocates_nothing_per_request(counted):
    """A route with an adaptive limit and classes (a class header from a
    trusted peer): admission, latency and release are per-worker state."""
    up = Upstream()
    try:
        port = free_port()
        s = counted(port, listener(port, "proxy"), extra=f"""proxy:
  trusted_proxies: [127.0.0.1/32]
  routes:
    - name: api
      path_prefix: /
      upstream:
        servers: ["127.0.0.1:{up.port}"]
      adaptive_concurrency:
        algorithm: gradient
        interval: 10ms
        min_rtt_requests: 5
        classes: {{critical: 50%, sheddable: 10%}}
        class_from: {{header: X-Priority}}
""")
        n = measured(s, get_200s(port))
        print(f"allocations per {N} proxied requests (adaptive): {n}")
        assert n <= SLACK
        s.stop()
    finally:
        up.stop()


def test_proxy_tls_upstream_allocates_nothing_per_request(counted, pki):
    """The same over a pooled TLS connection to the upstream (upstream.tls):
    the connection's buffers are reused and no request makes a handshake
    (one costs hundreds of allocations). What is left is OpenSSL 3.0's
    record layer: 3 small allocations in SSL_write and 1 in SSL_read per
    request (one record each way), its own, not the proxy's."""
    up = Upstream(tls=(pki.path("server.pem"), pki.path("server.key")))
    try:
        port = free_port()
        s = counted(port, listener(port, "proxy"), extra=f"""proxy:
  routes:
    - name: api
      path_prefix: /
      upstream:
        servers: ["127.0.0.1:{up.port}"]
        tls: {{ca_file: {pki.path("ca.pem")}}}
""")
        n = measured(s, get_200s(port))
        print(f"allocations per {N} requests proxied over TLS: {n}")
        assert n <= 4 * N + SLACK
        s.stop()
    finally:
        up.stop()


def grpc_request(tmp_path):
    """A framed RateLimitRequest for h2load (protoc --encode, gRPC's prefix)."""
    proto = Path(os.environ["SLUICE_SOURCE"]) / "server/grpc/proto"
    msg = subprocess.run(
        ["protoc", f"-I{proto}", "--encode=envoy.service.ratelimit.v3.RateLimitRequest",
         "envoy/service/ratelimit/v3/rls.proto"],
        input=b'domain: "bench"\ndescriptors { entries { key: "user" value: "u1" } }\n',
        capture_output=True, check=True).stdout
    path = tmp_path / "req.bin"
    path.write_bytes(b"\0" + len(msg).to_bytes(4, "big") + msg)
    return path


def test_grpc_allocations_per_call(counted, tmp_path):
    """h2load opens a connection per run, which allocates (the connection,
    its HTTP/2 state, the arena's first blocks); a run of 2N calls must cost
    no more than a run of N: the calls' messages live in the reused arena."""
    port = free_port()
    s = counted(port, listener(port, "grpc"))
    req = grpc_request(tmp_path)

    def run(n):
        out = subprocess.run(
            ["h2load", "-c", "1", "-m", "16", "-n", str(n), "-d", str(req),
             "-H", "content-type: application/grpc", "-H", "te: trailers",
             f"http://127.0.0.1:{port}/envoy.service.ratelimit.v3.RateLimitService/"
             "ShouldRateLimit"], capture_output=True, text=True, timeout=60).stdout
        assert " 0 failed, 0 errored" in out, out

    run(N)
    a0 = s.allocs()
    run(N)
    a1 = s.allocs()
    run(2 * N)
    a2 = s.allocs()
    per_call = ((a2 - a1) - (a1 - a0)) / N
    print(f"gRPC: {a1 - a0} allocations for {N} calls, {a2 - a1} for {2 * N}: "
          f"{per_call:.2f} per call")
    assert (a2 - a1) - (a1 - a0) <= SLACK
