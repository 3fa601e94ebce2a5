# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_config_errors.py - a configuration with several mistakes is reported
in one run: every error of the file, each as file:line:col: message, on
stderr, then exit 1 -- for `sluiced -t` and for a plain start alike (which
logs each as the event config.invalid), for
the core's keys, listeners, the stores' keys and the rooms' sections (the
proxy's routes, gRPC's limits). The list is bounded: a file of a hundred
mistakes prints the first ones and how many more there are.
"""
import os
import re
import subprocess

# `sluiced -t` prints the errors plainly; a start logs each as config.invalid
ERROR_LINE = re.compile(r"^(?:\S+Z error config\.invalid )?"
                        r"(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$")

BROKEN = """\
listeners:
  - address: 127.0.0.1
    port: 99999
    protocols: [resp, gopher]
workers: many
server:
  idle_timeout: 10
  colour: blue
store:
  type: floppy
proxy:
  routes:
    - path_prefix: api
      upstream: {servers: [127.0.0.1:8080]}
    - path_prefix: /x
      upstream: {servers: [nowhere]}
      methods: [get]
grpc:
  max_message_bytes: 64MiB
admin:
  token: twelve-chars
  token_file: some-token-file
"""

# (line, col, what the message says) for each mistake of BROKEN, in order
EXPECTED = [
    (3, 11, "port must be 0..65535"),
    (4, 23, "unknown protocol 'gopher'"),
    (5, 10, "workers must be a whole number"),
    (7, 17, "server.idle_timeout must be a duration"),
    (8, 3, "unknown key 'server.colour'"),
    (10, 9, "store.type must be one of"),
    (13, 7, "path_prefix must start with '/'"),
    (16, 28, "a server is host:port"),
    (17, 17, "a method is an upper-case word"),
    (19, 22, "grpc.max_message_bytes must be at most 16MiB"),
    (22, 15, "set admin.token or admin.token_file, not both"),
]


def run(*args):
    return subprocess.run([os.environ["SLUICED"], *args], capture_output=True, text=True,
                          timeout=30)


def errors_of(stderr, path):
    """[(line, col, message)] of the error lines about `path`."""
    out = []
    for line in stderr.splitlines():
        m = ERROR_LINE.match(line)
        if m and m["file"] == str(path):
            out.append((int(m["line"]), int(m["col"]), m["msg"]))
    return out


def assert_all_reported(stderr, path):
    got = errors_of(stderr, path)
    assert len(got) == len(EXPECTED), f"expected {len(EXPECTED)} errors, got:\n{stderr}"
    for (line, col, what), (gl, gc, msg) in zip(EXPECTED, got):
        assert (gl, gc) == (line, col) and what in msg, f"want {line}:{col}: {what}\n{stderr}"


def test_every_error_in_one_run(tmp_path):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text(BROKEN)
    r = run("-t", "-c", str(cfg))
    assert r.returncode == 1, r.stderr
    assert_all_reported(r.stderr, cfg)
    assert "is NOT valid" in r.stderr


def test_a_start_reports_them_all_too(tmp_path):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text(BROKEN)
    r = run("-c", str(cfg))
    assert r.returncode == 1, r.stderr
    assert_all_reported(r.stderr, cfg)
    assert all(" error config.invalid " in ln for ln in r.stderr.splitlines()), r.stderr


def test_one_mistake_is_one_line(tmp_path):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("server:\n  max_connections: lots\n")
    r = run("-t", "-c", str(cfg))
    assert r.returncode == 1
    assert errors_of(r.stderr, cfg) == [
        (2, 20, "server.max_connections must be a whole number from 0 to 16777216 (got 'lots')")]


def test_the_list_is_bounded(tmp_path):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("server:\n" + "".join(f"  unknown_{i}: 1\n" for i in range(100)))
    r = run("-t", "-c", str(cfg))
    assert r.returncode == 1
    got = errors_of(r.stderr, cfg)
    assert 10 <= len(got) < 100, r.stderr
    assert [line for line, _, _ in got] == list(range(2, 2 + len(got)))
    assert f"and {100 - len(got)} more errors" in r.stderr, r.stderr


def test_yaml_syntax_error_is_one_error(tmp_path):
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("server: [unclosed\n")
    r = run("-t", "-c", str(cfg))
    assert r.returncode == 1
    assert len(errors_of(r.stderr, cfg)) == 1, r.stderr


def test_two_listeners_on_one_port_refused(tmp_path):
    """Both would bind it (SO_REUSEPORT) and the kernel would split the
    connections between their protocols; port 0 draws a port each."""
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("listeners:\n"
                   "  - {address: 127.0.0.1, port: 7000, protocols: [resp]}\n"
                   "  - {address: 127.0.0.2, port: 7000, protocols: [resp]}\n"
                   "  - {address: 127.0.0.1, port: 7000, protocols: [http1]}\n"
                   "  - {address: 127.0.0.1, port: 0, protocols: [resp]}\n"
                   "  - {address: 127.0.0.1, port: 0, protocols: [http1]}\n")
    r = run("-t", "-c", str(cfg))
    assert r.returncode == 1
    assert errors_of(r.stderr, cfg) == [
        (4, 5, "127.0.0.1:7000 is also an earlier listener's: list every protocol of that "
               "address in one listener")], r.stderr


def test_a_key_that_is_a_list_or_a_mapping(tmp_path):
    """YAML allows any node as a key: a proxy upstream's or route's key that
    is a list or a mapping is an error naming its place, not a crash (the
    configuration fuzzer found it)."""
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("""\
listeners: [{address: 127.0.0.1, port: 0, protocols: [proxy]}]
proxy:
  routes:
    - path_prefix: /
      upstream: {servers: [127.0.0.1:1], [bad]: 1}
    - path_prefix: /b
      {x: 1}: 2
      upstream: {servers: [127.0.0.1:1]}
""")
    r = run("-t", "-c", str(cfg))
    assert r.returncode == 1, r.stderr
    got = errors_of(r.stderr, cfg)
    assert [(line, "a key is a name" in msg) for line, _, msg in got] == [(5, True), (7, True)], \
        r.stderr
