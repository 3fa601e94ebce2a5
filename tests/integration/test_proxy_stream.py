# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy_stream.py - 1 GB through the proxy each way, streamed: the
upload is generated on the fly by the client (nothing is written to disk),
the download by the upstream, and sluiced's resident memory (VmRSS from
/proc/PID/status, sampled throughout) may grow by less than 32 MB while
the gigabyte passes.
"""
import hashlib
import threading
import time

from conftest_proxy import proxy_sluiced, route, upstream  # noqa: F401 (fixtures)

GB = 1 << 30
PIECE = bytes(range(256)) * 1024  # 256 KiB
RSS_GROWTH_KB = 32 * 1024


class RssWatch:
    """The largest VmRSS of `p` seen while the block runs."""

    def __init__(self, p):
        self.p, self.peak, self.done = p, 0, threading.Event()

    def __enter__(self):
        self.base = self.p.rss_kb()
        self.t = threading.Thread(target=self.run)
        self.t.start()
        return self

    def run(self):
        while not self.done.is_set():
            self.peak = max(self.peak, self.p.rss_kb())
            time.sleep(0.05)

    def __exit__(self, *exc):
        self.done.set()
        self.t.join()
        self.peak = max(self.peak, self.p.rss_kb())
        print(f"sluiced VmRSS {self.base} kB before, {self.peak} kB at most "
              f"(+{self.peak - self.base} kB)")


def body(n):
    while n > 0:
        k = min(n, len(PIECE))
        yield PIECE[:k]
        n -= k


def start(proxy_sluiced, upstream):
    u = upstream()
    p = proxy_sluiced(route("big", [f"127.0.0.1:{u.port}"], extra="max_body_bytes: 0"))
    assert p.request("GET", "/echo")[0] == 200  # warm: buffers at their working size
    return p


def test_1gb_upload_streamed(proxy_sluiced, upstream):
    p = start(proxy_sluiced, upstream)
    digest = hashlib.sha256()
    for piece in body(GB):
        digest.update(piece)
    c = p.conn(timeout=120)
    with RssWatch(p) as w:
        c.request("PUT", "/echo", body=body(GB), headers={"Content-Length": str(GB)})
        r = c.getresponse()
        data = r.read()
    assert r.status == 200
    import json
    e = json.loads(data)
    assert e["body_len"] == GB and e["body_sha256"] == digest.hexdigest()
    assert w.peak - w.base < RSS_GROWTH_KB, (w.base, w.peak)


def test_1gb_download_streamed(proxy_sluiced, upstream):
    p = start(proxy_sluiced, upstream)
    c = p.conn(timeout=120)
    with RssWatch(p) as w:
        c.request("GET", f"/download?n={GB}")
        r = c.getresponse()
        assert r.status == 200 and int(r.getheader("Content-Length")) == GB
        n, first = 0, None
        while (piece := r.read(1 << 20)):
            first = first or piece[:256]
            n += len(piece)
    assert n == GB and first == bytes(range(256))
    assert w.peak - w.base < RSS_GROWTH_KB, (w.base, w.peak)


def test_chunked_download_streamed(proxy_sluiced, upstream):
    """A chunked download, decoded and re-chunked on the way (256 MB)."""
    p = start(proxy_sluiced, upstream)
    c = p.conn(timeout=120)
    with RssWatch(p) as w:
        c.request("GET", f"/download?n={GB // 4}&chunked=1")
        r = c.getresponse()
        assert r.getheader("Transfer-Encoding") == "chunked"
        n = 0
        while (piece := r.read(1 << 20)):
            n += len(piece)
    assert n == GB // 4
    assert w.peak - w.base < RSS_GROWTH_KB, (w.base, w.peak)
