# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_rules_files.py - what a reload makes of a rules file that is empty,
truncated, deleted or still being written: an emptied or truncated file is
refused (logged at error; the old rules, and their state, keep serving)
unless rules.allow_empty; a deleted file that stays absent past the
debounce takes its domains away (logged at warn) and one recreated within
it changes nothing; a file written slowly is never loaded half-way.
"""
import os
import signal
import time

import pytest

from conftest import wait_for
from conftest_http import http_sluiced  # noqa: F401 (fixture)

API = """domain: api
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 2}
"""
JOBS = """domain: jobs
descriptors:
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 1}
"""


def metrics(s):
    """The unlabelled samples of /metrics, by name."""
    status, _, body = s.request("GET", "/metrics")
    assert status == 200
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.split()
            out[name] = float(value)
    return out


def check(s, domain, key, value):
    """(status, quota of the descriptor's limit or None)."""
    status, _, body = s.json("POST", "/v1/check", {"domain": domain,
                                                   "descriptors": [{key: value}]})
    st = body["statuses"][0]
    return status, (st["quota"] if st["limit"] is not None else None)


def reload_and_wait(s, counter):
    """SIGHUP, then wait until `counter` (a /metrics name) has grown."""
    before = metrics(s).get(counter, 0)
    os.kill(s.proc.pid, signal.SIGHUP)
    assert wait_for(lambda: metrics(s).get(counter, 0) > before, timeout=30), s.log_text()[-3000:]


@pytest.mark.parametrize("text", ["", "# every rule commented out\n", "---\n", "domain: api\n",
                                  "domain: api\ndescriptors:\n"])
def test_emptied_or_truncated_file_is_refused(http_sluiced, text):
    s = http_sluiced(rules=API)
    assert check(s, "api", "user", "u") == (200, 2)
    (s.dir / "rules.yaml").write_text(text)
    reload_and_wait(s, "sluice_reload_failures_total")
    log = s.log_text()
    assert "error rules: reload on SIGHUP failed; the previous rules keep serving" in log
    assert ("holds no rules (empty or truncated?)" in log
            or "domain 'api' has no descriptors (truncated?)" in log), log[-2000:]
    assert metrics(s)["sluice_reloads_total"] == 0
    # the old rules, and the state they had, keep serving
    assert check(s, "api", "user", "u") == (200, 2)
    assert check(s, "api", "user", "u")[0] == 429


def test_allow_empty_takes_an_empty_file(http_sluiced):
    s = http_sluiced(rules=API, rules_extra="  allow_empty: true")
    (s.dir / "rules.yaml").write_text("")
    reload_and_wait(s, "sluice_reloads_total")
    assert "rules.yaml holds no rules (allowed by rules.allow_empty)" in s.log_text()
    assert check(s, "api", "user", "u") == (200, None)  # no rules: allowed, no limit


def test_start_refuses_an_empty_file(http_sluiced):
    with pytest.raises(RuntimeError, match=r"rules\.yaml:1:1: the rules file holds no rules"):
        http_sluiced(rules="")


def test_a_domain_that_denies_the_unmatched_may_have_no_descriptors(http_sluiced):
    # not a truncated file: with on_unmatched: deny it denies every request,
    # it lifts no limit
    s = http_sluiced(rules=API + "---\ndomain: closed\non_unmatched: deny\n")
    assert check(s, "closed", "user", "u")[0] == 429
    (s.dir / "rules.yaml").write_text(API + "---\ndomain: closed\n")  # cut before on_unmatched
    reload_and_wait(s, "sluice_reload_failures_total")
    assert "domain 'closed' has no descriptors (truncated?)" in s.log_text()
    assert check(s, "closed", "user", "u")[0] == 429


def test_deleted_file_removes_its_domains(http_sluiced):
    s = http_sluiced(rules={"rules.yaml": API, "jobs.yaml": JOBS}, rules_extra="  debounce: 100ms")
    assert check(s, "jobs", "tenant", "t") == (200, 1)
    assert check(s, "api", "user", "u") == (200, 2)
    os.remove(s.dir / "jobs.yaml")
    reload_and_wait(s, "sluice_reloads_total")
    log = s.log_text()
    assert "warn rules: " in log and "jobs.yaml is gone (absent for longer than rules.debounce)" \
        in log, log[-2000:]
    assert metrics(s)["sluice_reload_failures_total"] == 0
    assert check(s, "jobs", "tenant", "t") == (200, None)  # its domain is gone
    # the other file's limit stays, with its state (one of two requests used)
    assert check(s, "api", "user", "u") == (200, 2)
    assert check(s, "api", "user", "u")[0] == 429


def test_file_recreated_within_the_debounce_stays(http_sluiced):
    s = http_sluiced(rules={"rules.yaml": API, "jobs.yaml": JOBS}, rules_extra="  debounce: 1s")
    assert check(s, "jobs", "tenant", "t") == (200, 1)
    os.remove(s.dir / "jobs.yaml")  # an editor saving by delete and create
    before = metrics(s)["sluice_reloads_total"]
    os.kill(s.proc.pid, signal.SIGHUP)
    time.sleep(0.2)
    (s.dir / "jobs.yaml").write_text(JOBS)
    assert wait_for(lambda: metrics(s)["sluice_reloads_total"] > before, timeout=30), \
        s.log_text()[-3000:]
    assert "is gone" not in s.log_text()
    assert metrics(s)["sluice_reload_failures_total"] == 0
    assert check(s, "jobs", "tenant", "t")[0] == 429  # still limited, state kept


def slow_rules(n):
    """A rules text and the pieces to write it in, each ending inside a
    flow mapping, so that no prefix at a piece's end is valid YAML."""
    text = "domain: api\ndescriptors:\n" + "".join(
        f"  - {{key: user, value: u{i}, rate_limit: {{unit: hour, requests_per_unit: 2}}}}\n"
        for i in range(n))
    cuts, at = [], 0
    while True:
        at = text.find("unit: hour", at + 1)
        if at < 0:
            break
        cuts.append(at)
    pieces, prev = [], 0
    for c in cuts:
        pieces.append(text[prev:c])
        prev = c
    pieces.append(text[prev:])
    return text, pieces


def test_slow_writer_is_not_read_half_way(http_sluiced):
    s = http_sluiced(rules=API, watch=True, rules_extra="  debounce: 400ms")
    text, pieces = slow_rules(20)
    # About 20 pieces 80 ms apart: the write takes 4 debounces, and the
    # writer may be descheduled for 300 ms without a gap as long as one.
    with open(s.dir / "rules.yaml", "w") as f:
        for p in pieces:
            f.write(p)
            f.flush()
            time.sleep(0.08)
    # Settled: the last change has been loaded and no reload is waiting.
    assert wait_for(lambda: check(s, "api", "user", "u19")[1] == 2, timeout=30), \
        s.log_text()[-3000:]
    time.sleep(0.5)
    m = metrics(s)
    log = s.log_text()
    assert m["sluice_reload_failures_total"] == 0, log[-3000:]
    assert m["sluice_reloads_total"] >= 1
    reloaded = [line for line in log.splitlines() if "rules: reloaded on file change" in line]
    assert reloaded and all(": 1 domains, 20 descriptors" in line for line in reloaded), log[-3000:]
