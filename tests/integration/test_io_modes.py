# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""Connections through io_uring and through libuv's readiness loop
(server.io_uring): which one runs is said and shown, the kernel's refusal
falls back (or stops the start with `on`), and both answer every traffic
shape alike, byte for byte: random RESP pipelines and HTTP keep-alive
pipelines over every algorithm, one large pipeline over many reads,
hundreds of connections sending at once (more than the ring's receive
buffers), a client that reads its replies late (output paused past its
high mark, then resumed), a half-closed client, and a client that never
reads (closed by server.write_timeout, its connection freed). The rest of
the suite runs in whichever mode the machine's kernel allows."""
import errno
import random
import re
import socket
import sys
import time

import pytest

from conftest import wait_for
from conftest_http import http_sluiced  # noqa: F401 (fixture)
from test_resp_batch import RULES, encode, normalise, random_command, read_replies

SECCOMP_WRAPPER = """\
import errno, os, sys
import seccomp
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
f.add_rule(seccomp.ERRNO(errno.EPERM), "io_uring_setup")
f.load()
os.execv(sys.argv[1], sys.argv[1:])
"""

MODES = ["auto", "off"]


def io_line(s):
    m = re.search(r"server\.io (.*)", s.log_text())
    assert m, s.log_text()
    return m.group(1)


def start(http_sluiced, mode, **kw):
    extra = kw.pop("extra", "")
    return http_sluiced(rules=RULES, extra=f"server:\n  io_uring: {mode}\n{extra}", **kw)


def stats_io(s):
    status, _, body = s.json("GET", "/v1/stats?seconds=1")
    assert status == 200, body
    return body["io"]


def connections(s):
    status, _, body = s.request("GET", "/metrics", timeout=60)  # sanitizer builds are slow
    assert status == 200
    m = re.search(rb"^sluice_connections (\d+)", body, re.M)
    return int(m.group(1))


def test_the_mode_in_use_is_said_and_shown(http_sluiced):
    off = start(http_sluiced, "off")
    assert io_line(off) == "connections through libuv's readiness loop (server.io_uring is off)"
    assert stats_io(off) == "readiness"
    auto = start(http_sluiced, "auto")
    line = io_line(auto)
    if line == "connections through io_uring":
        assert stats_io(auto) == "io_uring"
        on = start(http_sluiced, "on")  # io_uring works here: `on` starts too
        assert io_line(on) == "connections through io_uring"
    else:  # this kernel refuses: the reason is given, and `on` would not start
        assert re.fullmatch(r"connections through libuv's readiness loop \(.+\)", line), line
        assert stats_io(auto) == "readiness"


def test_refused_io_uring_falls_back_or_stops_the_start(http_sluiced, tmp_path):
    pytest.importorskip("seccomp")  # Debian's python3-seccomp (scripts/deps.sh installs it)
    wrapper = tmp_path / "no_io_uring.py"
    wrapper.write_text(SECCOMP_WRAPPER)
    prefix = (sys.executable, str(wrapper))
    s = start(http_sluiced, "auto", prefix=prefix)
    assert "(io_uring_setup: Operation not permitted)" in io_line(s)
    assert stats_io(s) == "readiness"
    c = s.raw()
    c.sendall(encode(["CL.THROTTLE", "u", 1, 2, 60]))
    assert read_replies(c, 1)[0].startswith(b"*5\r\n:0\r\n")
    with pytest.raises(RuntimeError, match="server.io_uring is on but io_uring cannot be used: "
                                           "io_uring_setup: Operation not permitted"):
        start(http_sluiced, "on", prefix=prefix)


def read_to_eof(sock):
    """Everything the server sends until it closes the connection."""
    data = b""
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return data
        data += chunk


def pipelines(port, seed):
    """Random RESP pipelines in single writes; every reply, in order."""
    rnd = random.Random(seed)
    p = socket.create_connection(("127.0.0.1", port), timeout=10)
    out = []
    for _ in range(40):
        cmds = [random_command(rnd) for _ in range(rnd.randrange(1, 64))]
        p.sendall(b"".join(encode(c) for c in cmds))
        out += [normalise(r) for r in read_replies(p, len(cmds))]
    p.close()
    return out


def http_pipeline(port, n):
    """n keep-alive POST /v1/check requests in one write, read to the end."""
    reqs = b""
    for i in range(n):
        body = b'{"domain":"d","descriptors":[{"%s":"h%d"}]}' % (
            [b"tb", b"gc", b"sw", b"multi"][i % 4], i % 3)
        reqs += (b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    reqs += b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    p = socket.create_connection(("127.0.0.1", port), timeout=10)
    p.sendall(reqs)
    data = read_to_eof(p)
    p.close()
    data = re.sub(rb"(?im)^date: [^\r]*\r\n", b"", data)
    return data


def test_both_modes_answer_alike(http_sluiced):
    """The same traffic against a server in each mode, same rules, same
    test clock: the same bytes back."""
    got = {}
    for mode in MODES:
        s = start(http_sluiced, mode)
        got[mode] = (pipelines(s.port, 20261124), http_pipeline(s.port, 120))
    assert got["auto"][0] == got["off"][0]
    assert got["auto"][1] == got["off"][1]
    assert got["auto"][1].count(b"HTTP/1.1 429") > 10  # limits were reached
    assert got["auto"][1].count(b"HTTP/1.1 200") > 10


@pytest.mark.parametrize("mode", MODES)
def test_large_pipeline_over_many_reads(http_sluiced, mode):
    s = start(http_sluiced, mode)
    p = s.raw()
    cmds = [["CL.THROTTLE", "k%d" % (i % 7), 3, 1, 60] for i in range(20000)]
    p.sendall(b"".join(encode(c) for c in cmds))  # ~700 KB: many reads of the server
    got = read_replies(p, len(cmds))
    for i, g in enumerate(got):
        limited = 1 if i // 7 >= 4 else 0
        assert g.startswith(b"*5\r\n:%d\r\n:4\r\n" % limited), (i, g)
    p.close()


@pytest.mark.parametrize("mode", MODES)
def test_many_connections_sending_at_once(http_sluiced, mode):
    """More connections with bytes waiting than the ring has receive
    buffers (64 per worker): every one answered."""
    s = start(http_sluiced, mode, workers=1)
    base = connections(s)
    socks = [s.raw() for _ in range(300)]
    for i, c in enumerate(socks):
        c.sendall(encode(["CL.THROTTLE", "m%d" % i, 0, 1, 60]) * 3)
    for i, c in enumerate(socks):
        got = read_replies(c, 3)
        assert [g.split(b"\r\n")[1] for g in got] == [b":0", b":1", b":1"], (i, got)
        c.close()
    wait_for(lambda: connections(s) == base)


@pytest.mark.parametrize("mode", MODES)
def test_late_reader_pauses_and_resumes(http_sluiced, mode):
    """Replies pile up past the output's high mark (reading stops), then
    the client reads them all: nothing lost, in order, and the connection
    keeps serving."""
    # The requests left unread while paused are not an incomplete request
    # of the client's: server.read_timeout (1 s here) must not close it
    # while the server is the one not reading. The replies are read within
    # the test's timeouts however slow the build (sanitizers): only the
    # test decides when the client is too slow.
    s = start(http_sluiced, mode, extra="  write_timeout: 120s\n  read_timeout: 1s\n")
    h = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    one = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"  # a large answer
    n = 2000  # ~11 MB of answers: past what the sockets hold plus the output's 4 MiB mark
    h.sendall(one * n)
    time.sleep(2.5)  # the server fills its output and pauses meanwhile
    h.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = read_to_eof(h)
    h.close()
    assert data.count(b"HTTP/1.1 200 OK") == n + 1
    assert data.endswith(b"\r\n\r\nok\n") or data.rstrip().endswith(b"ok"), data[-200:]


@pytest.mark.parametrize("mode", MODES)
def test_half_closed_client_gets_its_replies(http_sluiced, mode):
    s = start(http_sluiced, mode)
    p = s.raw()
    p.sendall(encode(["CL.THROTTLE", "h", 0, 1, 60]) * 2)
    p.shutdown(socket.SHUT_WR)
    data = read_to_eof(p)
    assert data.count(b"*5\r\n") == 2
    p.close()


@pytest.mark.parametrize("mode", MODES)
def test_client_that_never_reads_is_closed_and_freed(http_sluiced, mode):
    s = start(http_sluiced, mode, extra="  write_timeout: 1s\n")
    base = connections(s)
    p = s.raw()
    p.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    one = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    p.settimeout(30)
    try:
        p.sendall(one * 4000)  # answers far past the output's high mark: reading stops
    except OSError as e:  # the server closed it while we were still writing
        assert e.errno in (errno.ECONNRESET, errno.EPIPE), e
    wait_for(lambda: connections(s) == base, timeout=15)
    p.close()
    status, _, _ = s.request("GET", "/healthz")
    assert status == 200
