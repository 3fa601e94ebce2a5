#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""simulate_io.py SLUICE WORKDIR - `sluice simulate` input and output: bad
lines are named on stderr and skipped (exit 1), output is deterministic,
nginx combined logs give descriptors [remote_address], [path] and
[remote_address, path] at 1 s resolution, and --summary counts per limit."""
import json
import os
import subprocess
import sys

sluice, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
rules = os.path.join(work, "rules.yaml")
with open(rules, "w") as f:
    f.write("""domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2, name: per-user}
---
domain: nginx
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 1, name: per-ip}
    descriptors:
      - key: path
        value: /home
        rate_limit: {unit: minute, requests_per_unit: 1, name: home-per-ip}
  - key: path
    value: /login
    rate_limit: {unit: minute, requests_per_unit: 2, name: login}
""")


def simulate(stdin, *args):
    p = subprocess.run([sluice, "simulate", "-r", rules, *args], input=stdin.encode(),
                       capture_output=True, check=False)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def fail(msg):
    sys.exit(f"FAIL: {msg}")


T = 1700000040000  # a minute boundary
lines = [
    {"t_ms": T, "domain": "api", "descriptors": [{"user": "a"}]},
    "this is not json",
    {"t_ms": T + 1, "domain": "api", "descriptors": [{"user": "a"}], "hits": 1},
    {"t_ms": T + 2, "domain": "api", "descriptors": [{"user": 5}]},
    {"t_ms": T + 3, "domain": "api", "descriptors": [{"user": "a"}]},
    {"t_ms": -1, "domain": "api", "descriptors": [{"user": "a"}]},
    {"t_ms": T + 4, "domain": "api", "descriptors": [{"user": "a"}], "hits": 0},
]
text = "\n".join(l if isinstance(l, str) else json.dumps(l) for l in lines) + "\n"
rc, out, err = simulate(text)
if rc != 1:
    fail(f"bad lines must make the exit status 1, got {rc}")
for n in (2, 4, 6):
    if f"line {n}:" not in err:
        fail(f"stderr does not name line {n}: {err!r}")
got = [json.loads(l) for l in out.splitlines()]
if [g["decision"] for g in got] != ["allow", "allow", "deny", "allow"]:
    fail(f"decisions: {got}")
st = got[2]["statuses"][0]
if st["limit"] != "per-user" or st["quota"] != 2 or st["remaining"] != 0:
    fail(f"deny status: {st}")
if st["retry_after_ms"] != 60000 - 3 or st["reset_ms"] != 60000 - 3:
    fail(f"fixed window timing: {st}")
if got[3]["statuses"][0]["remaining"] != 0 or got[3]["t_ms"] != T + 4:
    fail(f"peek: {got[3]}")
rc2, out2, _ = simulate(text)
if out2 != out:
    fail("output is not deterministic")

# The body rules of POST /v1/check (checkbody/check_body.c): an empty key is
# refused, hits is a number or a decimal string up to 2^64-1.
T2 = T + 600000
lines = [
    {"t_ms": T2, "domain": "api", "descriptors": [{"": "a"}]},
    {"t_ms": T2, "domain": "api", "descriptors": [{"user": "h"}], "hits": "18446744073709551615"},
    {"t_ms": T2, "domain": "api", "descriptors": [{"user": "h"}], "hits": "18446744073709551616"},
    {"t_ms": T2, "domain": "api", "descriptors": [{"user": "h"}], "hits": "0"},
]
rc, out, err = simulate("\n".join(json.dumps(l) for l in lines) + "\n")
if rc != 1 or "line 1: descriptors[0]: keys must not be empty" not in err:
    fail(f"an empty key must be refused: rc={rc} err={err!r}")
if "line 3: hits: number out of range" not in err or "line 2:" in err or "line 4:" in err:
    fail(f"hits up to 2^64-1 as a string: err={err!r}")
got = [json.loads(l) for l in out.splitlines()]
if [g["decision"] for g in got] != ["deny", "allow"] or got[1]["statuses"][0]["remaining"] != 2:
    fail(f"hits 2^64-1 denies, \"0\" peeks: {got}")

# nginx combined log: two descriptors, 1 s resolution, query stripped.
log = "\n".join([
    '10.0.0.1 - - [14/Nov/2023:22:14:00 +0000] "POST /login?next=/ HTTP/1.1" 401 0 "-" "curl"',
    '10.0.0.2 - - [14/Nov/2023:22:14:00 +0000] "POST /login HTTP/1.1" 401 0 "-" "curl"',
    '10.0.0.1 - - [14/Nov/2023:23:14:00 +0100] "GET /home HTTP/1.1" 200 5 "-" "curl"',
    '10.0.0.3 - - [14/Nov/2023:22:14:01 +0000] "POST /login HTTP/1.1" 401 0 "-" "curl"',
    'garbage line',
]) + "\n"
rc, out, err = simulate(log, "--log-format", "combined")
got = [json.loads(l) for l in out.splitlines()]
if rc != 1 or "line 5:" not in err or len(got) != 4:
    fail(f"combined: rc={rc} err={err!r} out={out!r}")
t = 1700000040000  # 2023-11-14T22:14:00Z
if [g["t_ms"] for g in got] != [t, t, t, t + 1000]:
    fail(f"combined times: {[g['t_ms'] for g in got]}")
want = [("allow", "per-ip", "login", "(none)"), ("allow", "per-ip", "login", "(none)"),
        ("deny", "per-ip", "(none)", "home-per-ip"), ("deny", "per-ip", "login", "(none)")]
for g, (dec, *limits) in zip(got, want):
    names = [s["limit"] or "(none)" for s in g["statuses"]]
    if g["decision"] != dec or names != limits:
        fail(f"combined decision {g}, want {dec} {limits}")

# --summary: per limit, allowed / delayed / denied.
rc, out, err = simulate(log, "--log-format", "combined", "--summary")
rows = {l.split()[0]: l.split()[1:] for l in out.splitlines()[1:]}
if rows.get("login") != ["2", "0", "1"] or rows.get("(requests)") != ["2", "0", "2"]:
    fail(f"summary: {out!r}")
if rows.get("per-ip") != ["3", "0", "1"]:  # its descriptor passed in request 4
    fail(f"summary per-ip: {out!r}")
print("ok")
