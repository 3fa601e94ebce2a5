# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy_adaptive.py - a route's adaptive concurrency limit, with the
real sluiced in front of a real upstream (proxy_upstream.py) and real
clients: configuration errors at file:line:col (sluiced -t refuses the
file); shedding over a limit pinned to a known number (min_limit =
max_limit), answered 503 with Retry-After and never forwarded, counted in
/metrics and GET /v1/stats; classes with guaranteed shares and a class
header believed from trusted proxies only; and the limit moved by the
upstream's latency (AIMD: a latency above its timeout backs off).

One worker: the limit is per worker. Loads are a handful of requests;
slow requests are held by the upstream (/slow?ms=N), and a test waits for
them to be in flight by reading the proxy's own gauge, never by sleeping
a guessed time. Only directions are asserted about a moving limit.
"""
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request

from conftest import free_port
from conftest_proxy import proxy_sluiced, route, upstream  # noqa: F401 (fixtures)

# ------------------------------------------------------------ helpers


def start(proxy_sluiced, up, adaptive, extra="", workers=1):
    """sluiced with one adaptive route `api` to `up` and an http1 listener
    for /metrics and /v1/stats; (proxy, admin port)."""
    admin = free_port()
    routes = route("api", [f"127.0.0.1:{up.port}"],
                   extra="adaptive_concurrency:\n" +
                   "".join(f"  {ln}\n" for ln in adaptive.strip().splitlines()))
    p = proxy_sluiced(routes, extra=extra, workers=workers,
                      listeners=f"  - {{address: 127.0.0.1, port: {admin}, protocols: [http1]}}\n")
    return p, admin


def metrics(admin):
    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5) as r:
        return r.read().decode()


def series(text, name, **labels):
    """The value of one series of `name` with exactly these labels, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    return None


def stats(p, admin):
    req = urllib.request.Request(f"http://127.0.0.1:{admin}/v1/stats",
                                 headers={"Authorization": f"Bearer {p.token()}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def send(p, path, headers=None, source=None):
    """A request on its own connection, its response read later (read())."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(15)
    if source is not None:
        s.bind((source, 0))
    s.connect((p.address, p.port))
    hdrs = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{hdrs}\r\n".encode())
    return s


def read(s):
    """(status, headers (lower-case names), body) of the response on s."""
    f = s.makefile("rb")
    status = int(f.readline().split()[1])
    h = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        k, _, v = line.decode().partition(":")
        h[k.strip().lower()] = v.strip()
    body = f.read(int(h.get("content-length", "0")))
    f.close()
    s.close()
    return status, h, body


def get(p, path, headers=None, source=None):
    return read(send(p, path, headers, source))


def wait_inflight(admin, n, seconds=10):
    """Until the route's in-flight gauge reads n (requests reached the upstream)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if series(metrics(admin), "sluice_proxy_adaptive_inflight", route="api") == n:
            return
        time.sleep(0.02)
    raise AssertionError(f"never {n} in flight:\n" + metrics(admin))


PINNED2_BLOCK = """
algorithm: aimd
initial_limit: 2
min_limit: 2
max_limit: 2
"""

# ------------------------------------------------------------ shedding


def test_over_a_pinned_limit_the_excess_is_shed_with_503(proxy_sluiced, upstream):
    u = upstream()
    p, admin = start(proxy_sluiced, u, """
algorithm: aimd
initial_limit: 2
min_limit: 2
max_limit: 2
retry_after: 2500ms
""", extra="  access: combined")
    before = u.stats()["requests"]
    held = [send(p, "/slow?ms=1500") for _ in range(2)]
    wait_inflight(admin, 2)
    shed = [get(p, "/echo") for _ in range(3)]
    for status, h, body in shed:
        assert status == 503
        assert h["retry-after"] == "3"  # 2.5 s in whole seconds, rounded up
        assert h["content-type"] == "application/problem+json"
        doc = json.loads(body)
        assert doc["status"] == 503 and doc["title"] == "Service Unavailable"
        assert "Too many requests in flight" in doc["detail"]
    assert [read(s)[0] for s in held] == [200, 200]
    # the shed requests never reached the upstream
    assert u.stats()["requests"] - before == 2 + 1  # + this /_stats
    m = metrics(admin)
    assert series(m, "sluice_proxy_adaptive_limit", route="api") == 2
    assert series(m, "sluice_proxy_adaptive_inflight", route="api") == 0
    assert series(m, "sluice_proxy_adaptive_admitted_total", route="api", **{"class": "default"}) == 2
    assert series(m, "sluice_proxy_adaptive_shed_total", route="api", **{"class": "default"}) == 3
    assert series(m, "sluice_proxy_adaptive_sample_rtt_seconds", route="api") >= 1.5
    # aimd keeps no minimum RTT: no such series for it
    assert series(m, "sluice_proxy_adaptive_min_rtt_seconds", route="api") is None
    doc = stats(p, admin)
    assert len(doc["adaptive"]) == 1
    a = doc["adaptive"][0]
    assert (a["route"], a["algorithm"], a["limit"], a["inflight"]) == ("api", "aimd", 2, 0)
    assert a["sample_rtt_ms"] >= 1500 and a["min_rtt_ms"] is None
    assert a["classes"] == [{"name": "default", "share_pct": 0, "admitted": 2, "shed": 3,
                             "inflight": 0}]
    # once they ended, the slots are free again
    assert get(p, "/echo")[0] == 200
    time.sleep(0.2)
    assert sum("decision=shed" in ln and " 503 " in ln for ln in p.log_text().splitlines()) == 3


def test_status_is_configurable_and_a_failing_upstream_frees_its_slot(proxy_sluiced, upstream):
    u = upstream()
    p, admin = start(proxy_sluiced, u, """
algorithm: gradient
initial_limit: 1
min_limit: 1
max_limit: 1
status: 429
""")
    held = send(p, "/slow?ms=1000")
    wait_inflight(admin, 1)
    status, h, body = get(p, "/echo")
    assert status == 429 and h["retry-after"] == "1" and json.loads(body)["status"] == 429
    assert read(held)[0] == 200
    # a 5xx and a 502 of a dead server end as drops, and give the slot back
    assert get(p, "/status/500")[0] == 500
    u.stop()
    assert get(p, "/echo")[0] == 502
    m = metrics(admin)
    assert series(m, "sluice_proxy_adaptive_inflight", route="api") == 0
    assert series(m, "sluice_proxy_adaptive_admitted_total", route="api", **{"class": "default"}) == 3
    # gradient has a minimum RTT series (0 until its first measurement ends)
    assert series(m, "sluice_proxy_adaptive_min_rtt_seconds", route="api") is not None


def test_each_worker_has_its_own_limit_and_metrics_sum_them(proxy_sluiced, upstream):
    """Two workers, each pinned at 2: once both have proxied (connections
    spread by the kernel; 40 of them all on one worker would be a 1 in
    2^39 event), the route's limit reads 4."""
    u = upstream()
    p, admin = start(proxy_sluiced, u, PINNED2_BLOCK, workers=2)
    for _ in range(40):
        assert get(p, "/echo")[0] == 200
    m = metrics(admin)
    assert series(m, "sluice_proxy_adaptive_limit", route="api") == 4
    assert series(m, "sluice_proxy_adaptive_admitted_total", route="api", **{"class": "default"}) == 40
    a = stats(p, admin)["adaptive"][0]
    assert (a["workers"], a["limit"], a["classes"][0]["admitted"]) == (2, 4, 40)


# ------------------------------------------------------------ classes and trust


def test_a_class_header_is_believed_from_trusted_proxies_only(proxy_sluiced, upstream):
    """Limit 2; critical is guaranteed 50 % (1 slot), sheddable nothing.
    Two requests claiming critical from an untrusted peer fill the limit
    as sheddable ones; then a third such claim is shed, while the same
    claim from the trusted proxy is admitted into critical's share."""
    u = upstream()
    p, admin = start(proxy_sluiced, u, """
algorithm: aimd
initial_limit: 2
min_limit: 2
max_limit: 2
classes: {critical: 50%, sheddable: 0}
class_from: {header: X-Priority}
""", extra="proxy:\n  trusted_proxies: [127.0.0.1/32]")
    claim = {"X-Priority": "critical"}
    untrusted = "127.0.0.2"
    held = [send(p, "/slow?ms=2000", claim, source=untrusted) for _ in range(2)]
    wait_inflight(admin, 2)
    assert get(p, "/echo", claim, source=untrusted)[0] == 503  # spoofed: sheddable
    # from the trusted proxy: absent and unknown classes are the least critical
    assert get(p, "/echo")[0] == 503
    assert get(p, "/echo", {"X-Priority": "platinum"})[0] == 503
    # ... and a class it names is believed, its name matched in any case
    assert get(p, "/echo", {"X-Priority": "CRITICAL"})[0] == 200
    assert [read(s)[0] for s in held] == [200, 200]
    m = metrics(admin)
    cls = {c: (series(m, "sluice_proxy_adaptive_admitted_total", route="api", **{"class": c}),
               series(m, "sluice_proxy_adaptive_shed_total", route="api", **{"class": c}))
           for c in ("critical", "sheddable")}
    assert cls == {"critical": (1, 0), "sheddable": (2, 3)}
    a = stats(p, admin)["adaptive"][0]
    assert [(c["name"], c["share_pct"], c["admitted"], c["shed"]) for c in a["classes"]] == \
        [("critical", 50, 1, 0), ("sheddable", 0, 2, 3)]


def test_class_from_route(proxy_sluiced, upstream):
    u = upstream()
    p, admin = start(proxy_sluiced, u, """
algorithm: aimd
initial_limit: 2
min_limit: 2
max_limit: 2
classes: {critical: 50, batch: 10}
class_from: route
class: Batch
""", extra="proxy:\n  trusted_proxies: [127.0.0.1/32]")
    # the header means nothing here, even from a trusted proxy
    assert get(p, "/echo", {"X-Priority": "critical"})[0] == 200
    m = metrics(admin)
    assert series(m, "sluice_proxy_adaptive_admitted_total", route="api", **{"class": "batch"}) == 1
    assert series(m, "sluice_proxy_adaptive_admitted_total", route="api",
                  **{"class": "critical"}) == 0


# ------------------------------------------------------------ latency moves the limit


def test_the_upstreams_latency_moves_the_limit(proxy_sluiced, upstream):
    """AIMD from 2 (free between 1 and 50): fast answers with the limit
    half used grow it by one each; answers slower than its timeout back it
    off by half. Directions only."""
    u = upstream()
    p, admin = start(proxy_sluiced, u, """
algorithm: aimd
initial_limit: 2
min_limit: 1
max_limit: 50
timeout: 250ms
backoff_ratio: 0.5
""")

    def limit():
        return series(metrics(admin), "sluice_proxy_adaptive_limit", route="api")

    # (the worker's state is made with its first proxied request)
    for _ in range(10):
        assert get(p, "/echo")[0] == 200
    grown = limit()
    assert grown > 2
    for _ in range(3):
        assert get(p, "/slow?ms=600")[0] == 200
    m = metrics(admin)
    shrunk = series(m, "sluice_proxy_adaptive_limit", route="api")
    print(f"aimd: limit up to {grown}, then down to {shrunk}")
    assert shrunk < grown
    assert series(m, "sluice_proxy_adaptive_sample_rtt_seconds", route="api") >= 0.6
    assert stats(p, admin)["adaptive"][0]["limit"] == shrunk


def test_the_gradient_limit_follows_the_latency(proxy_sluiced, upstream):
    """Envoy's gradient: the minimum latency measured on the first five
    (fast) answers; fast windows then grow the limit (the gradient is at
    least 1 near the minimum, and the square-root headroom adds to it),
    slow ones (far above the minimum: the gradient's floor, 0.5) shrink it.
    Directions only; each phase bounded."""
    u = upstream()
    p, admin = start(proxy_sluiced, u, """
algorithm: gradient
initial_limit: 2
min_limit: 2
max_limit: 500
interval: 20ms
min_rtt_requests: 5
min_rtt_interval: 10m
jitter: 0
""")

    def limit():
        return series(metrics(admin), "sluice_proxy_adaptive_limit", route="api")

    # six clients at once: the limit may grow past what is in flight, but
    # not without bound (at most twice a window's peak in newer libsluice)
    def burst():  # (while the minimum is measured the limit is 2: the rest is shed)
        for _ in range(10):
            get(p, "/echo")

    end = time.monotonic() + 10
    while time.monotonic() < end and (limit() or 0) <= 4:
        threads = [threading.Thread(target=burst) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    grown = limit()
    assert grown > 2
    m = metrics(admin)
    min_rtt = series(m, "sluice_proxy_adaptive_min_rtt_seconds", route="api")
    assert 0 < min_rtt < 0.2
    for _ in range(6):
        assert get(p, "/slow?ms=200")[0] == 200
    time.sleep(0.1)  # the last window closes on the worker's tick
    m = metrics(admin)
    shrunk = series(m, "sluice_proxy_adaptive_limit", route="api")
    print(f"gradient: minRTT {min_rtt * 1e3:.3f} ms, limit up to {grown}, then down to {shrunk}")
    assert shrunk < grown
    assert series(m, "sluice_proxy_adaptive_sample_rtt_seconds", route="api") >= 0.2
    a = stats(p, admin)["adaptive"][0]
    assert a["algorithm"] == "gradient" and 0 < a["min_rtt_ms"] < 200


# ------------------------------------------------------------ configuration errors


def check_config(tmp_path, adaptive):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"""listeners:
  - {{address: 127.0.0.1, port: {free_port()}, protocols: [proxy]}}
proxy:
  routes:
    - name: api
      upstream: {{servers: ["127.0.0.1:9"]}}
      adaptive_concurrency:
{adaptive}""")
    out = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                         text=True, timeout=10)
    return out.returncode, out.stderr + out.stdout


def test_configuration_errors_say_where(tmp_path):
    cases = [
        ("        algorithm: cubic\n", r"bad\.yaml:8:20:",
         "algorithm must be gradient, gradient2, vegas or aimd (got 'cubic')"),
        ("        algorithm: aimd\n        rtt_tolerance: 2\n", r"bad\.yaml:9:9:",
         "'rtt_tolerance' is a parameter of gradient2, not of algorithm aimd"),
        # unset: gradient, whose parameters smoothing is not
        ("        smoothing: 0.5\n", r"bad\.yaml:8:9:",
         "'smoothing' is a parameter of gradient2, vegas, not of algorithm gradient"),
        ("        algorithm: vegas\n        min_limit: 10\n        max_limit: 5\n",
         r"bad\.yaml:8:9:", "max_limit must be at least min_limit"),
        ("        algorithm: gradient2\n        classes: {a: 60%, b: 50%}\n"
         "        class_from: route\n        class: a\n",
         r"bad\.yaml:9:18:", "shares must add up to at most 100 percent"),
        ("        classes: {a: 60%, b: 10%}\n        class_from: route\n",
         r"bad\.yaml:8:9:", "class_from: route needs class: NAME"),
        ("        classes: {a: 60%, b: 10%}\n        class_from: route\n        class: c\n",
         r"bad\.yaml:10:16:", "no class 'c' in classes"),
        ("        status: 200\n", r"bad\.yaml:8:17:",
         "status must be a whole number from 400 to 599 (got '200')"),
        ("        percentile: 150%\n", r"bad\.yaml:8:9:",
         "percentile must be above 0 and at most 100"),
        ("        timeout: 1s\n", r"bad\.yaml:8:9:", "'timeout' is a parameter of aimd"),
        ("        interval: soon\n", r"bad\.yaml:8:19:", "interval must be a duration"),
        ("        burst: 3\n", r"bad\.yaml:8:9:", "unknown key 'burst'"),
    ]
    for adaptive, where, what in cases:
        rc, out = check_config(tmp_path, adaptive)
        assert rc != 0 and re.search(where, out) and what in out, (adaptive, out)
    # the same keys, right, are accepted
    good = ("        algorithm: gradient\n        percentile: 90%\n        interval: 250ms\n"
            "        min_rtt_interval: 30s\n        min_rtt_requests: 20\n        jitter: 10\n"
            "        buffer: 20%\n        classes: {critical: 50%, default: 35%, sheddable: 15%}\n"
            "        class_from: {header: X-Priority}\n        retry_after: 3s\n")
    rc, out = check_config(tmp_path, good)
    assert rc == 0, out
