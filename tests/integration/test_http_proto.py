# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_proto.py - HTTP/1.1 framing in sluiced: keep-alive, pipelined
answers in order, 404/405, limits (413, 431), malformed requests (400 and
close), Expect: 100-continue, slow clients timed out, and RESP still sniffed
on the same port.
"""
import re

from conftest import recv_until
from conftest_http import http_sluiced  # noqa: F401 (fixture)

CHECK = b'{"domain":"api","descriptors":[{"user":"pipe"}]}'


def responses(data):
    """Split raw HTTP responses (all with Content-Length)."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        n = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        out.append((int(head.split()[1]), head, rest[:n]))
        data = rest[n:]
    return out


def complete(count):
    def pred(data):
        try:
            return len(responses(data)) >= count
        except (AttributeError, IndexError, ValueError):
            return False
    return pred


def test_keep_alive_many_requests_one_connection(http_sluiced):
    s = http_sluiced()
    c = s.conn()
    for i in range(5):
        c.request("POST", "/v1/check", body=CHECK)
        r = c.getresponse()
        r.read()
        assert r.status == (200 if i < 3 else 429)
        assert r.getheader("Connection") is None
    c.close()


def test_pipelined_answers_in_order(http_sluiced):
    s = http_sluiced()
    post = (b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(CHECK)) + CHECK
    reqs = [b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"] + [post] * 4 + [
        b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"]
    with s.raw() as sock:
        sock.sendall(b"".join(reqs))
        got = responses(recv_until(sock, complete(len(reqs))))
    assert [g[0] for g in got] == [200, 200, 200, 200, 429, 404, 200]
    assert got[0][2] == b"ok\n" and got[-1][2] == b"ready\n"
    assert [re.search(rb'"remaining":(\d+)', g[2]).group(1) for g in got[1:5]] == \
        [b"2", b"1", b"0", b"0"]


def test_not_found_and_wrong_method(http_sluiced):
    s = http_sluiced()
    assert s.request("GET", "/v2/nothing")[0] == 404
    assert s.request("GET", "/v1/check")[0] == 405
    assert s.request("PUT", "/json", body="{}")[0] == 405
    status, h, body = s.request("HEAD", "/healthz")
    assert status == 405 and h["content-length"] == "0" and body == b""


def test_http10_closes(http_sluiced):
    s = http_sluiced()
    with s.raw() as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        data = recv_until(sock, lambda d: False)  # until the server closes
    assert data.startswith(b"HTTP/1.1 200 ") and b"Connection: close" in data


def test_body_too_large_is_413_and_closes(http_sluiced):
    s = http_sluiced(extra="server:\n  max_frame_bytes: 64KiB\n")
    with s.raw() as sock:
        sock.sendall(b"POST /v1/check HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n{")
        data = recv_until(sock, lambda d: False)
    assert data.startswith(b"HTTP/1.1 413 ")
    assert b"Connection: close" in data


def test_head_too_large_is_431(http_sluiced):
    s = http_sluiced()
    with s.raw() as sock:
        # A head far past the limit (SL__H1_MAX_HEAD, 16 KiB), still being
        # sent after the server has answered and closed: the lingering close
        # drains it, so no reset destroys the 431 before the client reads it.
        head = b"GET /healthz HTTP/1.1\r\nX-Pad: "
        sock.sendall(head + b"a" * (256 * 1024))
        data = recv_until(sock, lambda d: False)
    assert data.startswith(b"HTTP/1.1 431 ")
    assert s.request("GET", "/healthz")[0] == 200


def test_malformed_is_400_and_closes(http_sluiced):
    s = http_sluiced()
    for bad in (b"GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n",
                b"POST /v1/check HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                b"GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        with s.raw() as sock:
            sock.sendall(bad)
            data = recv_until(sock, lambda d: False)
        assert data.startswith(b"HTTP/1.1 400 "), (bad, data)
    assert s.request("GET", "/healthz")[0] == 200  # the server is fine


def test_chunked_body(http_sluiced):
    s = http_sluiced()
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(CHECK), CHECK)
    with s.raw() as sock:
        sock.sendall(b"POST /v1/check HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        got = responses(recv_until(sock, complete(1)))
    assert got[0][0] == 200 and b'"remaining":2' in got[0][2]


def test_expect_continue(http_sluiced):
    s = http_sluiced()
    with s.raw() as sock:
        sock.sendall(b"POST /v1/check HTTP/1.1\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(CHECK))
        interim = recv_until(sock, lambda d: d.endswith(b"\r\n\r\n"))
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(CHECK)
        got = responses(recv_until(sock, complete(1)))
    assert got[0][0] == 200


def test_slow_client_is_timed_out(http_sluiced):
    s = http_sluiced(extra="server:\n  read_timeout: 200ms\n")
    with s.raw() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finishes its head
        data = recv_until(sock, lambda d: False, timeout=10)
    assert data == b""  # closed by the server, nothing answered


def test_resp_still_served_on_the_same_port(http_sluiced):
    s = http_sluiced()
    with s.raw() as sock:
        sock.sendall(b"PING\r\n")
        assert recv_until(sock, lambda d: d.endswith(b"\r\n")) == b"+PONG\r\n"
