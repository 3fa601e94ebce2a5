# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_resp_admin.py - state-changing operator commands need the admin
privilege on RESP as on HTTP.

SL.RESET (a client could unblock itself with it) and SL.DEBUG (the test
clock) run only on a listener that serves the admin endpoints, after AUTH
with the admin token - the configured one, or the one sluiced created in
admin.token when none is configured. A client on the public listener gets
NOPERM whatever it sends; a wrong AUTH is WRONGPASS.
"""
import os
import signal
import subprocess
import time

import pytest
import redis

from conftest import START_MS, free_port

RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


class Daemon:
    def __init__(self, tmp_path, token):
        self.public, self.admin = free_port(), free_port()
        (tmp_path / "rules.yaml").write_text(RULES)
        token_line = f"admin:\n  token: {token}\n" if token else ""
        cfg = tmp_path / "sluice.yaml"
        cfg.write_text(f"""listeners:
  - {{address: 127.0.0.1, port: {self.public}, protocols: [resp]}}
  - {{address: 127.0.0.1, port: {self.admin}, protocols: [resp], admin: true}}
workers: 1
rules: {{files: [rules.yaml], watch: false}}
{token_line}""")
        self.proc = subprocess.Popen([os.environ["SLUICED"], "-c", str(cfg), "--test-clock",
                                      str(START_MS)], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.admin).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError("sluiced did not start")

    def stop(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@pytest.fixture
def daemon(tmp_path):
    started = []

    def start(token=None):
        d = Daemon(tmp_path, token)
        started.append(d)
        return d
    yield start
    for d in started:
        d.stop()


def blocked(r):
    r.execute_command("SL.CHECK", "api", 1, "user", "mallory")
    return r.execute_command("SL.CHECK", "api", 1, "user", "mallory")[0] == b"deny"


def test_a_public_client_cannot_reset_itself(daemon):
    d = daemon(token="s3cret")
    pub = redis.Redis(port=d.public)
    assert blocked(pub)
    with pytest.raises(redis.ResponseError, match="admin privilege"):
        pub.execute_command("SL.RESET", "api", "user", "mallory")
    # not even with the right token: the public listener never serves admin work
    assert pub.execute_command("AUTH", "s3cret") in (b"OK", True)
    with pytest.raises(redis.ResponseError, match="admin privilege"):
        pub.execute_command("SL.RESET", "api", "user", "mallory")
    with pytest.raises(redis.ResponseError, match="admin privilege"):
        pub.execute_command("SL.DEBUG", "CLOCK", "ADVANCE", 60000)
    assert pub.execute_command("SL.CHECK", "api", 1, "user", "mallory")[0] == b"deny"


def test_the_admin_listener_needs_the_token(daemon):
    d = daemon(token="s3cret")
    adm = redis.Redis(port=d.admin)
    assert blocked(adm)
    with pytest.raises(redis.ResponseError, match="admin privilege"):
        adm.execute_command("SL.RESET", "api", "user", "mallory")
    with pytest.raises(redis.ResponseError, match="invalid username-password"):
        adm.execute_command("AUTH", "guess")
    with pytest.raises(redis.ResponseError, match="admin privilege"):
        adm.execute_command("SL.RESET", "api", "user", "mallory")
    assert adm.execute_command("AUTH", "default", "s3cret") in (b"OK", True)
    reply = adm.execute_command("SL.RESET", "api", "user", "mallory")
    assert reply[2][0][3] == 1  # fresh: 1 left
    assert adm.execute_command("SL.CHECK", "api", 1, "user", "mallory")[0] == b"allow"
    # a client library's HELLO ... AUTH form works too, and a wrong one is refused
    adm2 = redis.Redis(port=d.admin)
    with pytest.raises(redis.ResponseError, match="invalid username-password"):
        adm2.execute_command("HELLO", "2", "AUTH", "default", "nope")
    adm2.execute_command("HELLO", "2", "AUTH", "default", "s3cret")
    assert adm2.execute_command("SL.DEBUG", "CLOCK", "GET") == START_MS


def test_without_a_configured_token_the_created_one_is_needed(tmp_path, daemon):
    d = daemon(token=None)
    token = (tmp_path / "admin.token").read_text().split()[0]
    assert len(token) == 64
    pub, adm = redis.Redis(port=d.public), redis.Redis(port=d.admin)
    assert blocked(pub)
    # no token configured is no open door: the admin listener still wants AUTH
    with pytest.raises(redis.ResponseError, match="admin privilege"):
        adm.execute_command("SL.RESET", "api", "user", "mallory")
    assert pub.execute_command("AUTH", token) in (b"OK", True)
    with pytest.raises(redis.ResponseError, match="admin privilege"):
        pub.execute_command("SL.RESET", "api", "user", "mallory")
    assert adm.execute_command("AUTH", token) in (b"OK", True)
    adm.execute_command("SL.RESET", "api", "user", "mallory")
    assert pub.execute_command("SL.CHECK", "api", 1, "user", "mallory")[0] == b"allow"
