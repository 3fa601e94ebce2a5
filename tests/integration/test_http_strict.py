# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_strict.py - what a proxy in front of sluiced could read otherwise
is refused, over raw sockets: a space before a header's colon, two
Transfer-Encoding headers, a folded one, bare LF line ends, a lowercase
method or another HTTP version (answered as HTTP, not as RESP), and JSON
bodies with something after the value or an object repeating a name. Each
is a 400 and, for the framing, the connection closes.
"""
import json

from conftest import recv_until
from conftest_http import http_sluiced  # noqa: F401 (fixture)

BODY = b'{"domain":"api","descriptors":[{"user":"strict"}]}'
CHUNKED = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)


def exchange(s, raw):
    with s.raw() as sock:
        sock.sendall(raw)
        return recv_until(sock, lambda d: False)  # until the server closes


def status_of(data):
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None


def test_ambiguous_framing_is_400_and_closes(http_sluiced):
    s = http_sluiced()
    post = b"POST /v1/check HTTP/1.1\r\nHost: x\r\n"
    for head in (b"Transfer-Encoding : chunked\r\n",
                 b"Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n",
                 b"Transfer-Encoding: identity\r\n chunked\r\n",
                 b"Transfer-Encoding:\r\n chunked\r\n",
                 b"X-Folded: a\r\n chunked\r\n",
                 b"Transfer-Encoding: gzip, chunked\r\n",
                 b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n"):
        data = exchange(s, post + head + b"\r\n" + CHUNKED)
        assert status_of(data) == 400, (head, data)
        assert b"Connection: close" in data, (head, data)
    data = exchange(s, b"POST /v1/check HTTP/1.1\nHost: x\nContent-Length: %d\n\n" % len(BODY)
                    + BODY)
    assert status_of(data) == 400 and b"CRLF" in data, data
    # none of them was counted: the user still has its whole quota
    status, _, answer = s.json("POST", "/v1/check", json.loads(BODY))
    assert status == 200 and answer["statuses"][0]["remaining"] == 2


def test_lowercase_methods_and_other_versions_are_http_400(http_sluiced):
    s = http_sluiced()
    for line in (b"get /healthz HTTP/1.1", b"Post /v1/check HTTP/1.1",
                 b"GET /healthz HTTP/2.0", b"GET /healthz HTTP/1.2", b"GET /healthz",
                 b"GET /healthz http/1.1", b"DELETE  /v1/keys HTTP/1.1"):
        data = exchange(s, line + b"\r\nHost: x\r\n\r\n")
        assert status_of(data) == 400, (line, data)  # not a RESP "-ERR unknown command"
        assert not data.startswith(b"-ERR")
    # RESP is still sniffed on the same port
    with s.raw() as sock:
        sock.sendall(b"PING\r\n")
        assert recv_until(sock, lambda d: d.endswith(b"\r\n")) == b"+PONG\r\n"


def test_json_is_read_one_way(http_sluiced):
    s = http_sluiced()
    bad = [BODY + b"garbage", BODY + b"{}",
           b'{"domain":"other","domain":"api","descriptors":[{"user":"strict"}]}',
           b'{"domain":"api","descriptors":[{"user":"a","user":"strict"}]}']
    for body in bad:
        status, _, answer = s.request("POST", "/v1/check", body)
        assert status == 400, (body, answer)
        assert b"not valid JSON" in answer
    envoy = [b'{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}]}]}x',
             b'{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a",'
             b'"value":"b"}]}]}',
             b'{"domain":"api","hits_addend":1,"hitsAddend":3,"descriptors":[{}]}']
    for body in envoy:
        status, _, answer = s.request("POST", "/json", body)
        assert status == 400 and answer.startswith(b"Bad Request"), (body, answer)
    # the admin endpoints' bodies too
    for body in (b'{"domain":"api","mode":"off"}x',
                 b'{"domain":"api","mode":"enforce","mode":"off"}'):
        status, _, answer = s.request("PUT", "/v1/killswitch", body)
        assert status == 400 and b"not valid JSON" in answer, (body, answer)
    assert s.json("GET", "/v1/killswitch")[2] == {"switches": []}
    # nothing was counted
    status, _, answer = s.json("POST", "/v1/check", json.loads(BODY))
    assert answer["statuses"][0]["remaining"] == 2
