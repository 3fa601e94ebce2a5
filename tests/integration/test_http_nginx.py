# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_nginx.py - nginx (Debian's, started on loopback by the test) in
front of a tiny upstream, asking sluiced through auth_request against
GET /v1/auth, as docs/integrations.md describes. auth_request only
understands 2xx, 401 and 403: nginx maps sluiced's 403 to a 429 and copies
the rate-limit headers with auth_request_set / add_header ... always. A
client sees 200s from the upstream, then 429 with Retry-After and RateLimit.

The client's X-User reaches sluiced as the header X-Sluice-Entry-user, the
descriptor's shape (entries=user) being fixed in the query: a value such as
`carol&x` or `carol&domain=jobs` is limited like any other user, and the
client's own X-Sluice-Entry-* headers never get through.
"""
import http.client
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import free_port
from conftest_http import http_sluiced  # noqa: F401 (fixture)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

# The snippet of docs/integrations.md itself (its first nginx block), with
# ports and the upstream filled in, so that the documentation cannot drift
# from what is tested.
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                    "integrations.md")


def snippet():
    with open(DOCS) as f:
        text = f.read()
    block = text.split("```nginx\n", 1)[1].split("```", 1)[0]
    for old in ("server 127.0.0.1:8080;", "listen 80;", "proxy_pass http://app;"):
        assert old in block, f"docs/integrations.md's snippet no longer has {old!r}"
    return (block.replace("server 127.0.0.1:8080;", "server 127.0.0.1:@SLUICE@;")
            .replace("listen 80;", "listen 127.0.0.1:@PORT@;")
            .replace("proxy_pass http://app;", "proxy_pass http://127.0.0.1:@UPSTREAM@;"))


CONF = """
worker_processes 1;
daemon off;
pid @DIR@/nginx.pid;
error_log @DIR@/error.log info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path @DIR@/body;
    proxy_temp_path @DIR@/proxy;
    fastcgi_temp_path @DIR@/fastcgi;
    uwsgi_temp_path @DIR@/uwsgi;
    scgi_temp_path @DIR@/scgi;

    server {                      # the tiny upstream
        listen 127.0.0.1:@UPSTREAM@;
        location / { return 200 "upstream says hi\\n"; }
    }
@SNIPPET@
}
"""


@pytest.fixture
def nginx(tmp_path):
    procs = []

    def start(sluice_port):
        d = tmp_path / "nginx"
        d.mkdir()
        port, upstream = free_port(), free_port()
        conf = d / "nginx.conf"
        text = CONF.replace("@SNIPPET@", snippet())
        for k, v in (("@DIR@", d), ("@SLUICE@", sluice_port), ("@UPSTREAM@", upstream),
                     ("@PORT@", port)):
            text = text.replace(k, str(v))
        conf.write_text(text)
        log = open(d / "stdout.log", "wb")
        p = subprocess.Popen([NGINX, "-p", str(d), "-c", str(conf)], stdout=log,
                             stderr=subprocess.STDOUT)
        procs.append((p, log))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise RuntimeError("nginx exited:\n" + (d / "error.log").read_text())
            try:
                c = http.client.HTTPConnection("127.0.0.1", upstream, timeout=1)
                c.request("GET", "/")
                if c.getresponse().status == 200:
                    return port
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("nginx did not start")

    yield start
    for p, log in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        log.close()


def get(port, user, **more):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"X-User": user} if user is not None else {}
    c.request("GET", "/anything", headers={**headers, **more})
    r = c.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    c.close()
    return out


def test_nginx_auth_request(http_sluiced, nginx):
    assert os.path.exists(NGINX), "nginx is not installed (scripts/deps.sh test installs it)"
    s = http_sluiced()
    port = nginx(s.port)
    for remaining in (2, 1, 0):
        status, h, body = get(port, "alice")
        assert status == 200 and body == b"upstream says hi\n"
        assert h["ratelimit-policy"] == '"api.user";q=3;w=60'
        assert h["ratelimit"].startswith(f'"api.user";r={remaining};t=')
        assert "retry-after" not in h
        reset = h["x-ratelimit-reset"]
    status, h, body = get(port, "alice")
    assert status == 429
    t = int(h["ratelimit"].rsplit("t=", 1)[1])
    assert h["ratelimit"] == f'"api.user";r=0;t={t}'
    assert h["retry-after"] == str(t)
    # on the 429 as on the 200s: the Unix time of the reset (the test clock)
    assert h["x-ratelimit-reset"] == reset and int(reset) > 1_600_000_000
    assert b'"rate limited"' in body
    # Another user is not affected.
    assert get(port, "bob")[0] == 200


def test_nginx_values_cannot_reshape_the_descriptor(http_sluiced, nginx):
    """The attack on the old snippet: X-User: carol&x became a second entry,
    no rule matched, carol was never limited (200 x 8)."""
    s = http_sluiced()
    port = nginx(s.port)
    for user in ("carol&x", "dave&domain=jobs", "erin%26x&user=y"):
        for _ in range(3):
            status, h, _ = get(port, user)
            assert status == 200 and h["ratelimit-policy"] == '"api.user";q=3;w=60', (user, h)
        assert get(port, user)[0] == 429, user
    # the client's own entry headers do not reach sluiced
    for _ in range(3):
        assert get(port, "frank", **{"X-Sluice-Entry-user": "other",
                                     "X-Sluice-Entry-path": "/x"})[0] == 200
    assert get(port, "frank")[0] == 429
    # no X-User at all: the empty user, still one entry, still limited
    for _ in range(3):
        assert get(port, None)[0] == 200
    assert get(port, None)[0] == 429
