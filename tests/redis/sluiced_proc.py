# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""sluiced_proc.py - a real sluiced process for the end-to-end tests of the
Redis store (tests/redis/test_daemon_redis.py) and of Redis Cluster
(tests/redis_cluster/test_cluster_daemon.py).

SluicedProc writes a configuration with one RESP and one HTTP listener on
free 127.0.0.1 ports, the given `store:` section and rules file, starts
$SLUICED with the test clock, waits until it is ready (/readyz says
"ready": the store decides with its own state, not "degraded") and is
stopped by PID (SIGTERM) at the end. Its admin token is created in
NAME.token beside the configuration (admin_headers() sends it). It asserts
nothing about Redis.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import redis

# free_port is tests/integration's (never the same port twice in a run), and
# so is RedisServer (a redis-server started again when its port was taken)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "integration"))
from conftest import RedisServer, free_port  # noqa: E402,F401

SLUICED = os.environ.get("SLUICED", "sluiced")
START_MS = 1_700_000_000_000


def wait_until(pred, seconds=5.0, step=0.02):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


class SluicedProc:
    def __init__(self, tmp_path, name, store_yaml, rules_text, workers=1, rules_extra="",
                 log_level="warn", wait_ready=True, extra_yaml=""):
        """store_yaml: the lines under `store:` (indented by two spaces);
        rules_extra: more lines under `rules:` (e.g. a database);
        wait_ready: wait for "ready" (else only for an answer to PING);
        extra_yaml: more top-level lines (e.g. an `http:` section)."""
        self.name, self.tmp = name, tmp_path
        self.port, self.http = free_port(), free_port()
        (tmp_path / "rules.yaml").write_text(rules_text)
        self.cfg = tmp_path / f"{name}.yaml"
        self.cfg.write_text(f"""listeners:
  - {{address: 127.0.0.1, port: {self.port}, protocols: [resp]}}
  - {{address: 127.0.0.1, port: {self.http}, protocols: [http1]}}
workers: {workers}
rules:
  files: [rules.yaml]{rules_extra}
store:
{store_yaml}log: {{level: {log_level}}}
admin: {{token_file: {name}.token}}
{extra_yaml}""")
        self.start(wait_ready)

    def start(self, wait_ready=True, seconds=15):
        self.log = open(self.tmp / f"{self.name}.log", "a")
        self.proc = subprocess.Popen([SLUICED, "-c", str(self.cfg), "--test-clock",
                                      str(START_MS)], stderr=self.log)
        self.client = redis.Redis(port=self.port, socket_timeout=5)
        pred = self.ready if wait_ready else self.alive
        assert wait_until(pred, seconds), f"sluiced {self.name} did not start"

    def admin_headers(self):
        """What an admin request carries: the token sluiced created, JSON."""
        token = (self.tmp / f"{self.name}.token").read_text().split()[0]
        return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def alive(self):
        try:
            return self.client.ping()
        except redis.RedisError:
            return False

    def readyz(self):
        """(status, body) of GET /readyz; (None, "") when it cannot be asked."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/readyz", timeout=1) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except Exception:
            return None, ""

    def ready(self):
        """The store decides with its own state (200 "ready", not "degraded")."""
        status, body = self.readyz()
        return status == 200 and body == "ready\n"

    def get(self, path):
        """(status, body) of GET path on the HTTP listener."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def log_text(self):
        """What sluiced wrote to stderr so far (also once it is stopped)."""
        return (self.tmp / f"{self.name}.log").read_text()

    def metric(self, name):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        raise AssertionError(f"{name} not in /metrics")

    def post(self, path, doc):
        """(status, parsed JSON body) of POST path with a JSON body."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}", method="POST",
                                     data=json.dumps(doc).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def check(self, domain, key, value, hits=1):
        return self.client.execute_command("SL.CHECK", domain, hits, key, value)[0].decode()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.log.close()
