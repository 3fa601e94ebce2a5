# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_rules_not_regular.py - only regular files are read as rules (or
configuration, or rules database): a FIFO put in a rules file's place is
refused at once on a reload (logged; the old rules keep serving, a later
valid file reloads, SIGTERM still stops the process promptly) instead of
holding the reload, and the shutdown behind it, in open() forever; the
same FIFO refuses a start with a clear message. A Kubernetes ConfigMap's
layout (the file a symlink to `..data/file`, `..data` a symlink to a
timestamped directory, swapped by a rename) is followed and reloads.
"""
import os
import signal
import subprocess

import pytest

from conftest import free_port
from conftest_http import http_sluiced  # noqa: F401 (fixture)
from test_rules_files import check, metrics, reload_and_wait

API = """domain: api
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 2}
"""
API5 = API.replace("requests_per_unit: 2", "requests_per_unit: 5")


def stop_promptly(s):
    """SIGTERM ends the process within a generous bound, with status 0."""
    os.kill(s.proc.pid, signal.SIGTERM)
    try:
        code = s.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGTERM did not stop sluiced:\n" + s.log_text()[-3000:])
    assert code == 0, s.log_text()[-3000:]


def test_fifo_rules_file_is_refused_on_reload(http_sluiced):
    s = http_sluiced(rules=API)
    assert check(s, "api", "user", "u") == (200, 2)
    path = s.dir / "rules.yaml"
    os.remove(path)
    os.mkfifo(path)
    reload_and_wait(s, "sluice_reload_failures_total")
    log = s.log_text()
    assert "rules.yaml:1:1: cannot open rules file: not a regular file" in log, log[-3000:]
    assert "rules: reload on SIGHUP failed; the previous rules keep serving" in log
    # the old rules, with their state, still decide
    assert check(s, "api", "user", "u") == (200, 2)
    assert check(s, "api", "user", "u")[0] == 429
    # a second HUP is not lost behind a stuck one: it fails the same way
    reload_and_wait(s, "sluice_reload_failures_total")
    # a valid file again reloads
    os.remove(path)
    path.write_text(API5)
    reload_and_wait(s, "sluice_reloads_total")
    assert check(s, "api", "user", "v") == (200, 5)
    # and a FIFO left in place never holds the shutdown
    os.remove(path)
    os.mkfifo(path)
    os.kill(s.proc.pid, signal.SIGHUP)
    stop_promptly(s)


def test_sigterm_right_after_a_hup_on_a_fifo(http_sluiced):
    s = http_sluiced(rules=API)
    path = s.dir / "rules.yaml"
    os.remove(path)
    os.mkfifo(path)
    os.kill(s.proc.pid, signal.SIGHUP)
    stop_promptly(s)


def test_fifo_rules_database_is_refused(http_sluiced):
    s = http_sluiced(rules=API, database=True)
    db = s.dir / "rules.db"
    assert db.exists()
    os.remove(db)
    os.mkfifo(db)
    reload_and_wait(s, "sluice_reload_failures_total")
    assert "rules.db: rules database: not a regular file" in s.log_text(), s.log_text()[-3000:]
    assert check(s, "api", "user", "u") == (200, 2)
    stop_promptly(s)


def start_raw(tmp_path, rules_name="rules.yaml", config_name="sluice.yaml"):
    """sluiced on a configuration that may not be startable: (exit code or
    None when still running after 10 s, output)."""
    config = tmp_path / config_name
    if not config.exists():
        config.write_text(f"""listeners:
  - address: 127.0.0.1
    port: {free_port()}
    protocols: [http1]
rules:
  files: [{rules_name}]
""")
    proc = subprocess.Popen([os.environ["SLUICED"], "-c", str(config)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(timeout=10)
        return proc.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return None, out.decode(errors="replace")


def test_fifo_rules_file_refuses_a_start(tmp_path):
    os.mkfifo(tmp_path / "rules.yaml")
    code, out = start_raw(tmp_path)
    assert code not in (None, 0), out
    assert "rules.yaml:1:1: cannot open rules file: not a regular file" in out, out


def test_directory_rules_file_refuses_a_start(tmp_path):
    (tmp_path / "rules.yaml").mkdir()
    code, out = start_raw(tmp_path)
    assert code not in (None, 0), out
    assert "not a regular file" in out, out


def test_fifo_configuration_refuses_a_start(tmp_path):
    os.mkfifo(tmp_path / "sluice.yaml")
    code, out = start_raw(tmp_path)
    assert code not in (None, 0), out
    assert "sluice.yaml: cannot open: not a regular file" in out, out


def configmap(dir, version, text):
    """Kubernetes' layout: dir/..<version>/rules.yaml, dir/..data pointing
    at it (swapped by renaming a new link over it), dir/rules.yaml ->
    ..data/rules.yaml."""
    d = dir / f"..{version}"
    d.mkdir()
    (d / "rules.yaml").write_text(text)
    tmp = dir / "..data_tmp"
    os.symlink(d.name, tmp)
    os.rename(tmp, dir / "..data")


def test_configmap_symlinks_reload(http_sluiced):
    s = http_sluiced(rules=API)
    assert check(s, "api", "user", "u") == (200, 2)
    configmap(s.dir, "2024_01_01", API)
    os.remove(s.dir / "rules.yaml")
    os.symlink("..data/rules.yaml", s.dir / "rules.yaml")
    reload_and_wait(s, "sluice_reloads_total")
    assert check(s, "api", "user", "u") == (200, 2)  # same limit: its state kept
    assert check(s, "api", "user", "u")[0] == 429
    configmap(s.dir, "2024_01_02", API5)
    reload_and_wait(s, "sluice_reloads_total")
    assert check(s, "api", "user", "w") == (200, 5)
    assert metrics(s).get("sluice_reload_failures_total", 0) == 0, s.log_text()[-3000:]


@pytest.mark.parametrize("target", ["fifo", "dir"])
def test_symlink_to_a_non_regular_file_is_refused(http_sluiced, target):
    s = http_sluiced(rules=API)
    other = s.dir / "other"
    if target == "fifo":
        os.mkfifo(other)
    else:
        other.mkdir()
    os.remove(s.dir / "rules.yaml")
    os.symlink("other", s.dir / "rules.yaml")
    reload_and_wait(s, "sluice_reload_failures_total")
    assert "cannot open rules file: not a regular file" in s.log_text(), s.log_text()[-3000:]
    assert check(s, "api", "user", "u") == (200, 2)
    stop_promptly(s)


def test_admin_token_fifo_refuses_a_start(tmp_path):
    os.mkfifo(tmp_path / "admin.token")
    (tmp_path / "rules.yaml").write_text(API)
    (tmp_path / "sluice.yaml").write_text(f"""listeners:
  - address: 127.0.0.1
    port: {free_port()}
    protocols: [http1]
    admin: true
rules:
  files: [rules.yaml]
""")
    code, out = start_raw(tmp_path)
    assert code not in (None, 0), out
    assert "admin.token: admin.token_file: not a regular file" in out, out

