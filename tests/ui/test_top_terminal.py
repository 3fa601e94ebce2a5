# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_top_terminal.py - `sluice top` in an 80 x 24 terminal (tmux): with
more limits and limited keys than the screen holds, every line fits the
width (none wraps), the heading and the kill switches stay on the screen,
and what is left out is counted ("... and N more"). sluiced runs with the
test clock, under a bounded generated load.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from conftest_http import http_sluiced  # noqa: E402,F401 (fixture)

TOKEN = "top-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
N_LIMITS = 30
RULES = "domain: a-rather-long-domain-name-for-the-width\ndescriptors:\n" + "".join(
    f"  - key: key_with_a_long_name_{i}\n    rate_limit: {{unit: minute, requests_per_unit: 1}}\n"
    for i in range(N_LIMITS))


def test_top_fits_80_by_24(http_sluiced, tmp_path):
    s = http_sluiced(rules=RULES, admin=True, extra=f"admin:\n  token: {TOKEN}\n")
    s.admin_headers = AUTH
    for i in range(N_LIMITS):
        for v in range(2):
            for _ in range(3):  # 2 of 3 denied: each key is a limited one
                status, _, _ = s.json("POST", "/v1/check", {
                    "domain": "a-rather-long-domain-name-for-the-width",
                    "descriptors": [{f"key_with_a_long_name_{i}": f"value-{v}-" + "x" * 40}]})
                assert status in (200, 429)
    s.advance(1000)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    ui = f"http://127.0.0.1:{s.admin_port}"
    sock = f"sluice-top80-{os.getpid()}"
    cmd = f"{os.environ['SLUICE_CLI']} top --server {ui} --token-file {token_file}"
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "80", "-y", "24", cmd],
                   check=True, timeout=10)
    try:
        screen = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "kill switches:" not in screen:
            time.sleep(0.2)
            # -J joins wrapped lines: a line too wide shows as one long line
            screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-J"],
                                    capture_output=True, text=True, timeout=10).stdout
        lines = screen.rstrip("\n").split("\n")
        assert lines[0].startswith("sluice top - " + ui), screen  # nothing scrolled away
        assert "kill switches: none" in screen, screen
        assert all(len(line) < 80 for line in lines), [l for l in lines if len(l) >= 80]
        assert len(lines) <= 24, screen
        assert "more limits" in screen and "more keys" in screen, screen
        assert "DOMAIN / LIMIT" in screen and "TOP LIMITED KEYS" in screen
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], timeout=10)
