# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_dashboard.py - the operator's view as an operator meets it: the
page in a real browser (Debian's chromium, headless, driven through the
DevTools protocol: cdp.py), `sluice top --once --json`, and `sluice top`
in a terminal (tmux), all against one sluiced under a bounded generated
load. sluiced runs with the test clock, so the seconds of the series move
only when the test moves them.

Screenshots and the terminal's screen are kept as artifacts in
$SLUICE_ARTIFACTS (the build tree's artifacts/ui).
"""
import json
import os
import subprocess
import sys
import time

from cdp import Browser

# sluiced is started as the integration tests start it (loopback, free
# ports, the test clock, killed by PID).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from conftest_http import http_sluiced  # noqa: E402,F401 (fixture)

TOKEN = "dashboard-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RULES = """\
domain: api
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 3
---
domain: web
descriptors:
  - key: ip
    rate_limit:
      unit: minute
      requests_per_unit: 1000
"""
ARTIFACTS = os.environ.get("SLUICE_ARTIFACTS") or os.path.join(os.getcwd(), "artifacts")


def check(s, domain, key, value):
    status, _, body = s.json("POST", "/v1/check", {"domain": domain, "descriptors": [{key: value}]})
    return status, body


def load(s, hot, others, web):
    """A bounded burst: `hot` checks of the hammered key, first; then two
    checks each of `others` users and `web` allowed checks."""
    for _ in range(hot):
        check(s, "api", "user", "mallory")
    for i in range(others):
        for _ in range(2):
            check(s, "api", "user", f"u{i}")
    for i in range(web):
        check(s, "web", "ip", f"10.0.0.{i % 7}")


def chart_sums(b):
    return b.eval("Object.fromEntries([...document.querySelectorAll('#chart-decisions path')]"
                  ".map(p => [p.dataset.series, Number(p.dataset.sum)]))")


def artifact(name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    return os.path.join(ARTIFACTS, name)


def sluice(*args, **kw):
    return subprocess.run([os.environ["SLUICE_CLI"], *args], capture_output=True, text=True,
                          timeout=30, **kw)


def test_dashboard_in_a_browser_and_a_terminal(http_sluiced, tmp_path):
    s = http_sluiced(rules=RULES, admin=True, extra=f"admin:\n  token: {TOKEN}\n")
    s.admin_headers = AUTH
    ui = f"http://127.0.0.1:{s.admin_port}"
    for _ in range(3):  # three seconds of load
        load(s, hot=40, others=10, web=30)
        s.advance(1000)

    b = Browser()
    try:
        b.goto(ui + "/ui")
        b.wait("!document.getElementById('login').hidden")
        b.type_text("#token", TOKEN)
        b.click("#login-form button")
        b.wait("document.querySelectorAll('#top-keys tbody tr[data-key]').length > 0")
        assert b.eval("sessionStorage.getItem('sluice-token')") == TOKEN
        assert b.eval("document.cookie") == ""
        # the key hammered first leads the top keys
        assert b.eval("document.querySelector('#top-keys tbody tr').dataset.key") == "user=mallory"
        first = chart_sums(b)
        assert first["allow"] > 0 and first["deny"] > 0, first
        b.screenshot(artifact("dashboard-1.png"))

        # more load, two seconds on: the charts move
        load(s, hot=60, others=5, web=50)
        s.advance(2000)
        b.wait(f"(s => s.deny > {first['deny']} && s.allow > {first['allow']})(Object.fromEntries("
               "[...document.querySelectorAll('#chart-decisions path')]"
               ".map(p => [p.dataset.series, Number(p.dataset.sum)])))")
        second = chart_sums(b)
        assert second["deny"] > first["deny"] and second["allow"] > first["allow"], second
        b.screenshot(artifact("dashboard-2.png"))
        with open(artifact("dashboard-1.png"), "rb") as f1, open(artifact("dashboard-2.png"), "rb") as f2:
            assert f1.read() != f2.read()
        # the rules show their current rates
        assert b.eval("document.querySelector('#rules tr[data-path=\"api.user\"]').textContent")

        # reset this key: the next check is allowed
        assert check(s, "api", "user", "mallory")[0] == 429
        b.click('#top-keys tr[data-key="user=mallory"] button.reset-key')
        b.wait("document.getElementById('last-action').textContent.startsWith('reset api user=mallory')")
        status, body = check(s, "api", "user", "mallory")
        assert status == 200 and body["decision"] == "allow", body

        # shadow this domain: a denial becomes a shadow denial
        for _ in range(2):
            check(s, "api", "user", "mallory")
        assert check(s, "api", "user", "mallory")[0] == 429
        b.click('#rules button.shadow-domain[data-domain="api"]')
        b.wait("(document.querySelector('#switches tr[data-domain=\"api\"]') || {}).textContent"
               " === 'apishadowenforce'")
        status, body = check(s, "api", "user", "mallory")
        assert status == 200 and body["decision"] == "allow", body
        _, _, switches = s.json("GET", "/v1/killswitch", headers=AUTH, port=s.admin_port)
        assert switches["switches"] == [{"domain": "api", "mode": "shadow"}]
        s.advance(1000)
        b.wait("document.querySelector('#chart-decisions path.shadow').dataset.sum > 0")
        b.screenshot(artifact("dashboard-3-shadow.png"))
    finally:
        b.close()

    # sluice top --once --json against the same load
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    r = sluice("top", "--server", ui, "--token-file", str(token_file), "--once", "--json")
    assert r.returncode == 0, r.stderr
    view = json.loads(r.stdout)
    limits = {(l["domain"], l["limit"]): l for l in view["limits"]}
    api = limits[("api", "api.user")]
    assert api["top"][0]["key"] == "user=mallory" and api["top"][0]["count"] >= 100
    assert api["total"]["deny"] >= 100 and api["total"]["shadow_deny"] >= 1
    assert limits[("web", "web.ip")]["total"]["deny"] == 0
    assert limits[("web", "web.ip")]["total"]["allow"] == 3 * 30 + 50
    assert view["store"]["type"] == "memory" and view["store"]["ready"] is True
    assert view["killswitches"] == [{"domain": "api", "mode": "shadow"}]
    assert sluice("top", "--server", ui, "--once", "--json").returncode == 1  # no token: 401

    # the terminal view, once, in tmux
    sock = f"sluice-top-{os.getpid()}"
    cmd = f"{os.environ['SLUICE_CLI']} top --server {ui} --token-file {token_file}"
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "120", "-y", "40", cmd],
                   check=True, timeout=10)
    try:
        screen = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "user=mallory" not in screen:
            time.sleep(0.2)
            screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p"],
                                    capture_output=True, text=True, timeout=10).stdout
        with open(artifact("sluice-top.txt"), "w") as f:
            f.write(screen)
        assert "sluice top - " + ui in screen
        assert "store memory ready" in screen
        assert "api / api.user" in screen and "web / web.ip" in screen
        row = next(line for line in screen.splitlines() if "user=mallory" in line)
        assert int(row.split()[0]) >= 100
        assert "kill switches: api=shadow" in screen
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], timeout=10)
