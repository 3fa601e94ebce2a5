# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_dashboard_adaptive.py - the dashboard's adaptive concurrency panel
in a real browser (cdp.py): a proxy route whose limit is pinned to 2, two
requests held by the upstream and one shed; the page, polling
GET /v1/stats, draws the route's limit against its requests in flight
(the history it keeps itself) and counts the shed request in its class.

The screenshot is kept in $SLUICE_ARTIFACTS (the build tree's
artifacts/ui).
"""
import os
import socket
import sys

from cdp import Browser

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from conftest import free_port  # noqa: E402
from conftest_proxy import proxy_sluiced, route, upstream  # noqa: E402,F401 (fixtures)

ARTIFACTS = os.environ.get("SLUICE_ARTIFACTS") or os.path.join(os.getcwd(), "artifacts")


def send(p, path):
    s = socket.create_connection((p.address, p.port), timeout=15)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    return s


def status_of(s):
    line = s.makefile("rb").readline()
    s.close()
    return int(line.split()[1])


def test_the_adaptive_panel_draws_limit_and_inflight(proxy_sluiced, upstream):
    u = upstream()
    admin = free_port()
    p = proxy_sluiced(
        route("api", [f"127.0.0.1:{u.port}"],
              extra="adaptive_concurrency: {algorithm: aimd, initial_limit: 2, min_limit: 2, "
                    "max_limit: 2}"),
        listeners=f"  - {{address: 127.0.0.1, port: {admin}, protocols: [http1]}}\n")
    assert status_of(send(p, "/echo")) == 200  # the worker's controller exists from here

    b = Browser()
    try:
        b.goto(f"http://127.0.0.1:{admin}/ui")
        b.wait("!document.getElementById('login').hidden")
        b.type_text("#token", p.token())
        b.click("#login-form button")
        b.wait("!document.getElementById('adaptive-panel').hidden")
        assert b.eval("document.querySelector('#adaptive .adaptive-route').dataset.route") == "api"
        held = [send(p, "/slow?ms=3000") for _ in range(2)]
        b.wait("document.querySelector('#adaptive h3').textContent.includes('in flight 2')")
        assert status_of(send(p, "/echo")) == 503
        # the shed request in its class's row; in-flight drawn under the limit
        b.wait("document.querySelector('#adaptive tr[data-class=default]').cells[4]"
               ".textContent === '1'")
        b.wait("Number(document.querySelector('#adaptive path.inflight').dataset.sum) > 0")
        sums = b.eval("Object.fromEntries([...document.querySelectorAll('#adaptive path')]"
                      ".map(p => [p.dataset.series, Number(p.dataset.sum)]))")
        assert sums["limit"] >= sums["inflight"] > 0, sums
        os.makedirs(ARTIFACTS, exist_ok=True)
        b.eval("document.getElementById('adaptive-panel').scrollIntoView()")
        b.screenshot(os.path.join(ARTIFACTS, "dashboard-adaptive.png"))
        assert [status_of(s) for s in held] == [200, 200]
        b.wait("document.querySelector('#adaptive h3').textContent.includes('in flight 0')")
    finally:
        b.close()
