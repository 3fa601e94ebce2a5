# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_rlqs.py - envoy.service.rate_limit_quota.v3's
StreamRateLimitQuotas against the real sluiced (memory store, two
workers): simulated Envoys, each a python3-grpcio stream on a connection
of its own, report their buckets every REPORT seconds as Envoy's
rate_limit_quota filter does, and keep the assignments they get as Envoy
would (the last one for a bucket, until its TTL).

Checked: an unmatched bucket gets ALLOW_ALL with a TTL, requests_per_unit:
0 DENY_ALL, an unlimited rule ALLOW_ALL, a concurrency limit (no rate) is
refused with a logged reason and answered as unmatched, one Envoy gets the
whole limit as a token_bucket, a bucket id's pairs match a nested rule in
either order but not a partial path, on_unmatched: deny gives DENY_ALL; with skewed demand (one Envoy at ten times
the others) the shares are max-min fair, the sum of the unexpired
assignments never exceeds the limit, the shares follow a change of demand,
and an Envoy that leaves has its share handed on only after its TTL; a rules
reload (SIGHUP with an edited file) reaches every stream, abandon_action for
the bucket whose rule went; the kill switch "shadow" turns assignments into
ALLOW_ALL; malformed, oversized and over-cap messages end their stream with
a gRPC error while the other streams on the same connection go on; the
sluice_rlqs_* series in /metrics. Every wait is bounded.
"""
import queue
import signal
import threading
import time

import grpc
import pytest

from grpc_client import channel  # noqa: F401  (compiles the messages)
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401
from envoy.service.rate_limit_quota.v3 import rlqs_pb2  # noqa: E402

METHOD = "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas"
REPORT = 0.2  # seconds between reports
LIMIT = 100.0

RULES = """\
domain: rlqs
descriptors:
  - key: name
    value: shared
    limits:
      - algorithm: token_bucket
        requests: 100
        period: 1s
        burst: 100
  - key: name
    value: doomed
    limits:
      - algorithm: token_bucket
        requests: 10
        period: 1s
        burst: 10
  - key: name
    value: blocked
    rate_limit:
      unit: second
      requests_per_unit: 0
  - key: name
    value: free
    rate_limit: {unlimited: true}
  - key: name
    value: inflight
    limits:
      - algorithm: concurrency
        requests: 5
        lease: 30s
  - key: name
    value: watched
    shadow_mode: true
    limits:
      - algorithm: token_bucket
        requests: 10
        period: 1s
        burst: 10
  - key: tenant
    descriptors:
      - key: path
        value: /v1
        limits:
          - algorithm: gcra
            requests: 50
            period: 1s
            burst: 9
---
domain: strict
on_unmatched: deny
descriptors:
  - key: name
    value: known
    rate_limit:
      unit: second
      requests_per_unit: 5
"""

Strategy = rlqs_pb2.RateLimitQuotaResponse  # (for the names below)


def bucket_key(bucket_id):
    return tuple(sorted(bucket_id.bucket.items()))


class Assignment:
    def __init__(self, action, now, seq=0):
        self.seq = seq  # the message it came in (its stream's count)
        self.abandon = action.WhichOneof("bucket_action") == "abandon_action"
        self.kind = None
        self.rate = 0.0
        self.max_tokens = 0
        self.until = now
        if self.abandon:
            return
        qa = action.quota_assignment_action
        ttl = qa.assignment_time_to_live.seconds + qa.assignment_time_to_live.nanos / 1e9
        self.ttl = ttl
        self.until = now + ttl
        st = qa.rate_limit_strategy
        self.kind = st.WhichOneof("strategy") or "blanket_rule"
        if self.kind == "blanket_rule":
            self.kind = "DENY_ALL" if st.blanket_rule == 1 else "ALLOW_ALL"
        elif self.kind == "token_bucket":
            tb = st.token_bucket
            fill = tb.fill_interval.seconds + tb.fill_interval.nanos / 1e9
            self.rate = tb.tokens_per_fill.value / fill
            self.max_tokens = tb.max_tokens
            assert 1 <= tb.tokens_per_fill.value <= tb.max_tokens


class Envoy:
    """One simulated Envoy: a stream of its own, on a connection of its own
    unless given a channel."""

    def __init__(self, port, domain="rlqs", ch=None):
        self.ch = ch or grpc.insecure_channel(f"127.0.0.1:{port}",
                                              options=[("grpc.use_local_subchannel_pool", 1)])
        self.own = ch is None
        self.domain = domain
        self.sent_domain = False
        self.q = queue.Queue()
        self.assign = {}  # bucket key -> Assignment (as Envoy keeps them)
        self.abandoned = []
        self.abandon_seq = None
        self.error = None
        self.lock = threading.RLock()
        self.got = threading.Condition(self.lock)
        self.n_msgs = 0
        call = self.ch.stream_stream(METHOD, request_serializer=lambda b: b,
                                     response_deserializer=rlqs_pb2.RateLimitQuotaResponse.FromString)
        self.call = call(iter(self.q.get, None))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        try:
            for resp in self.call:
                now = time.monotonic()
                with self.lock:
                    for a in resp.bucket_action:
                        k = bucket_key(a.bucket_id)
                        asg = Assignment(a, now, self.n_msgs)
                        if asg.abandon:
                            self.abandoned.append(k)
                            self.abandon_seq = self.n_msgs
                            self.assign.pop(k, None)
                        else:
                            self.assign[k] = asg
                    self.n_msgs += 1
                    self.got.notify_all()
        except grpc.RpcError as e:
            with self.lock:
                self.error = e
                self.got.notify_all()

    def raw(self, data):
        self.q.put(data)

    def report(self, usages):
        """usages: {name: (allowed, denied)} over REPORT seconds."""
        m = rlqs_pb2.RateLimitQuotaUsageReports()
        if not self.sent_domain:
            m.domain = self.domain
            self.sent_domain = True
        for name, (allowed, denied) in usages.items():
            u = m.bucket_quota_usages.add()
            if isinstance(name, frozenset):
                u.bucket_id.bucket.update(dict(name))
            else:
                u.bucket_id.bucket["name"] = name
            u.time_elapsed.nanos = int(REPORT * 1e9)
            u.num_requests_allowed = allowed
            u.num_requests_denied = denied
        self.q.put(m.SerializeToString())

    def wait(self, pred, timeout=5.0):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not pred(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.got.wait(left)
            return True

    def get(self, name):
        with self.lock:
            return self.assign.get((("name", name),))

    def code(self, timeout=5.0):
        assert self.wait(lambda e: e.error is not None, timeout), "the stream did not end"
        return self.error.code(), self.error.details()

    def close(self):
        self.q.put(None)
        self.call.cancel()
        if self.own:
            self.ch.close()


def demand_usage(rps):
    n = int(rps * REPORT)
    return (n, 0)


def applied_sum(envoys, name, now=None):
    """What the Envoys apply for bucket `name` now: their unexpired token buckets."""
    now = time.monotonic() if now is None else now
    total = 0.0
    for e in envoys:
        a = e.get(name)
        if a is not None and a.kind == "token_bucket" and a.until > now:
            total += a.rate
    return total


def eventually(pred, timeout=0.5):
    """pred() within timeout: what is in flight (an assignment sent but not
    yet read) has arrived by then."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def metric(s, name):
    out = {}
    for line in s.request("GET", "/metrics")[2].decode().splitlines():
        if line.startswith(name):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


@pytest.fixture
def sluiced(grpc_sluiced):
    return grpc_sluiced(rules=RULES, test_clock=False,
                        extra="grpc:\n  rlqs_max_buckets_per_stream: 8\n")


def test_assignments_by_rule(sluiced):
    e = Envoy(sluiced.port)
    try:
        e.report({"shared": demand_usage(10), "nothing": (1, 0), "blocked": (1, 0),
                  "free": (1, 0), "inflight": (1, 0)})
        assert e.wait(lambda x: len(x.assign) == 5), e.assign
        assert e.get("nothing").kind == "ALLOW_ALL" and e.get("nothing").ttl >= 1.0
        assert e.get("blocked").kind == "DENY_ALL"
        assert e.get("free").kind == "ALLOW_ALL"
        assert e.get("inflight").kind == "ALLOW_ALL"  # refused as a rate: as unmatched
        one = e.get("shared")
        assert one.kind == "token_bucket"
        assert 99.0 <= one.rate <= LIMIT and one.max_tokens == 100
        assert "grpc.rlqs_not_rate" in sluiced.log_text()
        # a bucket id is a map: its pairs match a nested rule in whichever order
        e.report({})  # an empty report is no error
        nested = {"path": "/v1", "tenant": "acme"}
        e.report({frozenset(nested.items()): (1, 0)})
        assert e.wait(lambda x: (("path", "/v1"), ("tenant", "acme")) in x.assign)
        a = e.assign[(("path", "/v1"), ("tenant", "acme"))]
        assert a.kind == "token_bucket" and 49.0 <= a.rate <= 50.0 and a.max_tokens == 10
        # ... but not a path that only part of it matches: unmatched
        e.report({frozenset({"tenant": "acme", "path": "/v2"}.items()): (1, 0)})
        assert e.wait(lambda x: (("path", "/v2"), ("tenant", "acme")) in x.assign)
        assert e.assign[(("path", "/v2"), ("tenant", "acme"))].kind == "ALLOW_ALL"
        # a domain with on_unmatched: deny denies what no rule matches
        strict = Envoy(sluiced.port, domain="strict")
        strict.report({"unknown": (1, 0), "known": (1, 0)})
        assert strict.wait(lambda x: len(x.assign) == 2)
        assert strict.get("unknown").kind == "DENY_ALL"
        assert strict.get("known").kind == "token_bucket"
        assert strict.get("known").max_tokens == 5
        strict.close()
        streams = metric(sluiced, "sluice_rlqs_streams")["sluice_rlqs_streams"]
        assert streams >= 1
        allowed = metric(sluiced, "sluice_rlqs_reported_requests_total")
        assert allowed['sluice_rlqs_reported_requests_total{outcome="allowed"}'] >= 6
    finally:
        e.close()


def test_skewed_demand_divided_fairly_and_within_the_limit(sluiced):
    rates = [200, 20, 20, 20]  # one Envoy at ten times the others
    envoys = [Envoy(sluiced.port) for _ in rates]
    try:
        def run_rounds(rates, rounds, until=None):
            for _ in range(rounds):
                for e, r in zip(envoys, rates):
                    if e is not None:
                        e.report({"shared": demand_usage(r)})
                time.sleep(REPORT)
                live = [e for e in envoys if e is not None]
                assert eventually(lambda: applied_sum(live + gone, "shared") <= LIMIT * (1 + 1e-6)), \
                    applied_sum(live + gone, "shared")
                assigned = metric(sluiced, "sluice_rlqs_assigned_rate")
                for k, v in assigned.items():
                    assert v <= LIMIT * (1 + 1e-6), (k, v)
                if until is not None and until():
                    return True
            return False

        gone = []

        def shares(want):
            def ok():
                for e, w in zip(envoys, want):
                    a = e.get("shared") if e is not None else None
                    if w is None:
                        continue
                    if a is None or a.kind != "token_bucket" or abs(a.rate - w) > 0.05 * w:
                        return False
                return True
            return ok

        # max-min fair: the three small ones get their 20, the big one the rest
        assert run_rounds(rates, 25, shares([40, 20, 20, 20])), \
            [e.get("shared").rate for e in envoys]
        # demand moves: the big one calms down, another grows ten-fold
        assert run_rounds([20, 200, 20, 20], 25, shares([20, 40, 20, 20])), \
            [e.get("shared").rate for e in envoys]
        # the second leaves: its share is free only after its TTL
        leaving = envoys[1]
        last = leaving.get("shared")
        leaving.close()
        gone.append(leaving)
        envoys[1] = None
        assert run_rounds([20, None, 200, 20], 30, shares([20, None, 60, 20])), \
            [e.get("shared").rate for e in envoys if e is not None]
        assert time.monotonic() >= last.until - 0.05  # not handed on before its TTL
        inst = metric(sluiced, "sluice_rlqs_instances")
        assert 3.0 in inst.values(), inst
    finally:
        for e in envoys:
            if e is not None:
                e.close()


class Enforcer:
    """What an Envoy's rate_limit_quota filter does with its assignment for
    one bucket: a token bucket of the assignment's rate and max_tokens,
    started full whenever the assignment changes (a renewal that changes
    nothing keeps its tokens), denying before the first assignment."""

    def __init__(self, envoy, name, offered):
        self.e, self.name, self.offered = envoy, name, offered
        self.cur = None  # (rate, max_tokens)
        self.tokens = 0.0
        self.due = 0.0  # requests arrived, not yet decided
        self.allowed = self.denied = 0  # since the last report
        self.changes = []  # (time, max_tokens) of each changed assignment
        self.admitted = []  # (time, n)

    def step(self, now, dt):
        a = self.e.get(self.name)
        if a is not None and a.kind == "token_bucket" and a.until > now:
            if self.cur != (a.rate, a.max_tokens):
                self.cur = (a.rate, a.max_tokens)
                self.tokens = float(a.max_tokens)
                self.changes.append((now, a.max_tokens))
            else:
                self.tokens = min(float(a.max_tokens), self.tokens + a.rate * dt)
        else:
            self.cur, self.tokens = None, 0.0
        self.due += self.offered * dt
        n = int(self.due)
        self.due -= n
        ok = min(n, int(self.tokens))
        self.tokens -= ok
        self.allowed += ok
        self.denied += n - ok
        if ok:
            self.admitted.append((now, ok))


def drive(fs, seconds, each=None):
    """Run the Enforcers `seconds` in steps of about 10 ms, each reporting
    what it allowed and denied every REPORT; each(now) after every step.
    Returns the start time."""
    for f in fs:
        f.e.report({f.name: (0, 0)})
    t0 = last = next_report = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(0.01)
        now = time.monotonic()
        for f in fs:
            f.step(now, now - last)
        last = now
        if each is not None:
            each(now)
        if now >= next_report:
            for f in fs:
                f.e.report({f.name: (f.allowed, f.denied)})
                f.allowed = f.denied = 0
            next_report = now + REPORT
    return t0


def check_windows(fs, t0, base):
    """Every 1 s window from each admission on: what the Enforcers let
    through together is at most base(start) (the rate x 1 s and burst the
    window may use) + the max_tokens of the assignments changed in it
    (each starts full) + a tenth of the rate for delivery."""
    events = sorted((t, n) for f in fs for t, n in f.admitted)
    changes = sorted(c for f in fs for c in f.changes)
    assert events, "nothing was let through"
    most = (0, 0, 0)  # the busiest window: (let through, its allowance, start)
    for i, (start, _) in enumerate(events):
        end = start + 1.0
        got = sum(n for t, n in events[i:] if t < end)
        allow = base(start) + LIMIT * 0.1 + \
            sum(m for t, m in changes if start - 1e-9 <= t < end)
        assert got <= allow, (start - t0, got, allow)
        most = max(most, (got, allow, start - t0))
    print("busiest 1 s window: %d let through, allowance %.1f, at %.2f s" % most)


def test_enforced_shares_keep_the_fleet_within_the_limit_in_every_window(sluiced):
    """Four Envoys that enforce their assignments, one offered 400 requests a
    second and three 10 (their demand together below the limit, so max-min
    gives the busy one the rest): over every 1 s window the requests they let through
    together are at most the limit's rate x 1 s + its burst + the
    max_tokens of the assignments changed in that window (each starts
    full) + a delivery allowance of a tenth of the rate; and the busy one
    lets through more than each quiet one."""
    envoys = [Envoy(sluiced.port) for _ in range(4)]
    fs = [Enforcer(e, "shared", 400.0 if i == 0 else 10.0) for i, e in enumerate(envoys)]
    try:
        t0 = drive(fs, 6.0)
        check_windows(fs, t0, lambda start: LIMIT + 100)
        late = [sum(n for t, n in f.admitted if t > t0 + 3.0) for f in fs]
        # the last 3 s: the quiet ones get what they ask, the busy one the rest
        assert late[0] > 2 * sum(late[1:]), late
        assert sum(late) > 0.5 * LIMIT * 3.0, late  # the limit is used, not starved
    finally:
        for e in envoys:
            e.close()


def test_rules_reload_reaches_every_stream(sluiced):
    envoys = [Envoy(sluiced.port) for _ in range(3)]
    try:
        for e in envoys:
            e.report({"doomed": (1, 0), "shared": (1, 0)})
        for e in envoys:
            assert e.wait(lambda x: x.get("doomed") is not None and x.get("shared") is not None)
            assert e.get("doomed").kind == "token_bucket"
        # the rule of "doomed" goes, "shared" gets stricter
        edited = RULES.replace("""  - key: name
    value: doomed
    limits:
      - algorithm: token_bucket
        requests: 10
        period: 1s
        burst: 10
""", "").replace("requests: 100\n        period: 1s\n        burst: 100",
                 "requests: 30\n        period: 1s\n        burst: 30")
        assert edited != RULES and "doomed" not in edited
        (sluiced.dir / "rules.yaml").write_text(edited)
        sluiced.proc.send_signal(signal.SIGHUP)
        for e in envoys:
            assert e.wait(lambda x: (("name", "doomed"),) in x.abandoned), e.abandoned
            # an assignment matched under the new rules: in the abandoning
            # message (the same pass over the stream's buckets) or later
            assert e.wait(lambda x: x.get("shared") is not None and
                          x.get("shared").seq >= x.abandon_seq and
                          x.get("shared").rate <= 30.0 + 1e-6), e.get("shared").rate
        # the new pool's shares: within its limit once what is in flight arrived
        assert eventually(lambda: sum(e.get("shared").rate for e in envoys) <= 30.0 * (1 + 1e-6),
                          2.0), [e.get("shared").rate for e in envoys]
        # Envoy re-subscribes to an abandoned bucket by reporting it: now unmatched
        envoys[0].report({"doomed": (1, 0)})
        assert envoys[0].wait(lambda x: x.get("doomed") is not None and
                              x.get("doomed").kind == "ALLOW_ALL")
    finally:
        for e in envoys:
            e.close()


def test_rlqs_domain_with_a_non_rate_limit_is_refused_at_reload(sluiced):
    e = Envoy(sluiced.port)
    try:
        e.report({"shared": demand_usage(10), "doomed": (1, 0)})
        assert e.wait(lambda x: x.get("shared") is not None and x.get("doomed") is not None)
        # the domain now says it is served over RLQS, and it holds a
        # concurrency limit ("inflight") an assignment cannot carry
        marked = RULES.replace("domain: rlqs\n", "domain: rlqs\nrlqs: true\n", 1)
        assert marked != RULES
        (sluiced.dir / "rules.yaml").write_text(marked.replace("requests: 10\n        period: 1s"
                                                              "\n        burst: 10\n", "requests:"
                                                              " 20\n        period: 1s\n      "
                                                              "  burst: 20\n", 1))
        sluiced.proc.send_signal(signal.SIGHUP)
        assert eventually(lambda: "which a rate limit quota assignment cannot carry"
                          in sluiced.log_text(), 5.0), sluiced.log_text()[-2000:]
        assert "rules.yaml:" in sluiced.log_text()
        # refused whole: the old rules serve on (doomed's limit is still 10, the
        # concurrency rule still answered as unmatched)
        time.sleep(0.6)  # past a stream tick, which would re-match under new rules
        e.report({"doomed": demand_usage(1), "inflight": (1, 0)})
        assert e.wait(lambda x: x.get("inflight") is not None)
        assert e.get("inflight").kind == "ALLOW_ALL"
        assert e.get("doomed").kind == "token_bucket" and e.get("doomed").max_tokens == 10
        assert sluiced.proc.poll() is None
    finally:
        e.close()


def test_shadow_kill_switch_allows_and_counts(sluiced):
    e = Envoy(sluiced.port)
    try:
        e.report({"shared": demand_usage(10)})
        assert e.wait(lambda x: x.get("shared") is not None and x.get("shared").kind == "token_bucket")
        status, _, body = sluiced.json("PUT", "/v1/killswitch", {"domain": "rlqs", "mode": "shadow"})
        assert status == 200, body
        assert e.wait(lambda x: x.get("shared").kind == "ALLOW_ALL")
        e.report({"shared": (1000, 0)})  # far over its share (100/s over 0.2 s)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if metric(sluiced, "sluice_rlqs_shadow_denied_total").get(
                    "sluice_rlqs_shadow_denied_total", 0) > 0:
                break
            time.sleep(0.1)
        else:
            pytest.fail("no would-be denial counted")
        sluiced.json("PUT", "/v1/killswitch", {"domain": "rlqs", "mode": "enforce"})
        assert e.wait(lambda x: x.get("shared").kind == "token_bucket")
    finally:
        e.close()


def test_shadow_rule_allows_and_counts(sluiced):
    e = Envoy(sluiced.port)
    try:
        e.report({"watched": (1, 0)})
        assert e.wait(lambda x: x.get("watched") is not None)
        assert e.get("watched").kind == "ALLOW_ALL"
        before = metric(sluiced, "sluice_rlqs_shadow_denied_total")["sluice_rlqs_shadow_denied_total"]
        e.report({"watched": (500, 0)})  # 2500/s against a shadow 10/s
        deadline = time.monotonic() + 5
        while metric(sluiced, "sluice_rlqs_shadow_denied_total")[
                "sluice_rlqs_shadow_denied_total"] <= before:
            assert time.monotonic() < deadline, "no would-be denial counted"
            time.sleep(0.1)
        assert e.get("watched").kind == "ALLOW_ALL"
    finally:
        e.close()


def test_bad_messages_end_their_stream_only(sluiced):
    ch = grpc.insecure_channel(f"127.0.0.1:{sluiced.port}",
                               options=[("grpc.use_local_subchannel_pool", 1),
                                        ("grpc.max_send_message_length", 1 << 22)])
    good = Envoy(sluiced.port, ch=ch)
    try:
        good.report({"shared": demand_usage(10)})
        assert good.wait(lambda x: x.get("shared") is not None)

        def ended(send, code, words):
            bad = Envoy(sluiced.port, ch=ch)
            send(bad)
            got, details = bad.code()
            assert got == code, (got, details)
            assert words in details, details
            bad.close()

        ended(lambda b: b.raw(b"\xff\xff\xff\xff"), grpc.StatusCode.INTERNAL,
              "not a valid RateLimitQuotaUsageReports")
        ended(lambda b: b.raw(rlqs_pb2.RateLimitQuotaUsageReports().SerializeToString()),
              grpc.StatusCode.INVALID_ARGUMENT, "domain")

        def no_id(b):
            m = rlqs_pb2.RateLimitQuotaUsageReports(domain="rlqs")
            u = m.bucket_quota_usages.add()
            u.time_elapsed.seconds = 1
            b.raw(m.SerializeToString())
        ended(no_id, grpc.StatusCode.INVALID_ARGUMENT, "bucket_id")

        def no_elapsed(b):
            m = rlqs_pb2.RateLimitQuotaUsageReports(domain="rlqs")
            m.bucket_quota_usages.add().bucket_id.bucket["name"] = "x"
            b.raw(m.SerializeToString())
        ended(no_elapsed, grpc.StatusCode.INVALID_ARGUMENT, "time_elapsed")

        def other_domain(b):
            b.report({"x": (1, 0)})
            m = rlqs_pb2.RateLimitQuotaUsageReports(domain="other")
            b.raw(m.SerializeToString())
        ended(other_domain, grpc.StatusCode.INVALID_ARGUMENT, "domain")

        def oversized(b):  # above grpc.max_message_bytes (64KiB)
            m = rlqs_pb2.RateLimitQuotaUsageReports(domain="rlqs")
            u = m.bucket_quota_usages.add()
            u.bucket_id.bucket["name"] = "x" * (100 << 10)
            u.time_elapsed.seconds = 1
            b.raw(m.SerializeToString())
        ended(oversized, grpc.StatusCode.RESOURCE_EXHAUSTED, "")

        def too_many_buckets(b):  # grpc.rlqs_max_buckets_per_stream: 8 (the config below)
            b.report({f"b{i}": (1, 0) for i in range(9)})
        ended(too_many_buckets, grpc.StatusCode.RESOURCE_EXHAUSTED,
              "grpc.rlqs_max_buckets_per_stream")

        # the good stream on the same connection still gets its assignments
        n = good.n_msgs
        good.report({"shared": demand_usage(10), "other": (1, 0)})
        assert good.wait(lambda x: x.n_msgs > n and x.get("other") is not None)
        assert good.error is None
    finally:
        good.close()
        ch.close()


def test_streams_per_connection_capped(grpc_sluiced):
    s = grpc_sluiced(rules=RULES, test_clock=False,
                     extra="grpc:\n  rlqs_max_streams_per_connection: 2\n")
    ch = grpc.insecure_channel(f"127.0.0.1:{s.port}",
                               options=[("grpc.use_local_subchannel_pool", 1)])
    streams = [Envoy(s.port, ch=ch) for _ in range(3)]
    try:
        for e in streams[:2]:
            e.report({"shared": (1, 0)})
            assert e.wait(lambda x: x.get("shared") is not None)
        streams[2].report({"shared": (1, 0)})
        code, details = streams[2].code()
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "grpc.rlqs_max_streams_per_connection" in details
        refused = metric(s, "sluice_rlqs_refused_total")
        assert refused['sluice_rlqs_refused_total{reason="streams_per_connection"}'] == 1
        # one ends: room for another
        streams[0].close()
        deadline = time.monotonic() + 5
        while metric(s, "sluice_rlqs_streams").get("sluice_rlqs_streams") != 1.0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        again = Envoy(s.port, ch=ch)
        streams.append(again)
        again.report({"shared": (1, 0)})
        assert again.wait(lambda x: x.get("shared") is not None)
    finally:
        for e in streams:
            e.close()
        ch.close()


def rlqs_stats(s):
    status, _, doc = s.json("GET", "/v1/stats?seconds=1")
    assert status == 200, doc
    return doc["rlqs"]


def test_v1_stats_rlqs_member(sluiced):
    # there before any stream, with zeros
    assert rlqs_stats(sluiced) == {"streams": 0, "buckets": 0, "pools": 0, "allowed": 0,
                                   "denied": 0, "shadow_denied": 0, "fleet": False,
                                   "by_pool": []}
    a, b = Envoy(sluiced.port), Envoy(sluiced.port)
    try:
        a.report({"shared": (10, 2), "blocked": (1, 1)})
        b.report({"shared": (7, 3)})
        assert a.wait(lambda x: x.get("shared") is not None and x.get("blocked") is not None)
        assert b.wait(lambda x: x.get("shared") is not None)
        q = rlqs_stats(sluiced)
        assert (q["streams"], q["buckets"], q["pools"]) == (2, 3, 1), q  # blocked: no pool
        assert (q["allowed"], q["denied"]) == (18, 6), q
        assert len(q["by_pool"]) == 1, q
        p = q["by_pool"][0]
        assert p["rule"] == "rlqs.name_shared", p
        assert len(p["pool"]) == 16 and int(p["pool"], 16) >= 0, p
        assert p["instances"] == 2 and p["limit_rate"] == LIMIT, p
        assert 0 < p["assigned_rate"] <= LIMIT * (1 + 1e-6), p
        assert (p["allowed"], p["denied"]) == (17, 5), p  # the pool's members only
        assert p["shadow"] is False
        # the same pool in /metrics
        inst = metric(sluiced, "sluice_rlqs_instances")
        assert inst == {f'sluice_rlqs_instances{{rule="rlqs.name_shared",pool="{p["pool"]}"}}': 2.0}
        # a stream that ends is no longer counted; its bucket's share holds until its TTL
        b.close()
        b = None
        assert eventually(lambda: rlqs_stats(sluiced)["streams"] == 1, 5.0)
        q = rlqs_stats(sluiced)
        assert q["buckets"] == 2 and (q["allowed"], q["denied"]) == (18, 6), q
    finally:
        a.close()
        if b is not None:
            b.close()
