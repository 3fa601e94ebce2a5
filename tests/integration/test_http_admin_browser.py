# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_admin_browser.py - a web page in the operator's browser cannot
drive the admin API.

The attack: any page the operator visits can send a "simple" cross-origin
request to 127.0.0.1 (a text/plain POST needs no CORS preflight), and with
DNS rebinding a page can make its own name resolve to 127.0.0.1 and read
the answers. So: a token is always required (created at first start when
none is configured: 0600, never overwritten, its path logged but not the
token; `sluiced -t` creates nothing), admin writes need Content-Type:
application/json (415), the Host header must name the listener or a name
of admin.hosts (421), and a foreign Origin or a cross-site Sec-Fetch-Site
is refused (403).
"""
import json
import os
import re
import socket
import stat
import subprocess
import time

from conftest import recv_until
from conftest_http import http_sluiced  # noqa: F401 (fixture)

DENY_ALL = """domain: api
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 0}
"""
CHECK = {"domain": "api", "descriptors": [{"user": "victim"}]}


def test_a_token_is_created_at_first_start(http_sluiced):
    s = http_sluiced()
    path = s.dir / "admin.token"
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode == 0o600, oct(mode)
    token = path.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n", token), token  # 256 bits, printable
    log = s.log_text()
    assert f"created in {os.path.realpath(path)}" in log and token.strip() not in log
    # without it every admin endpoint is refused, even on loopback
    for method, target, body in (("GET", "/v1/config", None), ("GET", "/v1/killswitch", None),
                                 ("PUT", "/v1/killswitch", {"domain": "*", "mode": "off"}),
                                 ("DELETE", "/v1/keys?domain=api&user=a", None),
                                 ("GET", "/v1/keys?domain=api&user=a", None)):
        status, h, answer = s.request(method, target, body, headers={})
        assert status == 401 and h["www-authenticate"].startswith("Bearer"), (target, answer)
    status, _, cfg = s.json("GET", "/v1/config")  # the fixture sends the file's token
    assert status == 200 and cfg["admin"]["token_required"] is True
    assert token.strip() not in str(cfg)
    assert s.json("POST", "/v1/check", CHECK, headers={})[0] == 200  # checks need none


def test_the_token_file_is_read_not_replaced(http_sluiced, tmp_path):
    path = tmp_path / "secrets" / "sluice.token"
    path.parent.mkdir()
    extra = f"admin:\n  token_file: {path}\n"
    first = http_sluiced(extra=extra)
    token = path.read_text()
    inode = os.stat(path).st_ino
    first.proc.kill()
    first.proc.wait()
    second = http_sluiced(extra=extra)  # a restart
    assert path.read_text() == token and os.stat(path).st_ino == inode
    assert f"read from {os.path.realpath(path)}" in second.log_text()
    ok = {"Authorization": "Bearer " + token.strip()}
    assert second.request("GET", "/v1/config", headers=ok)[0] == 200
    assert [p.name for p in path.parent.iterdir()] == ["sluice.token"]  # no temporary left
    # a token file others can read is used, with a warning
    os.chmod(path, 0o644)
    third = http_sluiced(extra=extra)
    assert "chmod 600" in third.log_text()


def test_sluiced_t_creates_nothing(tmp_path):
    (tmp_path / "rules.yaml").write_text(DENY_ALL)
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("rules:\n  files: [rules.yaml]\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    run = subprocess.run([os.environ["SLUICED"], "-c", str(cfg), "-t"], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert "admin.token does not exist yet" in run.stderr
    # both admin.token and admin.token_file: which one counts is not guessed
    cfg.write_text("admin:\n  token: abcdefghijklmnopqrstuvwxyz\n  token_file: t\n")
    run = subprocess.run([os.environ["SLUICED"], "-c", str(cfg), "-t"], capture_output=True,
                         text=True)
    assert run.returncode == 1 and "not both" in run.stderr


def test_a_cross_origin_simple_post_changes_nothing(http_sluiced):
    """What a page's fetch(url, {method: "POST", mode: "no-cors", body}) sends."""
    s = http_sluiced(database=True)
    page = {"Content-Type": "text/plain;charset=UTF-8", "Origin": "http://evil.example",
            "Sec-Fetch-Site": "cross-site"}
    rule = json.dumps({"id": "pwn", "yaml": DENY_ALL})
    for method, target, body in (("POST", "/v1/rules", rule),
                                 ("PUT", "/v1/killswitch", '{"domain":"*","mode":"off"}'),
                                 ("DELETE", "/v1/keys?domain=api&user=victim", None)):
        assert s.request(method, target, body, headers=page)[0] == 403, target
        # without Origin (an older browser): no token
        assert s.request(method, target, body, headers={"Content-Type": "text/plain"})[0] == 401
        # even with the token, a body that is not declared JSON is refused
        if body is not None:
            status, _, answer = s.request(method, target, body,
                                          headers={**s.admin_headers,
                                                   "Content-Type": "text/plain"})
            assert status == 415 and b"application/json" in answer, answer
    assert s.json("GET", "/v1/rules")[2] == {"rules": []}
    assert s.json("GET", "/v1/killswitch")[2] == {"switches": []}
    assert s.json("POST", "/v1/check", CHECK)[0] == 200
    # the same write, as the operator sends it
    assert s.request("POST", "/v1/rules", rule)[0] == 200
    assert [r["id"] for r in s.json("GET", "/v1/rules")[2]["rules"]] == ["pwn"]


def test_dns_rebinding_is_refused_by_host(http_sluiced):
    s = http_sluiced(extra="admin:\n  hosts: [sluice.internal, Admin.Example]\n")
    for host in (f"127.0.0.1:{s.port}", "127.0.0.1", f"localhost:{s.port}", "LOCALHOST",
                 "sluice.internal:443", "admin.example"):
        status, _, answer = s.request("GET", "/v1/killswitch",
                                      headers={**s.admin_headers, "Host": host})
        assert status == 200, (host, answer)
    for host in (f"evil.example:{s.port}", "evil.example", "127.0.0.2", "sluice.internal.evil",
                 "127.0.0.1:x", "[::1]", ""):
        status, _, answer = s.request("GET", "/v1/killswitch",
                                      headers={**s.admin_headers, "Host": host})
        assert status == 421, (host, answer)
        assert b"admin.hosts" in answer
    # a request with no Host at all
    with s.raw() as sock:
        sock.sendall(b"GET /v1/config HTTP/1.1\r\nAuthorization: Bearer " + s.token.encode()
                     + b"\r\nConnection: close\r\n\r\n")
        assert recv_until(sock, lambda d: False).startswith(b"HTTP/1.1 421 ")
    # the check endpoints do not look at Host
    assert s.json("POST", "/v1/check", CHECK, headers={"Host": "evil.example"})[0] == 200
    _, _, cfg = s.json("GET", "/v1/config")
    assert cfg["admin"]["hosts"] == ["sluice.internal", "Admin.Example"]


def test_a_foreign_origin_is_refused(http_sluiced):
    s = http_sluiced()
    own = f"http://127.0.0.1:{s.port}"
    for headers in ({"Origin": own}, {"Origin": own.replace("http", "HTTP")},
                    {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}):
        assert s.request("GET", "/v1/config", headers={**s.admin_headers, **headers})[0] == 200
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                    {"Origin": f"http://localhost:{s.port}"},
                    {"Origin": f"http://127.0.0.1:{s.port + 1}"},
                    {"Origin": f"file://127.0.0.1:{s.port}"},
                    {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
        status, _, answer = s.request("GET", "/v1/config",
                                      headers={**s.admin_headers, **headers})
        assert status == 403 and b"another origin" in answer, (headers, answer)


def test_a_listener_on_every_address_takes_the_address_reached(http_sluiced):
    """0.0.0.0: the Host may be the address the client connected to."""
    s = http_sluiced()
    port = s.port
    s.proc.kill()
    s.proc.wait()
    cfg = s.dir / "sluice.yaml"
    cfg.write_text(cfg.read_text().replace("address: 127.0.0.1", "address: 0.0.0.0")
                   .replace("protocols: [resp, http1]", "protocols: [resp, http1]\n    admin: true"))
    log = open(s.dir / "wild.log", "wb")
    proc = subprocess.Popen([os.environ["SLUICED"], "-c", str(cfg)], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        for _ in range(500):
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                proc.poll()
                assert proc.returncode is None, (s.dir / "wild.log").read_text()
                time.sleep(0.02)
        with sock:
            sock.sendall(b"GET /v1/config HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         b"Authorization: Bearer %s\r\nConnection: close\r\n\r\n"
                         % (port, s.token.encode()))
            assert recv_until(sock, lambda d: False).startswith(b"HTTP/1.1 200 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /v1/config HTTP/1.1\r\nHost: 0.0.0.0\r\n"
                         b"Authorization: Bearer %s\r\nConnection: close\r\n\r\n"
                         % s.token.encode())
            assert recv_until(sock, lambda d: False).startswith(b"HTTP/1.1 421 ")
    finally:
        proc.kill()
        proc.wait()
        log.close()
