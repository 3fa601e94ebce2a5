# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_rules_reload.py - reloads never pile up and never hold SIGTERM: a
burst of SIGHUPs runs at most two reloads (one, and one more for whatever
was asked while it ran), counted in /metrics; SIGTERM during slow reloads
(big rules files) ends the process promptly; one admin write's work is
capped (the rule's YAML size, its descriptors; and a rule of none, which
every reload would refuse, is refused at once).

Reloads are counted, never timed: the only bound on time is the generous
one on the process exiting.
"""
import os
import signal
import subprocess
import time

from conftest import wait_for
from conftest_http import http_sluiced  # noqa: F401 (fixture)
from test_rules_files import metrics

SMALL = """domain: api
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 1}
"""


def big_rules(domain, n):
    """One domain of n sibling descriptors, a few with a limit: seconds to
    build where sibling descriptors cost O(n^2), milliseconds now."""
    lines = [f"domain: {domain}", "descriptors:"]
    for i in range(n):
        if i % 1000 == 0:
            lines.append(f"  - {{key: user, value: u{i}, rate_limit: "
                         "{unit: hour, requests_per_unit: 1}}")
        else:
            lines.append(f"  - {{key: user, value: u{i}}}")
    return "\n".join(lines) + "\n"


BIG = {"rules.yaml": SMALL, "a.yaml": big_rules("a", 24000), "b.yaml": big_rules("b", 24000)}


def settled(s):
    """Every reload asked has run, or been folded into one that ran, and at
    least one has run."""
    m = metrics(s)
    done = (m.get("sluice_reloads_total", 0) + m.get("sluice_reload_failures_total", 0)
            + m.get("sluice_reloads_coalesced_total", 0))
    return done > 0 and done >= m.get("sluice_reload_requests_total", 0)


def sighup_burst(s, n=6):
    """n SIGHUPs 10 ms apart: far quicker than a reload of BIG, yet each
    its own signal (two sent at once may merge in the kernel)."""
    for _ in range(n):
        os.kill(s.proc.pid, signal.SIGHUP)
        time.sleep(0.01)


def test_sighup_burst_runs_at_most_two_reloads(http_sluiced):
    s = http_sluiced(rules=BIG)
    sighup_burst(s)
    assert wait_for(lambda: settled(s), timeout=120), metrics(s)
    m = metrics(s)
    assert m["sluice_reload_requests_total"] >= 3, m  # without coalescing, 3+ reloads
    assert m["sluice_reload_failures_total"] == 0
    assert 1 <= m["sluice_reloads_total"] <= 2, m
    assert m["sluice_reloads_total"] + m["sluice_reloads_coalesced_total"] == \
        m["sluice_reload_requests_total"]
    # the rules still serve
    check = {"domain": "api", "descriptors": [{"user": "x"}]}
    assert s.json("POST", "/v1/check", check)[0] == 200
    assert s.json("POST", "/v1/check", check)[0] == 429


def test_sigterm_not_held_by_reloads(sluiced):
    # RESP only: the process exits, and under the sanitizers its exit is
    # checked for leaks; this test is about reloads, not HTTP's buffers.
    s = sluiced(rules=SMALL + "---\n" + big_rules("a", 36000))
    sighup_burst(s)
    os.kill(s.proc.pid, signal.SIGTERM)
    try:
        code = s.proc.wait(timeout=20)  # six reloads of these files took minutes before
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGTERM waited for the reloads:\n" + s.log_text()[-2000:])
    assert code == 0, s.log_text()[-2000:]
    log = s.log_text()
    assert "SIGTERM: stopping" in log
    assert log.count("rules: reloaded on SIGHUP") <= 1, log[-2000:]


def test_admin_write_is_capped(http_sluiced):
    s = http_sluiced(database=True)
    headers = dict(s.admin_headers, **{"Content-Type": "application/json"})
    many = "domain: shop\ndescriptors:\n" + "".join(
        f"  - {{key: user, value: u{i}}}\n" for i in range(5000))
    status, _, body = s.json("POST", "/v1/rules", {"id": "many", "yaml": many}, headers,
                             s.admin_port)
    assert status == 400, body
    assert "5000 descriptors" in body["error"] and "4096" in body["error"]
    huge = "domain: shop\ndescriptors:\n  - key: user\n" + "# padding\n" * 30000
    status, _, body = s.json("POST", "/v1/rules", {"id": "huge", "yaml": huge}, headers,
                             s.admin_port)
    assert status == 413, body
    assert "larger than 262144 bytes" in body["error"]
    status, _, body = s.json("PUT", "/v1/rules/huge", {"yaml": huge}, headers, s.admin_port)
    assert status == 413, body
    status, _, body = s.json("POST", "/v1/rules", {"id": "none", "yaml": "domain: shop\n"},
                             headers, s.admin_port)
    assert status == 400 and "no descriptors" in body["error"], body
    two = "domain: a\ndescriptors:\n  - key: user\n---\ndomain: b\n"
    status, _, body = s.json("POST", "/v1/rules", {"id": "two", "yaml": two}, headers,
                             s.admin_port)
    assert status == 400 and "domain 'b' has no descriptors" in body["error"], body
    # nothing was stored; a rule within the caps still is
    assert s.json("GET", "/v1/rules", None, headers, s.admin_port)[2] == {"rules": []}
    ok = "domain: shop\ndescriptors:\n" + "".join(
        f"  - {{key: user, value: u{i}}}\n" for i in range(4000))
    status, _, body = s.json("POST", "/v1/rules", {"id": "ok", "yaml": ok}, headers,
                             s.admin_port)
    assert status == 200, body
    # a domain that denies what is unmatched needs no descriptors
    closed = "domain: closed\non_unmatched: deny\n"
    status, _, body = s.json("POST", "/v1/rules", {"id": "closed", "yaml": closed}, headers,
                             s.admin_port)
    assert status == 200, body
    assert s.json("POST", "/v1/check", {"domain": "closed",
                                        "descriptors": [{"user": "x"}]})[0] == 429
