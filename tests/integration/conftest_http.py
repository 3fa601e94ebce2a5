# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""conftest_http.py - start the real sluiced with HTTP/1.1 enabled.

The `http_sluiced` fixture is a factory like conftest's `sluiced`: each call
writes a config whose listener speaks [resp, http1] (or the protocols
given), starts $SLUICED on a
free 127.0.0.1 port (with --test-clock unless told otherwise), waits until
GET /healthz answers, and kills it by PID when the test ends. If the binary
does not speak HTTP (http1 not in its protocol table), the test fails:
nothing is skipped.

The admin endpoints always need a token: unless the test configures one,
sluiced creates admin.token beside its configuration (or rules database),
and the fixture reads it into `admin_headers`. A request made without
explicit headers carries them; a test that gives its own headers gets
those instead. A body carries Content-Type: application/json unless the
headers name another.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import DEFAULT_RULES, START_MS, end_servers, free_port


class HttpSluiced:
    """One running sluiced with an HTTP listener."""

    def __init__(self, tmp_path, rules, test_clock, extra, database=False, admin=False,
                 workers=2, watch=False, rules_extra="", protocols="resp, http1", prefix=()):
        self.dir = tmp_path
        self.port = free_port()
        # admin=True adds a second listener with `admin: true` (self.admin_port)
        self.admin_port = free_port() if admin else None
        self.token = None  # the token sluiced created (admin.token beside the config)
        self.admin_headers = {}  # the created token's, or what a test that sets admin.token puts
        admin_listener = (
            f"""  - address: 127.0.0.1
    port: {self.admin_port}
    protocols: [http1]
    admin: true
""" if admin else "")
        # rules: the text of rules.yaml, or {file name: text} for several files;
        # rules_extra: more lines of the `rules:` section, indented two spaces
        files = rules if isinstance(rules, dict) else {"rules.yaml": rules}
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        config = tmp_path / "sluice.yaml"
        config.write_text(
            f"""listeners:
  - address: 127.0.0.1
    port: {self.port}
    protocols: [{protocols}]
{admin_listener}workers: {workers}
rules:
  files: [{", ".join(files)}]
  watch: {"true" if watch else "false"}
{"  database: rules.db" if database else ""}
{rules_extra}
log:
  level: debug
{extra}
"""
        )
        self.log_path = tmp_path / "sluiced.log"
        # prefix: a command sluiced runs under (it execs the rest)
        args = [*prefix, os.environ["SLUICED"], "-c", str(config)]
        if test_clock:
            args += ["--test-clock", str(START_MS)]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def log_text(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def _wait_ready(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                text = self.log_text()
                raise RuntimeError("sluiced exited early:\n" + text)
            try:
                status, _, _ = self.request("GET", "/healthz")
                if status == 200:
                    self._read_token()
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.02)
        raise RuntimeError("sluiced did not answer GET /healthz:\n" + self.log_text())

    def _read_token(self):
        path = self.dir / "admin.token"  # beside the config and the database alike
        if path.exists():
            self.token = path.read_text().split()[0]
            self.admin_headers = {"Authorization": f"Bearer {self.token}"}

    def conn(self, port=None, timeout=5):
        return http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, port=None, timeout=5):
        """One request on a fresh connection: (status, headers dict, body bytes)."""
        c = self.conn(port, timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            headers = dict(self.admin_headers if headers is None else headers)
            if body is not None and not any(k.lower() == "content-type" for k in headers):
                headers["Content-Type"] = "application/json"
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def json(self, method, path, body=None, headers=None, port=None):
        status, headers, data = self.request(method, path, body, headers, port)
        return status, headers, json.loads(data)

    def raw(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=5)

    def advance(self, ms):
        status, _, body = self.json("POST", "/v1/debug/clock", {"advance_ms": ms},
                                    self.admin_headers, self.admin_port)
        assert status == 200, body
        return body["now_ms"]


@pytest.fixture
def http_sluiced(tmp_path, request):
    started = []

    def start(rules=DEFAULT_RULES, test_clock=True, extra="", database=False, admin=False,
              workers=2, watch=False, rules_extra="", protocols="resp, http1", prefix=()):
        # A port free_port() found free can be taken by another test
        # running at the same time before sluiced binds it: try new ports.
        for attempt in range(3):
            d = tmp_path / f"h{len(started)}-{attempt}"
            d.mkdir()
            try:
                s = HttpSluiced(d, rules, test_clock, extra, database, admin, workers, watch,
                                rules_extra, protocols, prefix)
                break
            except RuntimeError as e:
                if "Address already in use" not in str(e) or attempt == 2:
                    raise
        started.append(s)
        return s

    yield start
    end_servers(request, started)
