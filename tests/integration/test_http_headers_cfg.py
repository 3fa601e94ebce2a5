# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_headers_cfg.py - http.headers selects the rate-limit header
families sent on check answers; a bad family name refuses to start."""
import subprocess
import os

from conftest_http import http_sluiced  # noqa: F401 (fixture)

CHECK = {"domain": "api", "descriptors": [{"user": "hdr"}]}
IETF = {"ratelimit-policy", "ratelimit"}
X = {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"}


def deny(s):
    for _ in range(3):
        s.json("POST", "/v1/check", CHECK)
    status, headers, _ = s.json("POST", "/v1/check", CHECK)
    assert status == 429
    return set(headers)


def test_default_sends_every_family(http_sluiced):
    h = deny(http_sluiced())
    assert IETF | X | {"retry-after"} <= h


def test_only_ietf(http_sluiced):
    h = deny(http_sluiced(extra="http:\n  headers: [ietf]\n"))
    assert IETF <= h and not (X & h) and "retry-after" not in h


def test_x_and_retry_after(http_sluiced):
    h = deny(http_sluiced(extra="http:\n  headers: [x-ratelimit, retry-after]\n"))
    assert X <= h and "retry-after" in h and not (IETF & h)


def test_none(http_sluiced):
    s = http_sluiced(extra="http:\n  headers: [none]\n")
    h = deny(s)
    assert not ((IETF | X | {"retry-after"}) & h)
    assert s.json("GET", "/v1/config")[2]["http"]["headers"] == []


def test_unknown_family_is_a_config_error(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("http:\n  headers: [ietf, x-rate]\n")
    p = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 1
    assert "bad.yaml:2:" in p.stderr + p.stdout and "x-rate" in p.stderr + p.stdout
