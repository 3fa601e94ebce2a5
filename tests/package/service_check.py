#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""service_check.py UNIT_IN CONFIG SLUICED MANDIR

sluiced.service and the configuration it starts with, without systemd
running (systemd-analyze works on files):
- a copy of the unit whose ExecStart is the built sluiced passes
  `systemd-analyze verify` with nothing to say (an unknown key is only a
  warning there, so any output fails), Documentation= included: the built
  man pages are on MANPATH;
- its sandboxing keeps systemd-analyze's exposure level at 2.0 or below
  ("OK"), so weakening it fails;
- run as systemd would run them, in a state directory of the test's own:
  ExecStartPre makes a 64-hex-digit admin token readable by its owner alone
  and keeps it on the next start; ExecStart, with the shipped
  configuration (its /var/lib/sluice paths moved to that directory, port 0),
  sends READY=1 on $NOTIFY_SOCKET once it listens; the admin API refuses a
  request without the token and answers one with it; ExecReload's SIGHUP
  reloads the rules; SIGTERM stops it with exit 0.
"""
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

unit_in, config, sluiced, mandir = sys.argv[1:5]
tmp = tempfile.mkdtemp(prefix="sluice-service-")
etc = os.path.join(tmp, "etc")
state = os.path.join(tmp, "state")
os.makedirs(os.path.join(etc, "sluice"))
os.makedirs(state)


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


# The unit, pointed at the built binary and the test's configuration.
with open(unit_in) as f:
    unit = f.read()
unit = unit.replace("@SL_BINDIR@", os.path.dirname(os.path.abspath(sluiced)))
unit = unit.replace("@SL_SYSCONFDIR@", etc)
if re.search(r"@SL_[A-Z_]+@", unit):
    fail(f"unsubstituted @SL_...@ left in the unit: {re.findall(r'@SL_[A-Z_]+@', unit)}")
unit_path = os.path.join(tmp, "sluiced.service")
with open(unit_path, "w") as f:
    f.write(unit)

env = dict(os.environ, MANPATH=mandir)
r = subprocess.run(["systemd-analyze", "verify", unit_path], capture_output=True, text=True,
                   env=env)
if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
    fail(f"systemd-analyze verify: exit {r.returncode}\n{r.stdout}{r.stderr}")
r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=20",
                    unit_path], capture_output=True, text=True)
level = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout)
if r.returncode != 0 or not level:
    fail(f"systemd-analyze security: exit {r.returncode} (above 2.0?)\n{r.stdout[-600:]}")
print(f"verify: clean; exposure level {level.group(1)}")


def directive(key):
    vals = re.findall(rf"^{key}=(.*)$", unit, re.M)
    if len(vals) != 1:
        fail(f"expected one {key}=, found {vals}")
    # systemd's own escape: $$ is a literal $ for the command.
    return shlex.split(vals[0].replace("$$", "$"))


# ExecStartPre: the admin token.
pre = directive("ExecStartPre")
run_env = dict(os.environ, STATE_DIRECTORY=state)
old_umask = os.umask(0o077)  # the unit's UMask=
for _ in range(2):
    r = subprocess.run(pre, env=run_env, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"ExecStartPre: exit {r.returncode}: {r.stderr}")
    token_path = os.path.join(state, "admin.token")
    with open(token_path) as f:
        token = f.read()
    if _ == 0:
        first = token
os.umask(old_umask)
if not re.fullmatch(r"[0-9a-f]{64}", token):
    fail(f"admin token is not 64 hex digits: {token!r}")
if token != first:
    fail("ExecStartPre made a new token although one existed")
if os.stat(token_path).st_mode & 0o077:
    fail(f"admin token mode {oct(os.stat(token_path).st_mode)}: others may read it")
print("ExecStartPre: token made once, mode 0600")

# The shipped configuration, with the state directory moved and port 0.
with open(config) as f:
    cfg = f.read()

# Its comment names the protocols a listener without `protocols:` serves:
# every protocol of the build (sluiced names them for an unknown one) but
# the reverse proxy, which is only served where it is listed.
said = re.search(r"#\s*protocols: \[([a-z0-9, ]+)\]\s*\(default:", cfg)
if not said:
    fail("the configuration's listener no longer says its default protocols")
probe = os.path.join(tmp, "probe.yaml")
with open(probe, "w") as f:
    f.write("listeners:\n  - {address: 127.0.0.1, port: 0, protocols: [nope]}\n")
r = subprocess.run([sluiced, "-t", "-c", probe], capture_output=True, text=True)
speaks = re.search(r"this build speaks ([a-z0-9, ]+)", r.stderr)
if not speaks:
    fail(f"sluiced no longer names the protocols it speaks: {r.stderr}")
default = {p.strip() for p in speaks.group(1).split(",")} - {"proxy"}
if {p.strip() for p in said.group(1).split(",")} != default:
    fail(f"the configuration says the default protocols are [{said.group(1)}], "
         f"but a listener without protocols: serves {sorted(default)}")
if "/var/lib/sluice/" not in cfg:
    fail("the configuration no longer keeps its state in /var/lib/sluice")
cfg = cfg.replace("/var/lib/sluice/", state + "/")
cfg, n = re.subn(r"port: 6390", "port: 0", cfg)
if n != 1:
    fail("the configuration's listener is no longer port 6390")
with open(os.path.join(etc, "sluice", "sluice.yaml"), "w") as f:
    f.write(cfg)

notify_path = os.path.join(tmp, "notify")
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(notify_path)
notify.settimeout(20)
start = directive("ExecStart")
log_path = os.path.join(tmp, "sluiced.log")
log = open(log_path, "w+")
proc = subprocess.Popen(start, env=dict(run_env, NOTIFY_SOCKET=notify_path), stderr=log,
                        stdout=log)
try:
    try:
        msg = notify.recv(4096).decode()
    except socket.timeout:
        fail("no sd_notify message within 20 s")
    if "READY=1" not in msg.split("\n"):
        fail(f"sd_notify sent {msg!r}, not READY=1")
    with open(log_path) as f:
        text = f.read()
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
    if not m or "ready" not in text:
        fail(f"READY=1 came before the log said it listens:\n{text}")
    port = int(m.group(1))
    print(f"READY=1 after binding port {port}")

    url = f"http://127.0.0.1:{port}/v1/config"
    try:
        urllib.request.urlopen(url, timeout=5)
        fail("the admin API answered without the token")
    except urllib.error.HTTPError as e:
        if e.code != 401:
            fail(f"without the token: HTTP {e.code}, not 401")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        body = resp.read().decode()
    if resp.status != 200 or state not in body:
        fail(f"with the token: HTTP {resp.status}: {body[:300]}")
    print("admin API: 401 without the token, 200 with it")

    reload_cmd = [a.replace("$MAINPID", str(proc.pid)) for a in directive("ExecReload")]
    subprocess.run(reload_cmd, check=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log_path) as f:
            if "SIGHUP" in f.read():
                break
        time.sleep(0.1)
    else:
        fail("ExecReload: no reload in the log within 10 s")
    if proc.poll() is not None:
        fail(f"sluiced exited {proc.returncode} on ExecReload")
    print("ExecReload: rules reloaded, still running")

    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=30)
    if code != 0:
        fail(f"SIGTERM: exit {code}")
    print("SIGTERM: exit 0")
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    with open(log_path) as f:
        sys.stderr.write(f.read())
