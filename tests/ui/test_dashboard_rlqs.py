# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_dashboard_rlqs.py - the dashboard's rate limit quota (RLQS) panel
in a real browser (cdp.py): two simulated Envoys (tests/grpc's python3-grpcio
streams) report a bucket matching one rate limit; the page, polling
GET /v1/stats, shows the pool with its two instances, the rate assigned
over them against the limit, and what they reported; a third Envoy joins
and the row follows.

The screenshot is kept in $SLUICE_ARTIFACTS (the build tree's
artifacts/ui).
"""
import os
import sys

from cdp import Browser

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "grpc"))
from grpc_fixtures import grpc_sluiced, http_sluiced  # noqa: E402,F401 (fixtures)
from test_grpc_rlqs import LIMIT, RULES, Envoy  # noqa: E402

ARTIFACTS = os.environ.get("SLUICE_ARTIFACTS") or os.path.join(os.getcwd(), "artifacts")
ROW = "document.querySelector('#rlqs tbody tr[data-pool]')"


def test_the_rlqs_panel_shows_instances_and_assigned_rate(grpc_sluiced):
    s = grpc_sluiced(rules=RULES, test_clock=False)
    envoys = []
    b = Browser()
    try:
        b.goto(f"http://127.0.0.1:{s.port}/ui")
        b.wait("!document.getElementById('login').hidden")
        b.type_text("#token", s.token)
        b.click("#login-form button")
        b.wait("document.getElementById('status').textContent.startsWith('updated')")
        assert b.eval("document.getElementById('rlqs-panel').hidden") is True  # no Envoy yet

        envoys = [Envoy(s.port), Envoy(s.port)]
        envoys[0].report({"shared": (12, 3)})
        envoys[1].report({"shared": (8, 1)})
        for e in envoys:
            assert e.wait(lambda x: x.get("shared") is not None and x.get("shared").rate > 0)
        b.wait("!document.getElementById('rlqs-panel').hidden")
        b.wait(f"{ROW} && {ROW}.cells[1].textContent === '2'")
        assert b.eval(f"{ROW}.cells[0].textContent") == "rlqs.name_shared"
        assert b.eval(f"{ROW}.cells[3].textContent") == str(int(LIMIT))
        b.wait(f"Number({ROW}.cells[2].textContent) > 0")
        assigned = float(b.eval(f"{ROW}.cells[2].textContent"))
        assert 0 < assigned <= LIMIT, assigned
        share = b.eval(f"{ROW}.cells[4].textContent")
        assert share.endswith(" %") and abs(int(share[:-2]) - 100 * assigned / LIMIT) <= 1, share
        assert b.eval(f"parseFloat({ROW}.querySelector('.share-bar span').style.width)") > 0
        assert [b.eval(f"{ROW}.cells[{i}].textContent") for i in (5, 6)] == ["20", "4"]
        summary = b.eval("document.getElementById('rlqs-summary').textContent")
        assert summary.startswith("2 streams, 2 buckets, 1 pool;"), summary
        assert "reported 20 allowed, 4 denied" in summary, summary

        envoys.append(Envoy(s.port))
        envoys[2].report({"shared": (5, 0)})
        b.wait(f"{ROW}.cells[1].textContent === '3' && {ROW}.cells[5].textContent === '25'")
        assigned = float(b.eval(f"{ROW}.cells[2].textContent"))
        assert 0 < assigned <= LIMIT, assigned
        os.makedirs(ARTIFACTS, exist_ok=True)
        b.eval("document.getElementById('rlqs-panel').scrollIntoView()")
        b.screenshot(os.path.join(ARTIFACTS, "dashboard-rlqs.png"))
    finally:
        b.close()
        for e in envoys:
            e.close()
