# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy_fail.py - the proxy when things go wrong: an upstream that is
down (502), slow (504 after the route's read_timeout), restarted (the
keep-alive pool recovers), a failing server skipped for fail_timeout and
then tried again; request smuggling refused on the client side (400, the
connection closed, nothing reaches the upstream) and malformed upstream
responses refused (502, both connections closed); the access log in both
formats.
"""
import http.client
import json
import re
import time

import pytest

from conftest_proxy import dead_port, proxy_sluiced, route, upstream  # noqa: F401


def test_upstream_down_502(proxy_sluiced):
    p = proxy_sluiced(route("down", [f"127.0.0.1:{dead_port()}"]))
    status, h, body = p.request("GET", "/")
    assert status == 502 and b"no upstream server could be reached" in body
    status, _, _ = p.request("POST", "/", body=b"data")
    assert status == 502


def test_slow_upstream_504(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("slow", [f"127.0.0.1:{u.port}"], extra="read_timeout: 500ms"))
    t0 = time.monotonic()
    status, _, body = p.request("GET", "/slow?ms=5000")
    took = time.monotonic() - t0
    assert status == 504 and b"timed out" in body
    assert took >= 0.4, took  # not before read_timeout (the 504 says it was not the upstream's answer)
    assert p.request("GET", "/slow?ms=10")[0] == 200  # a fast answer still goes through


def test_upstream_restarted_pool_recovers(proxy_sluiced, upstream):
    u = upstream()
    port = u.port
    p = proxy_sluiced(route("api", [f"127.0.0.1:{port}"]))
    c = p.conn()
    for _ in range(3):
        assert p.request("GET", "/echo", conn=c)[0] == 200
    u.stop()  # the pooled connection dies with it
    assert p.request("GET", "/echo")[0] == 502
    u2 = upstream(port)
    for _ in range(5):
        assert p.request("GET", "/echo", conn=c)[0] == 200
    assert u2.stats()["connections"] <= 3  # pooled again


def test_pooled_connection_closed_under_a_request(proxy_sluiced, upstream):
    """The server closes a pooled connection as a request arrives on it: an
    idempotent request is sent again over a new connection; a POST is not
    (it may have been acted on) and gets 502."""
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    assert p.request("GET", "/arm_drop")[0] == 200
    assert p.request("GET", "/echo")[0] == 200  # the pooled one dropped it: retried
    assert p.request("GET", "/arm_drop")[0] == 200
    assert p.request("POST", "/echo", body=b"")[0] == 502
    assert p.request("POST", "/echo", body=b"x")[0] == 200


def test_failing_server_skipped_then_retried(proxy_sluiced, upstream):
    # fail_timeout is long enough that the four requests of the middle
    # part come well inside it even on a loaded machine (under the
    # sanitizers they once took over 3 s); the guard below says so if not
    good = upstream()
    bad_port = dead_port()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{bad_port}", f"127.0.0.1:{good.port}"],
                            upstream_extra="max_fails: 1\nfail_timeout: 8s"))
    for _ in range(4):  # the refused server is tried once, the request goes to the next
        assert p.request("GET", "/echo")[0] == 200
    t_failed = time.monotonic()
    revived = upstream(bad_port)  # it is back, but still taken out
    for _ in range(4):
        assert p.request("GET", "/echo")[0] == 200
    assert time.monotonic() - t_failed < 8, "the machine is too slow for this test's fail_timeout"
    assert revived.stats()["requests"] == 1  # only the stats request itself
    time.sleep(max(0.0, t_failed + 8.3 - time.monotonic()))  # past fail_timeout: tried again
    for _ in range(4):
        assert p.request("GET", "/echo")[0] == 200
    assert revived.stats()["requests"] >= 3


SMUGGLING = {
    "cl_and_te": b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "differing_cl": b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                    b"Content-Length: 6\r\n\r\nhello!",
    "obs_fold": b"GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n",
    "bare_lf": b"GET /echo HTTP/1.1\nHost: x\n\n",
    "bare_lf_in_header": b"GET /echo HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n",
    "space_before_colon": b"GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length : 0\r\n\r\n",
    "te_gzip_chunked": b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    "te_chunked_gzip": b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
    "te_identity": b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
    "two_te": b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "cl_not_a_number": b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello",
    "no_host": b"GET /echo HTTP/1.1\r\n\r\n",
}
BAD_CHUNKS = {
    "bad_chunk_size": b"zz\r\nhello\r\n0\r\n\r\n",
    "chunk_size_space": b"5 \r\nhello\r\n0\r\n\r\n",
    "chunk_size_overflow": b"10000000000000000\r\nhello\r\n0\r\n\r\n",
    "chunk_bare_lf": b"5\nhello\n0\n\n",
    "chunk_no_crlf_after_data": b"5\r\nhelloX0\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(SMUGGLING))
def test_smuggling_refused(proxy_sluiced, upstream, case):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    before = u.stats()["requests"]
    got = p.raw(SMUGGLING[case] + b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400 "), got
    assert got.count(b"HTTP/1.1") == 1  # closed: the request behind it is never read
    assert b"Connection: close" in got
    assert u.stats()["requests"] == before + 1  # nothing reached it (+1: this stats call)


@pytest.mark.parametrize("case", sorted(BAD_CHUNKS))
def test_bad_chunked_body_refused(proxy_sluiced, upstream, case):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    got = p.raw(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + BAD_CHUNKS[case] + b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400 "), got
    assert got.count(b"HTTP/1.1") == 1 and b"Connection: close" in got


@pytest.mark.parametrize("case", ["cl_te", "dup_cl", "obs_fold", "bare_lf", "space_colon",
                                  "te_gzip", "garbage"])
def test_bad_upstream_response_502(proxy_sluiced, upstream, case):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    got = p.raw(f"GET /bad/{case} HTTP/1.1\r\nHost: x\r\n\r\nGET /echo HTTP/1.1\r\nHost: x\r\n\r\n"
                .encode())
    assert got.startswith(b"HTTP/1.1 502 "), got
    assert got.count(b"HTTP/1.1") == 1 and b"Connection: close" in got


def test_bad_upstream_chunk_cuts_the_response(proxy_sluiced, upstream):
    """A broken chunk after the head went out: the client is cut off, so it
    sees an incomplete body, never a complete wrong one."""
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]))
    c = p.conn()
    c.request("GET", "/bad/bad_chunk")
    r = c.getresponse()
    assert r.status == 200
    with pytest.raises(http.client.IncompleteRead):
        r.read()


def access_lines(p):
    return [ln for ln in p.log_text().splitlines() if "route=" in ln or ln.startswith("{")]


def test_access_log_combined(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("api", [f"127.0.0.1:{u.port}"]), extra="  access: combined")
    p.request("POST", "/echo?q=\"x\"", body=b"12345",
              headers={"User-Agent": "test-agent", "Referer": "http://r.example/"})
    p.request("GET", "/nowhere/slow?ms=1")
    time.sleep(0.2)
    lines = access_lines(p)
    assert len(lines) == 2, p.log_text()
    m = re.fullmatch(r'127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] '
                     r'"POST /echo\?q=\\x22x\\x22 HTTP/1\.1" 200 (\d+) "http://r\.example/" '
                     r'"test-agent" route="api" upstream=127\.0\.0\.1:(\d+) request_bytes=5 '
                     r'rt=\d+\.\d{3} urt=\d+\.\d{3} decision=-', lines[0])
    assert m, lines[0]
    assert int(m.group(1)) > 0 and int(m.group(2)) == u.port
    assert '"GET /nowhere/slow?ms=1 HTTP/1.1" 404' in lines[1]


def test_access_log_json(proxy_sluiced):
    p = proxy_sluiced(route("down", [f"127.0.0.1:{dead_port()}"]), extra="  access: json")
    p.request("GET", "/x", headers={"User-Agent": "agent \"quoted\""})
    time.sleep(0.2)
    lines = access_lines(p)
    assert len(lines) == 1, p.log_text()
    e = json.loads(lines[0])
    assert e["status"] == 502 and e["method"] == "GET" and e["target"] == "/x"
    assert e["route"] == "down" and e["user_agent"] == 'agent "quoted"'
    assert e["bytes_in"] == 0 and e["duration_ms"] >= 0 and e["protocol"] == "HTTP/1.1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["time"])
