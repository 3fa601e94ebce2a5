# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_check_config.py - checking a configuration changes nothing on disk:
`sluiced -t` leaves the directory as it found it: no rules database
created (a missing one is taken as empty, as the daemon would start it),
an existing one untouched, no token file made.
"""
import os
import re
import subprocess

RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
"""

BROKEN_RULES = """\
domain: api
descriptors:
  - key: user
    colour: red
    rate_limit: {unit: fortnight, requests_per_unit: 3}
"""


def config(tmp_path, extra=""):
    (tmp_path / "rules.yaml").write_text(RULES)
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("listeners:\n  - {address: 127.0.0.1, port: 6390, protocols: [resp, http1]}\n"
                   "rules:\n  files: [rules.yaml]\n  database: rules.db\n" + extra)
    return cfg


def snapshot(d):
    """Every file under d: (relative path, size, mtime in ns, bytes)."""
    out = []
    for root, dirs, files in os.walk(d):
        for name in sorted(dirs + files):
            p = os.path.join(root, name)
            st = os.lstat(p)
            data = open(p, "rb").read() if os.path.isfile(p) else b""
            out.append((os.path.relpath(p, d), st.st_size, st.st_mtime_ns, data))
    return sorted(out)


def sluiced_t(cfg):
    return subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                          text=True, timeout=30)


def sluice_check(*args):
    return subprocess.run([os.environ["SLUICE_CLI"], "check", *args], capture_output=True,
                          text=True, timeout=30)


def problems(stderr):
    """The problem lines: all but the program's own verdict line."""
    return [ln for ln in stderr.splitlines() if ln and not re.match(r"^sluiced?: ", ln)]


def test_t_creates_no_rules_database(tmp_path):
    cfg = config(tmp_path)
    before = snapshot(tmp_path)
    r = sluiced_t(cfg)
    assert r.returncode == 0, r.stderr
    assert snapshot(tmp_path) == before, "sluiced -t changed the directory"
    assert not (tmp_path / "rules.db").exists()


def test_t_leaves_an_existing_database_alone(tmp_path):
    cfg = config(tmp_path)
    rule = tmp_path / "db_rule.yaml"
    rule.write_text("domain: dbdom\ndescriptors:\n  - key: user\n    rate_limit:\n"
                    "      unit: minute\n      requests_per_unit: 1\n")
    add = subprocess.run([os.environ["SLUICE_CLI"], "rules", "add", "--db",
                          str(tmp_path / "rules.db"), str(rule)], capture_output=True, text=True)
    assert add.returncode == 0, add.stderr
    before = snapshot(tmp_path)
    r = sluiced_t(cfg)
    assert r.returncode == 0, r.stderr
    assert snapshot(tmp_path) == before


def test_t_creates_no_token_file(tmp_path):
    cfg = config(tmp_path, "admin:\n  token_file: admin.token\n")
    before = snapshot(tmp_path)
    sluiced_t(cfg)  # valid or not, it writes nothing
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "admin.token").exists()
