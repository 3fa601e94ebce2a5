# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_check_config.py - checking a configuration changes nothing on disk,
and `sluice check -c` says what `sluiced -t` says.

- `sluiced -t` leaves the directory as it found it: no rules database
  created (a missing one is taken as empty, as the daemon would start it),
  an existing one untouched, no token file made;
- `sluice check -c sluice.yaml` checks the daemon's configuration and
  every rules file it names, with the very lines `sluiced -t` prints (the
  two run one check), and writes nothing either.
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
    """The problem lines: all but the program's own verdict line, log lines
    (the admin token's) without their time."""
    return [re.sub(r"^\d{4}-\d\d-\d\dT[\d:.]+Z ", "", ln) for ln in stderr.splitlines()
            if ln and not re.match(r"^sluiced?: ", ln)]


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


def test_check_c_accepts_a_valid_configuration(tmp_path):
    cfg = config(tmp_path)
    before = snapshot(tmp_path)
    r = sluice_check("-c", str(cfg))
    assert r.returncode == 0, r.stderr
    assert "ok: configuration" in r.stdout
    assert snapshot(tmp_path) == before, "sluice check -c changed the directory"


def test_check_c_says_what_sluiced_t_says_about_rules(tmp_path):
    cfg = config(tmp_path)
    (tmp_path / "rules.yaml").write_text(BROKEN_RULES)
    a, b = sluiced_t(cfg), sluice_check("-c", str(cfg))
    assert a.returncode == b.returncode == 1, (a.stderr, b.stderr)
    want = [f"{tmp_path}/rules.yaml:4:5: unknown key 'colour'",
            f"{tmp_path}/rules.yaml:5:24: invalid unit 'fortnight'"]
    for w in want:
        assert any(ln.startswith(w) for ln in problems(a.stderr)), a.stderr
    assert problems(a.stderr) == problems(b.stderr), (a.stderr, b.stderr)
    assert "is NOT valid" in b.stderr


def test_check_c_says_what_sluiced_t_says_about_the_file(tmp_path):
    cfg = config(tmp_path, "server:\n  max_connections: lots\n  colour: blue\n")
    a, b = sluiced_t(cfg), sluice_check("-c", str(cfg))
    assert a.returncode == b.returncode == 1
    assert problems(a.stderr) == problems(b.stderr) == [
        f"{cfg}:7:20: server.max_connections must be a whole number from 0 to 16777216 "
        "(got 'lots')",
        f"{cfg}:8:3: unknown key 'server.colour' (sluiced --help lists them)"]


def test_check_c_usage(tmp_path):
    r = sluice_check("-c")
    assert r.returncode == 2 and r.stderr.startswith("sluice check: missing FILE after -c")
    r = sluice_check("-c", str(config(tmp_path)), str(tmp_path / "rules.yaml"))
    assert r.returncode == 2 and "not both" in r.stderr
