# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""The daemon's life: reload on SIGHUP and on a file change, a broken rules
file keeping the old rules (and saying file:line:col), `sluiced -t`, and
SIGTERM exiting 0 after in-flight replies are flushed."""
import os
import re
import signal
import subprocess

import pytest

from conftest import DEFAULT_RULES, recv_until, wait_for

ONE_PER_MINUTE = DEFAULT_RULES.replace("requests_per_unit: 3", "requests_per_unit: 1")


def quota(s, user="q"):
    """The per-user quota now in force, as SL.PEEK reports it."""
    return s.client().execute_command("SL.PEEK", "api", "user", user)[2][0][2]


def test_reload_on_sighup(sluiced):
    s = sluiced(watch=False)
    assert quota(s) == 3
    s.rules_path.write_text(ONE_PER_MINUTE)
    assert quota(s) == 3  # not watched: nothing changes until the signal
    s.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: quota(s) == 1)
    assert "reloaded on SIGHUP" in s.log_text()


def test_reload_on_file_change(sluiced):
    s = sluiced(watch=True)
    assert quota(s) == 3
    s.rules_path.write_text(ONE_PER_MINUTE)
    assert wait_for(lambda: quota(s) == 1)


def test_reload_on_file_replaced_by_rename(sluiced):
    s = sluiced(watch=True)
    tmp = s.dir / "rules.yaml.tmp"
    tmp.write_text(ONE_PER_MINUTE)
    os.rename(tmp, s.rules_path)  # what editors and config managers do
    assert wait_for(lambda: quota(s) == 1)


def test_broken_rules_keep_the_old_ones(sluiced):
    s = sluiced(watch=False)
    c = s.client()
    c.execute_command("SL.CHECK", "api", 1, "user", "keep")
    s.rules_path.write_text(DEFAULT_RULES.replace("requests_per_unit: 3", "requests_per_unit: x"))
    s.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: "reload on SIGHUP failed" in s.log_text())
    log = s.log_text()
    assert re.search(re.escape(str(s.rules_path)) + r":\d+:\d+: ", log), log
    # old rules, and their state, keep serving
    assert quota(s) == 3
    assert c.execute_command("SL.PEEK", "api", "user", "keep")[2][0][3] == 2
    # a fixed file is picked up by the next reload
    s.rules_path.write_text(ONE_PER_MINUTE)
    s.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: quota(s) == 1)


def test_sigterm_exits_zero_after_flushing(sluiced):
    s = sluiced()
    with s.raw() as sock:
        sock.sendall(b"PING\r\n" * 1000)
        data = recv_until(sock, lambda d: d.count(b"+PONG") == 1000)
        assert data.count(b"+PONG") == 1000
        assert s.stop(signal.SIGTERM) == 0
        assert recv_until(sock, lambda d: False) == b""  # closed cleanly
    assert "stopped" in s.log_text()


def test_second_sluiced_on_the_same_port_refuses_to_start(sluiced):
    s = sluiced()
    twin = subprocess.run([os.environ["SLUICED"], "-c", str(s.config_path)], capture_output=True,
                          text=True, timeout=10)
    assert twin.returncode == 1
    assert f"127.0.0.1:{s.port}: Address already in use" in twin.stderr
    assert s.client().ping() is True


def test_sigint_exits_zero(sluiced):
    s = sluiced()
    assert s.stop(signal.SIGINT) == 0


def test_check_config(sluiced, tmp_path):
    s = sluiced()
    ok = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(s.config_path)],
                        capture_output=True, text=True, timeout=10)
    assert ok.returncode == 0, ok.stderr
    s.rules_path.write_text("domain: api\ndescriptors:\n  - key: user\n    bogus: 1\n")
    bad = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(s.config_path)],
                         capture_output=True, text=True, timeout=10)
    assert bad.returncode == 1
    assert re.search(re.escape(str(s.rules_path)) + r":4:5: ", bad.stderr), bad.stderr
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("server:\n  max_connections: lots\n")
    bad = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                         text=True, timeout=10)
    assert bad.returncode == 1
    assert f"{cfg}:2:20: server.max_connections must be a whole number" in bad.stderr


def test_help_lists_every_key():
    out = subprocess.run([os.environ["SLUICED"], "--help"], capture_output=True, text=True,
                         timeout=10)
    assert out.returncode == 0
    for key in ["listeners", "workers", "rules.files", "rules.database", "store.type",
                "server.max_connections", "server.max_frame_bytes", "server.idle_timeout",
                "server.read_timeout", "log.level", "--test-clock", "-t"]:
        assert key in out.stdout



def test_rules_database_merged_on_reload(sluiced):
    assert os.environ.get("SLUICE_CLI"), "the sluice CLI was not built (SLUICE_CLI unset)"
    s = sluiced(database=True)
    c = s.client()
    peek = lambda: c.execute_command("SL.PEEK", "dbdom", "user", "u")[2][0]
    assert peek()[1] is None  # no rule for this domain yet
    rule = s.dir / "db_rule.yaml"
    rule.write_text("domain: dbdom\ndescriptors:\n  - key: user\n    rate_limit:\n"
                    "      unit: minute\n      requests_per_unit: 1\n")
    add = subprocess.run([os.environ["SLUICE_CLI"], "rules", "add", "--db", str(s.db_path),
                          str(rule)], capture_output=True, text=True, timeout=10)
    assert add.returncode == 0, add.stderr
    s.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: peek()[1] is not None)
    assert peek()[2] == 1
    assert quota(s) == 3  # the files' rules are still there
