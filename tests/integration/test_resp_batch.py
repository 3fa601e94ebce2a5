# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""Pipelined RESP commands are decided as one batch per read; the replies
must be byte for byte those of the same commands sent one at a time. Two
sluiced with the same rules and the same test clock: one gets random
pipelines in single writes, the other every command alone (waiting for
each reply). The pipelines mix CL.THROTTLE and SL.CHECK over every
algorithm, a rule of three limits, several descriptors, LIMIT overrides,
costs of 0, commands that are not batched (SL.PEEK, SL.ACQUIRE, PING),
errors in the middle (bad arguments, unknown commands) and the test clock
moved inside a pipeline."""
import random
import re
import socket

RULES = """\
domain: d
descriptors:
  - key: tb
    limits: [{algorithm: token_bucket, requests: 4, period: 1s, name: tb}]
  - key: gc
    limits: [{algorithm: gcra, requests: 4, period: 1s, name: gc}]
  - key: lb
    limits: [{algorithm: leaky_bucket, requests: 4, period: 1s, name: lb}]
  - key: fw
    limits: [{algorithm: fixed_window, requests: 4, period: 1s, name: fw}]
  - key: sw
    limits: [{algorithm: sliding_window, requests: 4, period: 1s, name: sw}]
  - key: sl
    limits: [{algorithm: sliding_log, requests: 4, period: 1s, name: sl}]
  - key: cc
    limits: [{algorithm: concurrency, requests: 2, lease: 1s, name: cc}]
  - key: multi
    limits:
      - {algorithm: fixed_window, requests: 6, period: 1s, name: burst}
      - {algorithm: sliding_log, requests: 2, period: 200ms, name: spacing}
      - {algorithm: token_bucket, requests: 10, period: 10s, name: slow}
"""
KEYS = ["tb", "gc", "lb", "fw", "sw", "sl", "cc", "multi"]


def encode(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def reply_end(buf, i=0):
    """Index just past the RESP2 reply starting at buf[i], or None."""
    j = buf.find(b"\r\n", i)
    if j < 0:
        return None
    t, head = buf[i:i + 1], buf[i + 1:j]
    if t in (b"+", b"-", b":"):
        return j + 2
    n = int(head)
    if t == b"$":
        return None if n >= 0 and len(buf) < j + 2 + n + 2 else (j + 2 if n < 0 else j + 4 + n)
    k = j + 2
    for _ in range(max(n, 0)):
        k = reply_end(buf, k)
        if k is None:
            return None
    return k


def read_replies(sock, n):
    buf, out = b"", []
    sock.settimeout(10)
    while len(out) < n:
        end = reply_end(buf)
        if end is None:
            chunk = sock.recv(65536)
            assert chunk, "sluiced closed the connection"
            buf += chunk
            continue
        out.append(buf[:end])
        buf = buf[end:]
    assert buf == b""
    return out


def random_command(rnd):
    x = rnd.random()
    user = "u%d" % rnd.randrange(5)
    if x < 0.35:
        return ["CL.THROTTLE", user, rnd.choice([0, 2, 5]), rnd.choice([1, 10, 30]),
                rnd.choice([1, 60]), rnd.choice([0, 1, 1, 1, 3])]
    if x < 0.65:
        args = ["SL.CHECK", "d", rnd.choice([0, 1, 1, 2])]
        if rnd.random() < 0.15:
            args += ["LIMIT", rnd.choice([1, 3]), "SECOND"]
        return args + [rnd.choice(KEYS), user]
    if x < 0.75:
        pairs = []
        for _ in range(rnd.randrange(1, 4)):
            pairs += [1, rnd.choice(KEYS), user]
        return ["SL.CHECKM", "d", rnd.choice([1, 1, 2])] + pairs
    if x < 0.8:
        return ["SL.PEEK", "d", rnd.choice(KEYS), user]
    if x < 0.84:
        return ["SL.ACQUIRE", "d", "cc", user]
    if x < 0.87:
        return ["PING"]
    # errors in the middle of a pipeline
    return rnd.choice([
        ["CL.THROTTLE", user, "x", 1, 1],
        ["CL.THROTTLE", user, 1, 0, 1],
        ["SL.CHECK", "d", "-1", "tb", user],
        ["SL.CHECK", "d", 1, "LIMIT", 1, "FORTNIGHT", "tb", user],
        ["SL.CHECKM", "d", 1, 5, "tb", user],
        ["NOSUCH", "thing"],
        ["SL.CHECK", "d"],
    ])


LEASE = re.compile(rb"\$\d+\r\n[0-9a-f.]{16,}\r\n$")


def normalise(reply):
    """Lease tokens are sealed with a per-process key: compare their shape."""
    return LEASE.sub(b"<lease>", reply)


def test_pipelines_equal_one_at_a_time(sluiced):
    a, b = sluiced(rules=RULES), sluiced(rules=RULES)
    token_a = (a.config_path.parent / "admin.token").read_text().split()[0]
    token_b = (b.config_path.parent / "admin.token").read_text().split()[0]
    rnd = random.Random(20261124)
    pa, pb = a.raw(), b.raw()
    pa.sendall(encode(["AUTH", token_a]))
    pb.sendall(encode(["AUTH", token_b]))
    assert read_replies(pa, 1) == read_replies(pb, 1) == [b"+OK\r\n"]
    denied = 0
    for round_ in range(60):
        cmds = [random_command(rnd) for _ in range(rnd.randrange(1, 48))]
        if round_ % 5 == 4:  # the clock moves inside a pipeline
            cmds.insert(rnd.randrange(len(cmds)), ["SL.DEBUG", "CLOCK", "ADVANCE", 150])
        pa.sendall(b"".join(encode(c) for c in cmds))
        got = read_replies(pa, len(cmds))
        want = []
        for c in cmds:
            pb.sendall(encode(c))
            want += read_replies(pb, 1)
        for c, g, w in zip(cmds, got, want):
            assert normalise(g) == normalise(w), c
        denied += sum(1 for g in got if b"deny" in g or g.startswith(b"*5\r\n:1"))
        if round_ % 3 == 2:
            for s, p in ((a, pa), (b, pb)):
                p.sendall(encode(["SL.DEBUG", "CLOCK", "ADVANCE", 400]))
                read_replies(p, 1)
    assert denied > 20  # the limits were reached, not only allowed answers compared
    pa.close()
    pb.close()


def test_large_pipeline_in_one_write(sluiced):
    """More checks than one batch holds, and more than one read: each
    reply in its place."""
    s = sluiced(rules=RULES)
    p = s.raw()
    cmds = [["CL.THROTTLE", "k%d" % (i % 7), 3, 1, 60] for i in range(2000)]
    p.sendall(b"".join(encode(c) for c in cmds))
    got = read_replies(p, len(cmds))
    for i, g in enumerate(got):
        n = i // 7  # the n-th call on its key: 4 allowed (burst 3 + 1), then denied
        limited = 1 if n >= 4 else 0
        assert g.startswith(b"*5\r\n:%d\r\n:4\r\n" % limited), (i, g)
    p.close()
