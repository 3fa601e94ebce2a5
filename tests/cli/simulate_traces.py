#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""simulate_traces.py SLUICE TRACE_REF WORKDIR - `sluice simulate` must
reproduce, line for line, the decisions that sl_algo_decide() gives on the
same limits and trace (written by trace_ref), for every algorithm but
concurrency. Fails with the first differing line and the whole diff count."""
import json
import subprocess
import sys

sluice, trace_ref, work = sys.argv[1:4]
subprocess.run([trace_ref, work], check=True)
with open(f"{work}/input.jsonl", "rb") as f:
    out = subprocess.run([sluice, "simulate", "-r", f"{work}/rules.yaml"], stdin=f,
                         capture_output=True, check=False)
if out.returncode != 0:
    sys.exit(f"simulate exited {out.returncode}: {out.stderr.decode()}")
got = [json.loads(l) for l in out.stdout.decode().splitlines()]
want = [json.loads(l) for l in open(f"{work}/expected.jsonl")]
assert len(want) > 100, "trace_ref wrote too few lines"
if len(got) != len(want):
    sys.exit(f"{len(got)} lines out, {len(want)} expected")
diffs = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
for i, g, w in diffs[:5]:
    print(f"line {i + 1}:\n  got  {g}\n  want {w}")
verdicts = {s["decision"] for w in want for s in w["statuses"]}
print(f"{len(want)} lines, {len(diffs)} differ, decisions seen: {sorted(verdicts)}")
if not {"allow", "deny", "delay"} <= verdicts:
    sys.exit("the traces must exercise allow, delay and deny")
sys.exit(1 if diffs else 0)
