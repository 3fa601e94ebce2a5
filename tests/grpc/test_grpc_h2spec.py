# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_grpc_h2spec.py - h2spec, the HTTP/2 conformance tester (pinned in
tests/tools/h2spec, built with scripts/go.sh's Go; skipped without one),
against the gRPC listener's hand-written HTTP/2 framing. Every case must
pass but those whose requests are not gRPC calls: h2spec sends GET, which
the listener answers 405 without a body, so the two generic cases that
wait for a DATA frame see none, and the concurrency case's requests, which
end at their headers, are each answered at once, so no more than the limit
are ever open; and the bad preface, which the fixture's port, shared with
RESP and HTTP/1.1, hands to another protocol (on a port of its own the
session refuses it: GOAWAY PROTOCOL_ERROR, test_grpc_h2's
test_connection_errors). Another connection is served after the run.
"""
import os
import pathlib
import subprocess
import xml.etree.ElementTree as ET

import pytest

from grpc_client import channel, request, rls_stub
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: F401

SOURCE = pathlib.Path(os.environ.get("SLUICE_SOURCE", pathlib.Path(__file__).parents[2]))
RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
# (package, case) that fail for the reason above
NOT_GRPC = {
    ("generic/2", "Sends a WINDOW_UPDATE frame on half-closed (remote) stream"),
    ("generic/2", "Sends a PRIORITY frame on half-closed (remote) stream"),
    ("http2/5.1.2", "Sends HEADERS frames that causes their advertised concurrent stream limit "
                    "to be exceeded"),
}
# and the one a port shared with RESP and HTTP/1.1 (the fixture's) decides
# before HTTP/2 sees it: a preface that is not HTTP/2's is another protocol's
SHARED_PORT = {("http2/3.5", "Sends invalid connection preface")}


@pytest.fixture(scope="module")
def h2spec(tmp_path_factory):
    r = subprocess.run([str(SOURCE / "scripts" / "go.sh")], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        pytest.skip("no Go toolchain for h2spec (tests/tools/h2spec): " + r.stderr.strip())
    out = tmp_path_factory.mktemp("h2spec") / "h2spec"
    b = subprocess.run([r.stdout.strip(), "build", "-o", str(out),
                        "github.com/summerwind/h2spec/cmd/h2spec"],
                       cwd=SOURCE / "tests" / "tools" / "h2spec", capture_output=True, text=True,
                       timeout=600, env={**os.environ, "GOFLAGS": "-mod=mod"})
    if b.returncode != 0:
        pytest.skip("h2spec could not be built (tests/tools/h2spec): " + b.stderr.strip()[-300:])
    return str(out)


def test_h2spec(grpc_sluiced, h2spec, tmp_path):
    s = grpc_sluiced()
    report = tmp_path / "h2spec.xml"
    p = subprocess.run([h2spec, "-h", "127.0.0.1", "-p", str(s.port), "-P", RLS, "-o", "3",
                        "-j", str(report)], capture_output=True, text=True, timeout=600)
    cases, failed = 0, set()
    for suite in ET.parse(report).getroot():
        for case in suite:
            cases += 1
            if case.find("failure") is not None or case.find("error") is not None:
                failed.add((case.get("package"), case.get("classname")))
    assert cases >= 140, p.stdout[-2000:]
    assert failed <= NOT_GRPC | SHARED_PORT, sorted(failed - NOT_GRPC - SHARED_PORT)
    assert s.proc.poll() is None
    with channel(s.port) as ch:
        assert rls_stub(ch)(request("api", [("plan", "after")]), timeout=5).overall_code == 1
