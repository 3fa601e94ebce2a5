# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_privdrop.py - started as root, sluiced gives up root once its
listeners are bound (server.user), and says so loudly when it is left
running as root. (Run by a user other than root, it keeps its uid and
warns that server.user cannot apply.)"""
import os
import pwd

import redis

from conftest_http import http_sluiced  # noqa: F401 (fixture)


def uids(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return [int(x) for x in line.split()[1:]]
    raise AssertionError("no Uid line")


def test_switches_to_server_user(http_sluiced):
    nobody = pwd.getpwnam("nobody")
    s = http_sluiced(extra="server:\n  user: nobody\n")
    assert redis.Redis(port=s.port).ping()  # serving after the switch
    if os.geteuid() == 0:
        assert uids(s.proc.pid) == [nobody.pw_uid] * 4  # real, effective, saved, fs
        assert "running as nobody" in s.log_text()
    else:
        assert uids(s.proc.pid)[1] == os.geteuid()
        assert "does not run as root" in s.log_text()


def test_warns_when_left_as_root(http_sluiced):
    s = http_sluiced()
    if os.geteuid() == 0:
        assert "RUNNING AS ROOT" in s.log_text()
        assert uids(s.proc.pid)[1] == 0
    else:
        assert "RUNNING AS ROOT" not in s.log_text()


def test_an_unknown_user_stops_the_start(tmp_path):
    import subprocess
    cfg = tmp_path / "c.yaml"
    cfg.write_text("listeners:\n  - {address: 127.0.0.1, port: 0}\n"
                   "server:\n  user: no-such-user-here\n")
    r = subprocess.run([os.environ["SLUICED"], "-c", str(cfg)], capture_output=True, text=True,
                       timeout=20)
    if os.geteuid() == 0:
        assert r.returncode == 1
        assert "server.user: no user 'no-such-user-here'" in r.stderr
