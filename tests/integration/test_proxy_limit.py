# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_proxy_limit.py - limiting in the proxy's traffic path, with the
real sluiced in front of a real upstream (proxy_upstream.py) and real
clients: per-IP limits (IPv4 from distinct loopback sources; IPv6 /64
masks through X-Forwarded-For from a trusted ::1), per-header limits,
the 429's status, headers and three body forms, forwarding headers
believed only from trusted proxies, shaping (order kept and no request
forwarded before its delay; max_delay and max_queue), concurrency leases
given back on completion and on client abort, kill switches and shadow
mode, store errors, the access log's decision, and configuration errors.

The limiter runs on the test clock (--test-clock): windows do not move,
so counts and delays are exact. Loads are a few requests. The Redis
store in the traffic path is test_proxy_redis.py.
"""
import json
import os
import socket
import struct
import subprocess
import time
import urllib.request

from conftest import START_MS, free_port
from conftest_proxy import proxy_sluiced, route, upstream  # noqa: F401 (fixtures)

RULES = """\
domain: edge
descriptors:
  - key: remote_address
    limits:
      - {name: per_ip, algorithm: token_bucket, requests: 3, period: 1m}
  - key: masked_remote_address
    limits:
      - {name: per_net, algorithm: fixed_window, requests: 2, period: 1m}
  - key: api_key
    limits:
      - {name: per_key, algorithm: token_bucket, requests: 2, period: 6m}
  - key: plan
    value: basic
    limits:
      - {name: anonymous, algorithm: fixed_window, requests: 2, period: 1m}
    descriptors:
      - key: api_key
        limits:
          - {name: basic_key, algorithm: fixed_window, requests: 3, period: 1m}
  - key: generic_key
    value: shaped
    limits:
      - {name: shape, algorithm: leaky_bucket, requests: 10, period: 1s, burst: 20}
  - key: shaper
    limits:
      - {name: per_client, algorithm: leaky_bucket, requests: 2, period: 1s, burst: 4}
  - key: tenant
    limits:
      - {name: in_flight, algorithm: concurrency, requests: 2, lease: 5m}
"""


def start(proxy_sluiced, tmp_path, routes, extra="", **kw):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    return proxy_sluiced(routes, extra=f"  access: combined\nrules:\n  files: [{rules}]\n{extra}",
                         args=["--test-clock", str(START_MS)], **kw)


def limited(name, up, prefix, actions, more=""):
    """A route whose one descriptor is made of `actions` (YAML flow list)."""
    return route(name, [f"127.0.0.1:{up.port}"], prefix=prefix,
                 extra=f"domain: edge\nrate_limits:\n  - actions: {actions}\n{more}")


def get(p, path, headers=None, source=None):
    """(status, headers, body) of one GET on its own connection, from
    `source` (a local address to bind) if given."""
    c = p.conn()
    if source is not None:
        c.source_address = (source, 0)
    return p.request("GET", path, headers=headers, conn=c)


def statuses(p, path, n, **kw):
    return [get(p, path, **kw)[0] for _ in range(n)]


def access(p):
    return [ln for ln in p.log_text().splitlines() if "route=" in ln]


# ------------------------------------------------------------ per IP


def test_per_ip_ipv4_with_429_headers_and_body(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("ip", u, "/", "[{remote_address: {}}]"))
    ok = get(p, "/echo")
    assert ok[0] == 200
    # an allowed response carries the rate-limit headers (http.headers: all)
    assert ok[1]["ratelimit-policy"] == '"per_ip";q=3;w=60'
    assert ok[1]["ratelimit"] == '"per_ip";r=2;t=20'
    assert ok[1]["x-ratelimit-limit"] == "3" and ok[1]["x-ratelimit-remaining"] == "2"
    assert "retry-after" not in ok[1]
    assert statuses(p, "/echo", 3) == [200, 200, 429]
    status, h, body = get(p, "/echo")
    assert status == 429
    assert h["content-type"] == "application/problem+json"
    assert h["retry-after"] == "20"
    assert h["x-ratelimit-remaining"] == "0" and h["ratelimit"] == '"per_ip";r=0;t=60'
    assert int(h["content-length"]) == len(body)
    assert json.loads(body) == {
        "type": "about:blank", "title": "Too Many Requests", "status": 429,
        "detail": "Request quota exceeded. Wait 20 seconds and try again."}
    # another IPv4 client (a second loopback source) has its own bucket
    assert statuses(p, "/echo", 4, source="127.0.0.2") == [200, 200, 200, 429]
    assert get(p, "/echo")[0] == 429
    # the denial never reached the upstream; the access log says why
    time.sleep(0.2)
    lines = access(p)
    assert sum("decision=allow" in ln for ln in lines) == 6
    assert sum(" 429 " in ln and "decision=deny" in ln and "upstream=-" in ln
               for ln in lines) == 4
    assert u.stats()["requests"] == 6 + 1


def test_per_ip_ipv6_masked_to_64_behind_a_trusted_proxy(proxy_sluiced, upstream, tmp_path):
    """Loopback has one IPv6 address, so the clients of one /64 come from a
    trusted proxy at ::1 that names them in X-Forwarded-For."""
    u = upstream()
    routes = limited("net", u, "/", "[{masked_remote_address: {v6_prefix_mask_len: 64}}]")
    p = start(proxy_sluiced, tmp_path, routes, address="::1",
              extra="proxy:\n  trusted_proxies: ['::1']")
    net_a1 = {"X-Forwarded-For": "2001:db8:1:2::a"}
    net_a2 = {"X-Forwarded-For": "2001:db8:1:2:ffff:ffff:ffff:ffff"}
    net_b = {"X-Forwarded-For": "2001:db8:1:3::a"}
    assert get(p, "/echo", headers=net_a1)[0] == 200
    assert get(p, "/echo", headers=net_a2)[0] == 200
    # the /64 is one client: its third request is over per_net's 2
    status, h, body = get(p, "/echo", headers=net_a1)
    assert status == 429 and h["ratelimit-policy"] == '"per_net";q=2;w=60'
    assert get(p, "/echo", headers=net_b)[0] == 200
    # the proxy at ::1 without a header is a client of its own: ::/64
    assert statuses(p, "/echo", 3) == [200, 200, 429]


def test_ipv6_peer_itself(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("ip", u, "/", "[{remote_address: {}}]"),
              address="::1")
    # ::1 is not trusted: the spoofed header does not make another client
    assert statuses(p, "/echo", 4, headers={"X-Forwarded-For": "2001:db8::9"}) == \
        [200, 200, 200, 429]


# ------------------------------------------------------------ forwarding headers


def test_spoofed_forwarded_for_from_an_untrusted_peer_is_ignored(proxy_sluiced, upstream,
                                                                tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("ip", u, "/", "[{remote_address: {}}]"))
    got = [get(p, "/echo", headers={"X-Forwarded-For": f"198.51.100.{i}",
                                    "Forwarded": f"for=198.51.100.{i}"})[0] for i in range(4)]
    assert got == [200, 200, 200, 429]  # one bucket: 127.0.0.1's


def test_forwarded_for_from_a_trusted_proxy_is_honoured(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("ip", u, "/", "[{remote_address: {}}]"),
              extra="proxy:\n  trusted_proxies: [127.0.0.1/32, 10.0.0.0/8]")
    # each client named by the trusted proxy has its own bucket
    for i in range(3):
        assert statuses(p, "/echo", 3, headers={"X-Forwarded-For": f"198.51.100.{i}"}) == \
            [200, 200, 200]
    # the right-most untrusted entry is the client, whatever it put on the left
    spoof = [get(p, "/echo", headers={"X-Forwarded-For": f"6.6.6.{i}, 198.51.100.0, 10.1.1.1"})[0]
             for i in range(2)]
    assert spoof == [429, 429]
    # the upstream still sees the whole chain, this hop appended
    _, _, body = get(p, "/echo", headers={"X-Forwarded-For": "198.51.100.9"})
    fwd = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert fwd["x-forwarded-for"] == "198.51.100.9, 127.0.0.1"


def test_forwarded_header_rfc7239(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("ip", u, "/", "[{remote_address: {}}]"),
              extra="proxy:\n  trusted_proxies: [127.0.0.1]\n  client_header: forwarded")
    v6 = {"Forwarded": 'for=198.51.100.1, for="[2001:db8:cafe::17]:4711";proto=https'}
    assert statuses(p, "/echo", 4, headers=v6) == [200, 200, 200, 429]
    # X-Forwarded-For is not read when Forwarded is the configured header
    assert get(p, "/echo", headers={"X-Forwarded-For": "198.51.100.1"})[0] == 200


# ------------------------------------------------------------ per header, bodies


def test_per_header_limit_and_missing_header(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    key = "[{request_headers: {header_name: X-Api-Key, descriptor_key: api_key}}]"
    routes = (limited("envelope", u, "/env/", key, "deny_body: envelope")
              + limited("text", u, "/txt/", key,
                        "deny_body: text\ndeny_text: 'slow down, please'\ndeny_status: 503\n"
                        "headers: [retry-after]")
              + limited("problem", u, "/", key))
    p = start(proxy_sluiced, tmp_path, routes)
    k1, k2 = {"X-Api-Key": "k1"}, {"X-Api-Key": "k2"}
    assert statuses(p, "/echo", 3, headers=k1) == [200, 200, 429]
    assert statuses(p, "/echo", 3, headers=k2) == [200, 200, 429]
    # no header: its descriptor is skipped (Envoy's request_headers), nothing decided
    assert statuses(p, "/echo", 4) == [200] * 4
    status, h, body = get(p, "/echo", headers=k1)
    assert status == 429 and h["ratelimit-policy"] == '"per_key";q=2;w=360'
    assert json.loads(body)["detail"] == "Request quota exceeded. Wait 3 minutes and try again."
    # the error envelope (the same key: one domain, one counter)
    status, h, body = get(p, "/env/echo", headers=k1)
    e = json.loads(body)
    assert status == 429 and h["content-type"] == "application/json"
    assert e["error"]["code"] == "rate_limited"
    assert e["error"]["message"] == "Request quota exceeded. Wait 3 minutes and try again."
    renewal = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                            time.gmtime(START_MS // 1000 + int(h["retry-after"])))
    assert e["error"]["context"] == {"renewal": renewal}
    # a configured text, status and header families
    status, h, body = get(p, "/txt/echo", headers=k1)
    assert (status, body) == (503, b"slow down, please")
    assert h["content-type"] == "text/plain; charset=utf-8" and h["retry-after"] == "180"
    assert "ratelimit-policy" not in h and "x-ratelimit-limit" not in h
    # a HEAD is answered without a body
    c = p.conn()
    c.request("HEAD", "/echo", headers=k1)
    r = c.getresponse()
    assert r.status == 429 and r.read() == b"" and int(r.getheader("Content-Length")) > 0
    c.close()
    time.sleep(0.2)
    assert sum("decision=-" in ln for ln in access(p)) == 4


def test_header_value_match_and_skip_if_absent(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    actions = ("[{generic_key: {descriptor_key: plan, descriptor_value: basic}}, "
               "{request_headers: {header_name: X-Api-Key, descriptor_key: api_key, "
               "skip_if_absent: true}}]")
    match = ("[{header_value_match: {descriptor_key: api_key, descriptor_value: tier-free, "
             "headers: [{name: x-tier, exact_match: free}]}}]")
    p = start(proxy_sluiced, tmp_path, limited("opt", u, "/opt/", actions)
              + limited("match", u, "/", match))
    # skip_if_absent: true drops only the entry: every request without the
    # header is (plan, basic), one bucket shared by all anonymous clients
    assert statuses(p, "/opt/echo", 3) == [200, 200, 429]
    assert statuses(p, "/opt/echo", 3, source="127.0.0.2") == [429] * 3
    # with it, (plan, basic)(api_key, K): a bucket per key
    assert statuses(p, "/opt/echo", 4, headers={"X-Api-Key": "a"}) == [200, 200, 200, 429]
    assert statuses(p, "/opt/echo", 1, headers={"X-Api-Key": "b"}) == [200]
    # header_value_match: the entry only when the header matches
    assert statuses(p, "/echo", 3, headers={"X-Tier": "free"}) == [200, 200, 429]
    assert statuses(p, "/echo", 3, headers={"X-Tier": "gold"}) == [200, 200, 200]


# ------------------------------------------------------------ shaping


def send_timed(p, path, k):
    """A GET on its own connection, sent now: (k, time sent, response)."""
    s = socket.create_connection((p.address, p.port), timeout=15)
    t = time.monotonic()
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nX-Seq: {k}\r\n\r\n".encode())
    return s, t


def read_response(s):
    f = s.makefile("rb")
    status = int(f.readline().split()[1])
    n = 0
    while (line := f.readline()) != b"\r\n":
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    body = f.read(n)
    s.close()
    return status, body


def test_shaping_keeps_order_and_never_forwards_early(proxy_sluiced, upstream, tmp_path):
    """leaky_bucket 10/s, burst 20: on the frozen clock request k (from 0)
    is delayed k * 100 ms exactly."""
    u = upstream()
    shaped = "[{generic_key: {descriptor_value: shaped}}]"
    p = start(proxy_sluiced, tmp_path, limited("shaped", u, "/", shaped, "max_delay: 5s"))
    sent = []
    for k in range(6):  # in turn, so that they are decided in this order
        sent.append(send_timed(p, "/echo", k))
        time.sleep(0.02)
    got = [read_response(s) for s, _ in sent]
    assert [st for st, _ in got] == [200] * 6
    received = [json.loads(body)["received"] for _, body in got]
    order = [int({k.lower(): v for k, v in json.loads(b)["headers"]}["x-seq"]) for _, b in got]
    assert order == list(range(6))
    assert received == sorted(received), received  # left in the order queued
    for k, ((_, t_sent), t_up) in enumerate(zip(sent, received)):
        assert t_up - t_sent >= k * 0.100, (k, t_up - t_sent)
    time.sleep(0.2)
    assert sum("decision=delay" in ln for ln in access(p)) == 5


def test_shaping_bounds_max_delay_and_max_queue(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    shaped = "[{generic_key: {descriptor_value: shaped}}]"
    p = start(proxy_sluiced, tmp_path,
              limited("short", u, "/short/", shaped, "max_delay: 250ms")
              + limited("narrow", u, "/", shaped, "max_delay: 10s\nmax_queue: 2"))
    # delays 0, 100, 200 ms pass; 300 ms is over max_delay: 429 for 300 ms
    sent = []
    for k in range(4):
        sent.append(send_timed(p, "/short/echo", k))
        time.sleep(0.02)
    got = [read_response(s) for s, _ in sent]
    assert [st for st, _ in got] == [200, 200, 200, 429]
    assert json.loads(got[3][1])["detail"] == "Request quota exceeded. Wait 1 second and try again."
    # the same bucket, now 400 ms deep (the denial was counted, as nginx
    # counts a delayed request): two held at once, the third is denied
    sent = []
    for k in range(3):
        sent.append(send_timed(p, "/echo", k))
        time.sleep(0.02)
    got = [read_response(s) for s, _ in sent]
    assert [st for st, _ in got] == [200, 200, 429]


def send_as(p, path, client, k):
    """Like send_timed, as `client` (the X-Client header) with X-Seq k."""
    s = socket.create_connection((p.address, p.port), timeout=15)
    s.sendall(f"GET {path}?c={client}{k} HTTP/1.1\r\nHost: x\r\nX-Client: {client}\r\n"
              f"X-Seq: {k}\r\n\r\n".encode())
    return s


def scheduled_delays(p):
    """{target: the delay the access log says it was scheduled to be held
    for, None when not held}."""
    out = {}
    for ln in access(p):
        target = ln.split('"')[1].split()[1]
        d = ln.split(" delay=")[1] if " delay=" in ln else None
        out[target] = float(d) if d is not None else None
    return out


PER_CLIENT = "[{request_headers: {header_name: X-Client, descriptor_key: shaper}}]"


def test_shaping_delays_each_key_by_its_own_limit(proxy_sluiced, upstream, tmp_path):
    """leaky_bucket 2/s, burst 4 per client, on the frozen clock: client
    A's five requests are held 0, 0.5, 1, 1.5 and 2 s; client B's second,
    queued after them on the same route, is held its own 0.5 s, not until
    A's last has left (nginx's limit_req delay= does the same)."""
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("shaped", u, "/", PER_CLIENT, "max_delay: 5s"))
    sent = []
    for c, k in [("A", k) for k in range(5)] + [("B", 0), ("B", 1)]:
        sent.append((c, k, send_as(p, "/echo", c, k)))  # in turn: decided in this order
        time.sleep(0.02)
    got = [(c, k, read_response(s)) for c, k, s in sent]
    assert [st for _, _, (st, _) in got] == [200] * 7
    # within one key the order is kept: A's requests reached the upstream in turn
    received = {(c, k): json.loads(b)["received"] for c, k, (_, b) in got}
    assert [received[("A", k)] for k in range(5)] == sorted(received[("A", k)] for k in range(5))
    time.sleep(0.2)
    d = scheduled_delays(p)
    assert [d[f"/echo?c=A{k}"] for k in range(5)] == [None, 0.5, 1.0, 1.5, 2.0], d
    assert d["/echo?c=B0"] is None
    assert d["/echo?c=B1"] == 0.5, d  # its own delay, not A's queue
    assert sum("decision=delay" in ln for ln in access(p)) == 5


def test_shaping_held_clients_that_leave_are_dropped_from_among_the_others(
        proxy_sluiced, upstream, tmp_path):
    """Requests of two keys held at once; two of A's, from the middle of
    the held ones, close their connections: they are never forwarded (499
    in the access log), and every other one still is, A's in order."""
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("shaped", u, "/", PER_CLIENT, "max_delay: 5s"))
    sent = []
    for c, k in [("A", k) for k in range(5)] + [("B", 0), ("B", 1), ("B", 2)]:
        sent.append((c, k, send_as(p, "/echo", c, k)))
        time.sleep(0.02)
    gone = {("A", 1), ("A", 3)}
    for c, k, s in sent:
        if (c, k) in gone:  # a reset: seen at once, though the connection is not read
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
    got = {(c, k): read_response(s) for c, k, s in sent if (c, k) not in gone}
    assert all(st == 200 for st, _ in got.values())
    received = [json.loads(got[("A", k)][1])["received"] for k in (0, 2, 4)]
    assert received == sorted(received)
    time.sleep(0.2)
    lines = access(p)
    assert sum(" 499 " in ln and "upstream=-" in ln for ln in lines) == 2
    assert u.stats()["requests"] == 6 + 1
    d = scheduled_delays(p)
    assert [d[f"/echo?c=B{k}"] for k in range(3)] == [None, 0.5, 1.0], d


def test_shaping_max_queue_bounds_the_route_over_every_key(proxy_sluiced, upstream, tmp_path):
    """max_queue counts the requests a route holds, whatever their key:
    with 3 held (A's), A's next and B's delayed one are denied, B's
    undelayed one passes."""
    u = upstream()
    p = start(proxy_sluiced, tmp_path,
              limited("shaped", u, "/", PER_CLIENT, "max_delay: 5s\nmax_queue: 3"))
    sent = []
    for c, k in [("A", k) for k in range(5)] + [("B", 0), ("B", 1)]:
        sent.append((c, k, send_as(p, "/echo", c, k)))
        time.sleep(0.02)
    got = {(c, k): read_response(s)[0] for c, k, s in sent}
    assert [got[("A", k)] for k in range(5)] == [200, 200, 200, 200, 429]
    assert got[("B", 0)] == 200 and got[("B", 1)] == 429
    time.sleep(0.2)
    d = scheduled_delays(p)
    assert [d[f"/echo?c=A{k}"] for k in range(4)] == [None, 0.5, 1.0, 1.5], d


# ------------------------------------------------------------ concurrency


def slow(p, ms, linger=False):
    s = socket.create_connection((p.address, p.port), timeout=15)
    if linger:  # close with a reset
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.sendall(f"GET /slow?ms={ms} HTTP/1.1\r\nHost: x\r\nX-Tenant: t1\r\n\r\n".encode())
    return s


def tenant(p):
    return get(p, "/slow?ms=1", headers={"X-Tenant": "t1"})[0]


def wait_admitted(p, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if tenant(p) == 200:
            return True
        time.sleep(0.05)
    return False


def test_concurrency_lease_released_on_completion_and_abort(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    t = "[{request_headers: {header_name: X-Tenant, descriptor_key: tenant}}]"
    p = start(proxy_sluiced, tmp_path, limited("conc", u, "/", t))
    # two in flight: the third is denied while they run
    a, b = slow(p, 800), slow(p, 800)
    time.sleep(0.3)
    status, h, body = get(p, "/slow?ms=1", headers={"X-Tenant": "t1"})
    assert status == 429
    # no lease given back yet: the wait is the oldest lease's expiry
    assert h["retry-after"] == "300"
    assert json.loads(body)["detail"] == "Too many requests in flight. Try again in about 5 minutes."
    # completion gives the leases back
    assert read_response(a)[0] == 200 and read_response(b)[0] == 200
    assert statuses(p, "/slow?ms=1", 3, headers={"X-Tenant": "t1"}) == [200] * 3
    # clients that give up (a reset; a close) give theirs back long before
    # the upstream would have answered (10 s)
    a, b = slow(p, 10000, linger=True), slow(p, 10000)
    time.sleep(0.3)
    # the leases given back were held 0 s on the frozen clock: the wait is
    # that (at least 1 s), not the 5-minute lease
    status, h, body = get(p, "/slow?ms=1", headers={"X-Tenant": "t1"})
    assert status == 429 and h["retry-after"] == "1"
    assert json.loads(body)["detail"] == "Too many requests in flight. Try again in about 1 second."
    a.close()
    b.close()
    assert wait_admitted(p, 5), "the leases of aborted requests were not given back"
    assert statuses(p, "/slow?ms=1", 2, headers={"X-Tenant": "t1"}) == [200, 200]
    time.sleep(0.3)
    assert sum(" 499 " in ln for ln in access(p)) == 2


def test_concurrency_lease_released_when_the_upstream_fails(proxy_sluiced, upstream, tmp_path):
    t = "[{request_headers: {header_name: X-Tenant, descriptor_key: tenant}}]"
    p = start(proxy_sluiced, tmp_path,
              route("down", [f"127.0.0.1:{free_port()}"],
                    extra=f"domain: edge\nrate_limits:\n  - actions: {t}"))
    assert statuses(p, "/x", 4, headers={"X-Tenant": "t1"}) == [502] * 4


# ------------------------------------------------------------ kill switches, shadow


def test_kill_switch_and_shadow_mode(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    admin = free_port()
    p = start(proxy_sluiced, tmp_path, limited("ip", u, "/", "[{remote_address: {}}]"),
              listeners=f"  - {{address: 127.0.0.1, port: {admin}, protocols: [http1]}}\n")

    def switch(mode):
        req = urllib.request.Request(f"http://127.0.0.1:{admin}/v1/killswitch", method="PUT",
                                     data=json.dumps({"domain": "edge", "mode": mode}).encode(),
                                     headers={"Authorization": f"Bearer {p.token()}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 200

    assert statuses(p, "/echo", 4) == [200, 200, 200, 429]
    switch("shadow")
    status, h, _ = get(p, "/echo")
    assert status == 200 and "retry-after" not in h
    switch("off")
    status, h, _ = get(p, "/echo")
    assert status == 200 and "ratelimit-policy" not in h
    switch("enforce")
    assert get(p, "/echo")[0] == 429
    time.sleep(0.2)
    lines = access(p)
    assert sum("decision=shadow" in ln for ln in lines) == 1
    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5) as r:
        metrics = r.read().decode()
    assert "sluice_shadow_denials_total" in metrics and "sluice_killswitch_off_total" in metrics


def test_global_shadow_mode(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    p = start(proxy_sluiced, tmp_path, limited("ip", u, "/", "[{remote_address: {}}]"),
              extra="  shadow_mode: true")
    assert statuses(p, "/echo", 5) == [200] * 5
    time.sleep(0.2)
    assert sum("decision=shadow" in ln for ln in access(p)) == 2


# ------------------------------------------------------------ errors


def test_a_descriptor_over_the_caps_is_refused_not_let_through(proxy_sluiced, upstream, tmp_path):
    u = upstream()
    key = "[{request_headers: {header_name: X-Api-Key, descriptor_key: api_key}}]"
    p = start(proxy_sluiced, tmp_path, limited("key", u, "/", key))
    status, _, body = get(p, "/echo", headers={"X-Api-Key": "k" * 2000})
    assert status == 431 and b"too long" in body
    time.sleep(0.2)
    assert "decision=error" in access(p)[-1]


def check_config(tmp_path, routes, section=""):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"""listeners:
  - {{address: 127.0.0.1, port: {free_port()}, protocols: [proxy]}}
rules:
  files: [{rules}]
proxy:
{section}  routes:
    - name: api
      upstream: {{servers: ["127.0.0.1:9"]}}
{routes}""")
    out = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                         text=True, timeout=10)
    return out.returncode, out.stderr + out.stdout


def test_configuration_errors_say_where(tmp_path):
    cases = [
        ("      domain: edge\n      rate_limits:\n        - actions: [{remote_adress: {}}]\n",
         ":11:", "unknown action 'remote_adress'"),
        ("      domain: edge\n      rate_limits:\n"
         "        - actions: [{request_headers: {header_name: X-A}}]\n",
         ":11:", "request_headers needs header_name and descriptor_key"),
        ("      domain: edge\n      rate_limits:\n"
         "        - actions: [{masked_remote_address: {v6_prefix_mask_len: 129}}]\n",
         ":11:", "v6_prefix_mask_len must be a prefix length from 0 to 128"),
        ("      rate_limits:\n        - actions: [{remote_address: {}}]\n",
         ":7:", "rate_limits need a domain"),
        ("      domain: edge\n      deny_body: text\n      rate_limits:\n"
         "        - actions: [{remote_address: {}}]\n", ":7:", "deny_body: text needs deny_text"),
        ("      deny_status: 200\n", ":9:", "deny_status"),
    ]
    for routes, where, what in cases:
        rc, out = check_config(tmp_path, routes)
        assert rc != 0 and where in out and what in out, (routes, out)
    rc, out = check_config(tmp_path, "", section="  trusted_proxies: [10.0.0.0/33]\n")
    assert rc != 0 and "an IPv4 prefix length is 0 to 32" in out, out
    rc, out = check_config(tmp_path, "      domain: edge\n      rate_limits:\n"
                                     "        - actions: [{remote_address: {}}, {method: {}}]\n",
                           section="  trusted_proxies: [10.0.0.0/8, '2001:db8::/32']\n")
    assert rc == 0, out
