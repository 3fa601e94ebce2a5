# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_metrics_cap.py - request-derived metric labels are capped.

A rule with Envoy's `detailed_metric: true` labels its decisions with the
request's own entries (`limit="user_alice"`), so an attacker chooses label
values. 10,000 distinct users through POST /json must not grow the series
beyond `metrics.max_series`; the rest is counted under `__overflow__`.
"""
import json
import re

from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULES = """\
domain: api
descriptors:
  - key: user
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 100
  - key: plain
    rate_limit:
      unit: minute
      requests_per_unit: 100
"""
CAP = 50
SERIES = re.compile(rb'^sluice_decisions_total\{domain="([^"]*)",limit="([^"]*)",outcome="([^"]*)"\} (\d+)$',
                    re.M)


def scrape(s):
    status, _, body = s.request("GET", "/metrics")
    assert status == 200
    return SERIES.findall(body)


def test_detailed_metric_labels_and_cap(http_sluiced):
    s = http_sluiced(rules=RULES, extra=f"metrics:\n  max_series: {CAP}\n")
    c = s.conn()
    sent = 0
    for batch in range(10000 // 32 + 1):
        descs = [{"entries": [{"key": "user", "value": f"u{batch * 32 + i}"}]}
                 for i in range(32) if batch * 32 + i < 10000]
        if not descs:
            break
        c.request("POST", "/json", json.dumps({"domain": "api", "descriptors": descs}))
        r = c.getresponse()
        assert r.status == 200
        r.read()
        sent += len(descs)
    c.close()
    assert sent == 10000
    series = scrape(s)
    labels = {(d, lim) for d, lim, _, _ in series}
    assert len(labels) <= CAP + 1, len(labels)  # the cap, plus the overflow series
    assert (b"__overflow__", b"__overflow__") in labels
    assert any(lim.startswith(b"user_u") for _, lim, _, _ in series)  # detailed labels
    total = sum(int(n) for _, _, outcome, n in series if outcome == b"allow")
    assert total == 10000  # every decision counted, in a series or the overflow


def test_plain_rule_keeps_the_limit_name(http_sluiced):
    s = http_sluiced(rules=RULES)
    s.json("POST", "/json", {"domain": "api", "descriptors": [
        {"entries": [{"key": "plain", "value": "x"}]}]})
    s.json("POST", "/json", {"domain": "api", "descriptors": [
        {"entries": [{"key": "user", "value": "bob"}]}]})
    limits = {lim for _, lim, _, _ in scrape(s)} - {b"__overflow__"}
    assert limits == {b"api.plain", b"user_bob"}, limits
