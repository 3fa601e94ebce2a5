# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_log_events.py - every log line of sluiced names its event, and
log.format: json makes each line a JSON object for log shippers.

- In the source, every log call of server/ and store/ names its event with
  a string literal of the form area.what, no line goes to stderr around the
  log, and the events are exactly those listed in docs/operations.md's
  table (none missing, none left over).
- A running sluiced, in text, writes "TIME LEVEL EVENT message" lines; in
  json, one object per line with ts, level, event and msg, plus the
  event's fields (server.listening's port, rules.reloaded's trigger,
  conn.refused's limit and, when lines were left out, suppressed); every
  event seen is a documented one.
"""
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from conftest import free_port

SRC = Path(os.environ.get("SLUICE_SOURCE", Path(__file__).resolve().parents[2]))
EVENT = re.compile(r"^[a-z]+(?:\.[a-z_]+)+$")
# sl__err("ev", ...), sl__log_event(SL__LOG_X, "ev", ...), sl__log_fields(...),
# sl__log_rate(&rl, SL__LOG_X, "ev", ...), and rules_load.c's
# report(how, SL__LOG_X, "ev", ...)
CALLS = [
    re.compile(r'\bsl__(?:err|warn|info|dbg)\(\s*(?P<arg>[^,)]*)'),
    re.compile(r'\bsl__log_(?:event|fields)\(\s*SL__LOG_\w+,\s*(?P<arg>[^,)]*)'),
    re.compile(r'\bsl__log_rate\(\s*[^,]+,\s*SL__LOG_\w+,\s*(?P<arg>[^,)]*)'),
    re.compile(r'\breport\(\s*how,\s*SL__LOG_\w+,\s*(?P<arg>[^,)]*)'),
    re.compile(r'\bsl__store_log\(\s*SL__SLOG_\w+,\s*(?P<arg>[^,)]*)'),
    re.compile(r'\bsl__rlog\(\s*[^,]+,\s*SL__SLOG_\w+,\s*(?P<arg>[^,)]*)'),
]
# the calls that pass their caller's event on (report() in rules_load.c;
# the stores' lines, already checked where the stores make them)
INDIRECT = {("server/core/rules_load.c", "event"), ("server/core/stores.c", "event")}
# the files that write the lines themselves
SKIP = {"server/core/log.c", "store/store_log.c"}
# stderr allowed: sluiced's usage errors and -t's verdict, before any log;
# a store's line when no sink was given (tests of the store alone)
STDERR_OK = {"server/main.c", "store/redis/redis_events.c"}
STDERR = re.compile(r'\b(?:fprintf|fputs|vfprintf)\([^;]*\bstderr\b|\bperror\(')


def source_events():
    found, bad = {}, []
    paths = sorted((SRC / "server").rglob("*.c")) + sorted((SRC / "store").rglob("*.c"))
    for path in paths:
        rel = str(path.relative_to(SRC))
        if rel in SKIP:
            continue
        text = path.read_text()
        if rel not in STDERR_OK:
            for m in STDERR.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{rel}:{line}: a line on stderr without an event: use the log")
        for rx in CALLS:
            for m in rx.finditer(text):
                arg = m["arg"].strip()
                line = text.count("\n", 0, m.start()) + 1
                if (rel, arg) in INDIRECT:
                    continue
                lit = re.fullmatch(r'"([^"]*)"', arg)
                if lit is None or not EVENT.match(lit[1]):
                    bad.append(f"{rel}:{line}: log call without an area.what event: {arg}")
                else:
                    found.setdefault(lit[1], []).append(f"{rel}:{line}")
    return found, bad


def documented_events():
    rows = {}
    text = (SRC / "docs/operations.md").read_text()
    for line in text.splitlines():
        m = re.match(r"^\| `([a-z_.]+)` \| (error|warn|info|debug) \|", line)
        if m:
            rows[m[1]] = m[2]
    assert len(rows) > 20, "docs/operations.md: the events table was not found"
    return rows


def test_every_log_call_names_a_documented_event():
    found, bad = source_events()
    assert not bad, "\n".join(bad)
    docs = documented_events()
    missing = sorted(set(found) - set(docs))
    assert not missing, "events not in docs/operations.md: " + ", ".join(
        f"{e} ({found[e][0]})" for e in missing)
    stale = sorted(set(docs) - set(found))
    assert not stale, "documented events no code logs: " + ", ".join(stale)


def start(tmp_path, fmt, extra=""):
    port = free_port()
    (tmp_path / "rules.yaml").write_text(
        "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, "
        "requests_per_unit: 3}\n")
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text(f"listeners:\n  - {{address: 127.0.0.1, port: {port}, protocols: [resp]}}\n"
                   f"workers: 1\nrules:\n  files: [rules.yaml]\n  watch: false\n"
                   f"server:\n  max_connections: 1\nlog:\n  level: debug\n  format: {fmt}\n"
                   + extra)
    err = open(tmp_path / "stderr.log", "wb")
    proc = subprocess.Popen([os.environ["SLUICED"], "-c", str(cfg)], stdout=subprocess.DEVNULL,
                            stderr=err)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError((tmp_path / "stderr.log").read_text())
        if b"server.ready" in (tmp_path / "stderr.log").read_bytes():
            return proc, port, err
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("sluiced did not start:\n" + (tmp_path / "stderr.log").read_text())


def exercise(tmp_path, fmt):
    """Start, refuse a connection over max_connections, reload, stop: the log."""
    proc, port, err = start(tmp_path, fmt)
    try:
        held = socket.create_connection(("127.0.0.1", port))
        held.sendall(b"PING\r\n")
        assert held.recv(16).startswith(b"+PONG")
        for _ in range(3):  # over server.max_connections: refused, logged once a second
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.settimeout(5)
                s.recv(16)
        held.close()
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while b"rules.reloaded" not in (tmp_path / "stderr.log").read_bytes():
            assert time.monotonic() < deadline, (tmp_path / "stderr.log").read_text()
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
    return (tmp_path / "stderr.log").read_text().splitlines()


def test_text_lines_name_their_event(tmp_path):
    docs = documented_events()
    lines = exercise(tmp_path, "text")
    seen = []
    for line in lines:
        m = re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn|info|debug) (\S+) .+$",
                     line)
        assert m, f"not TIME LEVEL EVENT message: {line!r}"
        assert m[2] in docs and docs[m[2]] == m[1], f"undocumented or mislevelled: {line!r}"
        seen.append(m[2])
    for want in ["server.listening", "server.ready", "conn.refused", "rules.reloaded",
                 "server.stopping", "server.stopped"]:
        assert want in seen, (want, lines)


def test_json_lines_for_log_shippers(tmp_path):
    docs = documented_events()
    lines = exercise(tmp_path, "json")
    objs = []
    for line in lines:
        o = json.loads(line)  # every line is one JSON object
        assert list(o)[:4] == ["ts", "level", "event", "msg"], o
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", o["ts"]), o
        assert o["event"] in docs and docs[o["event"]] == o["level"], o
        assert isinstance(o["msg"], str) and o["msg"], o
        objs.append(o)
    by = {}
    for o in objs:
        by.setdefault(o["event"], []).append(o)
    listening = by["server.listening"][0]
    assert listening["address"] == "127.0.0.1" and isinstance(listening["port"], int)
    assert listening["workers"] == 1 and listening["protocols"] == "resp"
    assert by["rules.reloaded"][0]["trigger"] == "SIGHUP"
    assert by["conn.refused"][0]["limit"] == "server.max_connections"
    refused = sum(1 + o.get("suppressed", 0) for o in by["conn.refused"])
    assert 1 <= len(by["conn.refused"]) <= refused, by["conn.refused"]


def test_a_refused_start_is_logged_in_json(tmp_path):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("log:\n  format: json\nserver:\n  max_connections: lots\n  colour: blue\n")
    r = subprocess.run([os.environ["SLUICED"], "-c", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    objs = [json.loads(line) for line in r.stderr.splitlines()]
    assert [o["event"] for o in objs] == ["config.invalid", "config.invalid"], r.stderr
    assert objs[0]["msg"].startswith(f"{cfg}:4:20: server.max_connections")


def test_unknown_format_is_an_error(tmp_path):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("log:\n  format: xml\n")
    r = subprocess.run([os.environ["SLUICED"], "-t", "-c", str(cfg)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1
    assert f"{cfg}:2:11: log.format must be one of text, json (got 'xml')" in r.stderr
