# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""conftest.py - start the real sluiced for integration tests.

The `sluiced` fixture is a factory: each call writes a temporary config and
rules file, starts $SLUICED on a free 127.0.0.1 port with --test-clock,
waits until it answers PING, and kills it by PID when the test ends. Tests
never sleep to wait for a window: they move the test clock.
"""
import os
import signal
import socket
import subprocess
import time

import pytest
import redis

START_MS = 1_700_000_000_000  # a fixed, realistic Unix time for the test clock

DEFAULT_RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: path
    limits:
      - name: path_bucket
        algorithm: token_bucket
        requests: 1
        period: 1s
        burst: 5
---
domain: jobs
descriptors:
  - key: tenant
    limits:
      - name: jobs_in_flight
        algorithm: concurrency
        requests: 2
        lease: 30s
"""


_handed_out = set()


def free_port():
    """A port free now, and never one this process handed out before: two
    drawn for one configuration (a main and an admin listener) would
    otherwise often be the same, the kernel giving a just-closed port
    again."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port


class PortTaken(Exception):
    pass


class RedisServer:
    """A redis-server on 127.0.0.1 without persistence, killed by PID in
    stop(): on `port`, or on a free one. A free port can be taken by a
    parallel test before redis-server binds it; redis-server then exits,
    and it is started again on another (not when the port was given: a
    restart on the same one). `args` are added to its command line, `env`
    is its environment. With `tls` (tests/redis/redis_tls.py's TlsFiles)
    it serves only TLS, on `port` (`--port 0 --tls-port`), and its clients
    (self.client, the probe) speak TLS with the client certificate;
    `username` is the ACL user they log in as (with `password`; `args`
    then define the users, `--requirepass` is not given)."""

    def __init__(self, port=None, args=(), env=None, password=None, logfile="/dev/null",
                 seconds=5, socket_timeout=None, tls=None, username=None):
        self.tls = tls
        for _ in range(5):
            self.port = port or free_port()
            listen = (["--port", "0", "--tls-port", str(self.port)] + tls.server_args()
                      if tls else ["--port", str(self.port)])
            self.proc = subprocess.Popen(
                ["redis-server"] + listen + ["--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--logfile", str(logfile).replace("{port}", str(self.port))]
                + list(args) + (["--requirepass", password] if password and not username else []),
                env=env)
            self.client = self.connect(username=username, password=password,
                                       socket_timeout=socket_timeout)
            # the probe never waits long: what answers on a taken port may
            # be anything, and may never answer
            self._probe = self.connect(username=username, password=password, socket_timeout=1,
                                       socket_connect_timeout=1)
            wait_for(lambda: self.proc.poll() is not None or self._up(), seconds)
            if self.proc.poll() is None and self._up():
                return
            self.stop()
            if port:
                break
        raise AssertionError("redis-server did not start")

    def connect(self, **kw):
        """A redis-py client of this server (TLS with the client
        certificate when it serves TLS)."""
        return redis.Redis(port=self.port, **(self.tls.client_kwargs() if self.tls else {}), **kw)

    def _up(self):
        try:
            return self._probe.ping()
        except redis.RedisError:
            return False

    def stop(self):
        """Kill it (resumed first, if a test froze it with SIGSTOP)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


class Sluiced:
    """One running sluiced: its port, files, log, and helpers."""

    def __init__(self, tmp_path, rules, watch, test_clock, extra, database):
        # A free port can be taken by a parallel test before sluiced binds
        # it; sluiced then refuses to start, and we try another port.
        for attempt in range(5):
            try:
                self._start(tmp_path, rules, watch, test_clock, extra, database)
                return
            except PortTaken:
                self.log.close()
        raise RuntimeError("no free port after 5 attempts")

    def _start(self, tmp_path, rules, watch, test_clock, extra, database):
        self.dir = tmp_path
        self.port = free_port()
        self.rules_path = tmp_path / "rules.yaml"
        self.rules_path.write_text(rules)
        self.db_path = tmp_path / "rules.db"
        db_line = f"\n  database: {self.db_path.name}" if database else ""
        self.config_path = tmp_path / "sluice.yaml"
        self.config_path.write_text(
            f"""listeners:
  - address: 127.0.0.1
    port: {self.port}
    protocols: [resp]
workers: 2
rules:
  files: [rules.yaml]
  watch: {'true' if watch else 'false'}
  debounce: 50ms{db_line}
log:
  level: debug
{extra}
"""
        )
        self.log_path = tmp_path / "sluiced.log"
        args = [os.environ["SLUICED"], "-c", str(self.config_path)]
        if test_clock:
            args += ["--test-clock", str(START_MS)]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "Address already in use" in self.log_text():
                    raise PortTaken()
                raise RuntimeError("sluiced exited early:\n" + self.log_text())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("sluiced did not become ready:\n" + self.log_text())

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5, **kw)

    def raw(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        return s

    def admin_client(self, **kw):
        """A client holding the admin privilege: AUTH with the token sluiced
        created beside its configuration (no test here configures one)."""
        token = (self.config_path.parent / "admin.token").read_text().split()[0]
        return self.client(password=token, **kw)

    def advance(self, ms):
        return self.admin_client().execute_command("SL.DEBUG", "CLOCK", "ADVANCE", ms)

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item: the fixtures' teardown
    (end_servers) shows the servers' logs only when the test failed."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


CRASH_SIGNALS = (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)


def end_servers(request, servers, stop=None):
    """Teardown of a fixture that started sluiced processes (anything with
    .proc, .log_path and .log): stop those still running by PID (stop(s),
    or SIGKILL; a crash signal while stopping counts too); print the
    end of each log when the test failed (pytest shows it with the failure:
    a test that saw a reset connection then tells whether the server
    crashed); fail the test when one died of a crash signal on its own (a
    sanitizer's abort, a segfault), which the test itself may not notice."""
    rep = getattr(request.node, "rep_call", None)
    failed = rep is not None and rep.failed
    crashed = []
    for s in servers:
        if s.proc.poll() is None:
            if stop is not None:
                stop(s)
            else:
                os.kill(s.proc.pid, signal.SIGKILL)
            s.proc.wait()
        died = s.proc.returncode
        if died < 0 and -died in CRASH_SIGNALS:
            crashed.append(s)
        if not s.log.closed:
            s.log.flush()
            s.log.close()
        if failed or s in crashed:
            tail = s.log_path.read_text(errors="replace").splitlines()[-60:]
            print(f"--- end of {s.log_path} (exit {s.proc.returncode}) ---")
            print("\n".join(tail))
    if crashed:
        pytest.fail("sluiced died of signal %s during the test (log above)"
                    % ", ".join(signal.Signals(-s.proc.returncode).name for s in crashed))


@pytest.fixture
def sluiced(tmp_path, request):
    started = []

    def start(rules=DEFAULT_RULES, watch=False, test_clock=True, extra="", database=False):
        d = tmp_path / f"s{len(started)}"
        d.mkdir()
        s = Sluiced(d, rules, watch, test_clock, extra, database)
        started.append(s)
        return s

    yield start
    end_servers(request, started)


def recv_until(sock, pred, timeout=5):
    """Read from sock until pred(data) is true or the peer closes."""
    sock.settimeout(timeout)
    data = b""
    while not pred(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def wait_for(pred, timeout=10, step=0.05):
    """Poll pred() until it is true (bounded); reloads are asynchronous."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()
