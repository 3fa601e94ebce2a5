# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_conn_limits.py - memory per connection is bounded in size and in time.

Each case is asserted through the counters sluiced keeps (/metrics), never
through CPU time or latencies:

- a client that never reads its replies is closed by server.write_timeout
  and its buffers freed;
- a client that connects and sends nothing is closed by
  server.header_timeout;
- buffers go back to their working size after a large frame;
- one read of pipelined requests with large replies queues no more than
  the pause mark (4 MiB) and a little: the rest waits for the peer to read;
- the bytes a parser looks at stay a small multiple of the bytes received
  however a request is cut into reads (no re-scanning of partial frames),
  for HTTP bodies (Content-Length and chunked) and RESP commands;
- server.max_buffer_bytes: past the budget, large frames close their
  connection while small requests are still served;
- server.max_connections_per_ip refuses the extra connections, and the
  refusals are logged at most once a second.
"""
import json
import os
import re
import socket
import subprocess
import time

from conftest_http import http_sluiced  # noqa: F401 (fixture)


def metrics(s):
    _, _, body = s.request("GET", "/metrics")
    return body.decode()


def value(s, name, labels=""):
    m = re.search("^" + re.escape(name + labels) + r" (\d+)$", metrics(s), re.M)
    return int(m.group(1)) if m else 0


def closed(s, reason):
    return value(s, "sluice_connections_closed_total", '{reason="%s"}' % reason)


def _holds(pred):
    """pred(), with a /metrics read that timed out taken as "not yet": a
    worker busy with the flood this file sends (under a sanitizer, on a
    loaded machine) may answer the scrape late."""
    try:
        return pred()
    except TimeoutError:
        return False


def wait_for(pred, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if _holds(pred):
            return True
        time.sleep(0.05)
    return pred()


def test_a_client_that_does_not_read_is_closed_by_the_write_timeout(http_sluiced):
    s = http_sluiced(extra="server:\n  write_timeout: 1s\n")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", s.port))
    sock.setblocking(False)
    # pipeline requests whose replies are large, and never read them
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    sent = 0
    end = time.monotonic() + 5
    while sent < 3000 and time.monotonic() < end:
        try:
            sent += sock.send(req * 50) // len(req)
        except BlockingIOError:
            time.sleep(0.01)
    assert wait_for(lambda: closed(s, "write_timeout") >= 1), "not closed by write_timeout"
    # and its buffers were given back
    assert wait_for(lambda: value(s, "sluice_connection_buffer_bytes") < 1 << 20)
    sock.close()


def test_pipelined_requests_wait_for_a_peer_that_does_not_read(http_sluiced):
    # 150 named limits, each decided once: /metrics grows to ~100 KB, so
    # one read of pipelined GET /metrics asks for hundreds of MB of replies
    rules = "domain: big\ndescriptors:\n" + "".join(
        f"  - key: k\n    value: v{i}\n    rate_limit: {{unit: minute, requests_per_unit: 9}}\n"
        for i in range(150))
    s = http_sluiced(rules=rules, workers=1)
    for i in range(150):
        assert s.json("POST", "/v1/check",
                      {"domain": "big", "descriptors": [{"k": f"v{i}"}]})[0] == 200
    size = len(metrics(s))
    assert size > 40_000
    scanned = value(s, "sluice_parse_scanned_bytes_total")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", s.port))
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    n = 16_000 // len(req)
    sock.sendall(req * n)
    time.sleep(0.5)
    # Decided: the replies that fit under the 4 MiB pause mark and one
    # more; the rest of the requests wait, unparsed, until the peer reads.
    # Before, one read's ~450 requests were all answered (~45 MB queued).
    parsed = value(s, "sluice_parse_scanned_bytes_total") - scanned
    # a request's bytes are looked at three times (the search for the end
    # of its head, the head's parse, the request's parse); one more for slack
    most = ((4 << 20) // size + 2) * 4 * len(req) + 2 * 200  # + the two /metrics asks
    assert parsed <= most, (parsed, most)
    # the client reads: every reply arrives
    sock.settimeout(60)
    marker, seen, carry = b"HTTP/1.1 200 ", 0, b""
    while seen < n:
        piece = sock.recv(1 << 20)
        assert piece, f"closed after {seen} of {n} replies"
        buf = carry + piece
        seen += buf.count(marker)
        carry = buf[-(len(marker) - 1):]
    sock.close()


def test_a_silent_connection_is_closed_by_the_header_timeout(http_sluiced):
    s = http_sluiced(extra="server:\n  header_timeout: 1s\n")
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    assert sock.recv(1) == b""  # the server closed it
    assert closed(s, "header_timeout") == 1
    sock.close()


def test_buffers_shrink_after_a_large_frame(http_sluiced):
    s = http_sluiced()
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    body = json.dumps({"domain": "api", "descriptors": [{"user": "u" * 700_000}]}).encode()
    sock.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
                 + body)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    assert value(s, "sluice_buffer_shrinks_total") >= 1
    # the connection is still open and small again
    assert value(s, "sluice_connection_buffer_bytes") < 256 << 10
    sock.close()


def trickle(sock, data, piece):
    for i in range(0, len(data), piece):
        sock.sendall(data[i:i + piece])
        time.sleep(0.0005)


def test_an_http_body_is_scanned_once_however_it_arrives(http_sluiced):
    s = http_sluiced()
    read0, scanned0 = value(s, "sluice_read_bytes_total"), value(s, "sluice_parse_scanned_bytes_total")
    body = json.dumps({"domain": "api", "descriptors": [{"user": "x" * 200_000}]}).encode()
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    trickle(sock, b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
            % len(body) + body, 512)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 1000]), body[i:i + 1000])
                       for i in range(0, len(body), 1000)) + b"0\r\n\r\n"
    trickle(sock, b"POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunked, 512)
    data = b""
    while data.count(b"HTTP/1.1 ") < 2:
        data += sock.recv(65536)
    sock.close()
    read = value(s, "sluice_read_bytes_total") - read0
    scanned = value(s, "sluice_parse_scanned_bytes_total") - scanned0
    assert read > 400_000
    # each byte once for framing and once for the final parse, not once per read
    assert scanned < 3 * read, (scanned, read)


def test_a_resp_command_is_scanned_once_however_it_arrives(http_sluiced):
    s = http_sluiced()
    read0, scanned0 = value(s, "sluice_read_bytes_total"), value(s, "sluice_parse_scanned_bytes_total")
    args = [b"SL.CHECKM", b"api", b"1"] + [b"1", b"user", b"v" * 300] * 30
    cmd = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    inline = b"ECHO " + b"w" * 30_000 + b"\r\n"  # an inline command, as typed in telnet
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    trickle(sock, cmd, 7)
    trickle(sock, inline, 97)
    data = b""
    while not (data.startswith(b"*3\r\n") and data.endswith(b"w" * 10 + b"\r\n")):
        data += sock.recv(65536)
    sock.close()
    read = value(s, "sluice_read_bytes_total") - read0
    scanned = value(s, "sluice_parse_scanned_bytes_total") - scanned0
    assert read > 35_000
    assert scanned < 2 * read, (scanned, read)


def test_the_buffer_budget_refuses_large_frames_only(http_sluiced):
    s = http_sluiced(extra="server:\n  max_buffer_bytes: 1MiB\n  read_timeout: 30s\n")
    partial = []
    for _ in range(6):  # six half-sent 400 KB requests: past the 1 MiB budget
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        sock.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n"
                     + b"{" + b" " * 400_000)
        partial.append(sock)
    assert wait_for(lambda: closed(s, "buffer_budget") >= 1)
    # small requests are still served meanwhile
    status, _, body = s.json("POST", "/v1/check", {"domain": "api", "descriptors": [{"user": "s"}]})
    assert status == 200, body
    assert value(s, "sluice_connection_buffer_bytes") <= 2 << 20
    for sock in partial:
        sock.close()


def scrape(conn):
    """/metrics on a kept keep-alive connection (a new one would be refused)."""
    conn.request("GET", "/metrics")
    return conn.getresponse().read().decode()


def test_connections_per_address_are_capped_and_refusals_logged_sparingly(http_sluiced):
    s = http_sluiced(extra="server:\n  max_connections_per_ip: 3\n")
    http = s.conn()
    scrape(http)
    keep = [socket.create_connection(("127.0.0.1", s.port), timeout=5) for _ in range(2)]
    for k in keep:  # make sure they are accepted (and counted) before the extra ones
        k.sendall(b"PING\r\n")
        assert k.recv(16) == b"+PONG\r\n"
    refused = 0
    for _ in range(40):
        extra = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        if extra.recv(1) == b"":
            refused += 1
        extra.close()
    assert refused == 40
    assert 'sluice_connections_refused_total{reason="max_connections_per_ip"} 40' in scrape(http)
    lines = [line for line in s.log_text().splitlines() if "max_connections_per_ip" in line]
    assert 1 <= len(lines) <= 3, lines  # at most one line a second
    # the limit is per address: once one closes, another may connect
    keep.pop().close()
    assert wait_for(lambda: "sluice_connections 2\n" in scrape(http))
    again = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    again.sendall(b"PING\r\n")
    assert again.recv(16) == b"+PONG\r\n"
    for k in keep + [again]:
        k.close()
    http.close()


def test_ipv6_client_prefix_is_validated(tmp_path):
    """server.ipv6_client_prefix (the IPv6 bits that make one client) is a
    whole number from 1 to 128; anything else is refused, saying so."""
    for bad in ("0", "129", "many", "-1"):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"server:\n  ipv6_client_prefix: {bad}\n")
        r = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 1, (bad, r.stderr)
        assert "c.yaml:2:23: server.ipv6_client_prefix must be a whole number from 1 to 128" \
            in r.stderr, (bad, r.stderr)
    for ok in ("1", "48", "64", "128"):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"server:\n  ipv6_client_prefix: {ok}\n")
        r = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 0 and "must be a whole number" not in r.stderr, (ok, r.stderr)
