#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""bench_rlqs.py BUILD_DIR - what the rate limit quota service costs the
server: sluiced's CPU time (utime+stime from /proc/PID/stat) over a run in
which SL_BENCH_RLQS_STREAMS (50) simulated Envoys, each on a connection of
its own, report SL_BENCH_RLQS_BUCKETS (20) buckets every 200 ms for
SL_BENCH_RLQS_SECONDS (10) seconds (tests/grpc/test_grpc_rlqs.py's
clients), divided by the bucket reports: the figure includes the
assignments sent, the pushes on ticks and the renewals. One bucket is
shared by every Envoy (one pool divided among all), the others are each
Envoy's own and match no rule (ALLOW_ALL, renewed). Output: `name value unit` lines. It builds nothing and kills
only the server it started (by PID).
"""
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

here = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(here.parent / "tests" / "grpc"))
os.environ.setdefault("SLUICE_SOURCE", str(here.parent))
from test_grpc_rlqs import REPORT, RULES, Envoy  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build-release")
    sluiced = build / "server" / "sluiced"
    streams = int(os.environ.get("SL_BENCH_RLQS_STREAMS", 50))
    buckets = int(os.environ.get("SL_BENCH_RLQS_BUCKETS", 20))
    secs = float(os.environ.get("SL_BENCH_RLQS_SECONDS", 10))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-rlqs-"))
    port = free_port()
    (tmp / "rules.yaml").write_text(RULES)
    (tmp / "sluice.yaml").write_text(f"""listeners: [{{address: 127.0.0.1, port: {port}, protocols: [grpc, http1]}}]
workers: 2
rules: {{files: [rules.yaml], watch: false}}
log: {{level: warn}}
""")
    proc = subprocess.Popen([str(sluiced), "-c", str(tmp / "sluice.yaml")],
                            stderr=open(tmp / "sluiced.log", "wb"))
    try:
        time.sleep(1.0)
        envoys = [Envoy(port) for _ in range(streams)]
        c0, t0, reports = cpu(proc.pid), time.monotonic(), 0
        while time.monotonic() - t0 < secs:
            for i, e in enumerate(envoys):
                e.report({("shared" if j == 0 else f"own{i}-{j}"): (10 * (i % 5 + 1), 0)
                          for j in range(buckets)})
                reports += buckets
            time.sleep(REPORT)
        used = cpu(proc.pid) - c0
        for e in envoys:
            e.close()
        print(f"rlqs_bucket_reports {reports} reports")
        print(f"rlqs_cpu {used:.2f} s")
        print(f"rlqs_cpu_per_bucket_report {1e6 * used / reports:.1f} us")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
