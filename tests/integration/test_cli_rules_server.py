# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_cli_rules_server.py - `sluice rules add|ls|rm --server URL
--token-file F` changes the rules of a running sluiced through its admin
API: the change serves at once (no reload to send), a duplicate id names
--replace, a wrong token or an unknown id says so, a rule that does not
validate is refused before anything is sent; the request carries the
bearer token and Content-Type: application/json.
"""
import http.server
import json
import os
import subprocess
import threading

from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULE = """\
domain: shop
descriptors:
  - key: customer
    value: acme
    rate_limit: {unit: minute, requests_per_unit: 2, name: acme-plan}
"""
BIGGER = RULE.replace("requests_per_unit: 2", "requests_per_unit: 5")
TOKEN = "s3cret-admin-token"


def sluice(*args, stdin=None):
    return subprocess.run([os.environ["SLUICE_CLI"], "rules", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def quota(s):
    """The acme customer's quota as the running daemon sees it (None: no rule)."""
    _, _, body = s.json("POST", "/v1/check", {"domain": "shop",
                                              "descriptors": [{"customer": "acme"}], "hits": 0})
    return body["statuses"][0].get("quota")


def start_with_token(http_sluiced, tmp_path):
    s = http_sluiced(database=True, admin=True, extra=f"admin:\n  token: {TOKEN}\n")
    token = tmp_path / "admin.token"
    token.write_text(TOKEN + "\n")
    rule = tmp_path / "acme.yaml"
    rule.write_text(RULE)
    return s, f"http://127.0.0.1:{s.admin_port}", str(token), rule


def test_add_replace_ls_rm_apply_at_once(http_sluiced, tmp_path):
    s, url, token, rule = start_with_token(http_sluiced, tmp_path)
    assert quota(s) is None
    r = sluice("add", "--server", url, "--token-file", token, "--id", "acme", str(rule))
    assert r.returncode == 0, r.stderr
    assert "stored rule 'acme' (domain shop)" in r.stdout
    assert quota(s) == 2  # serving, without a SIGHUP

    r = sluice("add", "--server", url, "--token-file", token, "--id", "acme", str(rule))
    assert r.returncode == 1
    assert "rule 'acme' already exists" in r.stderr and "--replace" in r.stderr, r.stderr

    r = sluice("add", "--server", url + "/", "--token-file", token, "--id", "acme", "--replace",
               "-", stdin=BIGGER)
    assert r.returncode == 0, r.stderr
    assert quota(s) == 5

    r = sluice("ls", "--server", url, "--token-file", token)
    assert r.returncode == 0 and r.stdout.split("\t")[:2] == ["acme", "shop"], r.stdout

    r = sluice("rm", "--server", url, "--token-file", token, "acme")
    assert r.returncode == 0, r.stderr
    assert quota(s) is None
    r = sluice("rm", "--server", url, "--token-file", token, "acme")
    assert r.returncode == 1 and "has no rule 'acme'" in r.stderr, r.stderr


def test_refusals_say_why(http_sluiced, tmp_path):
    s, url, token, rule = start_with_token(http_sluiced, tmp_path)
    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-the-token\n")
    r = sluice("add", "--server", url, "--token-file", str(wrong), str(rule))
    assert r.returncode == 1 and "refused the admin token" in r.stderr, r.stderr
    r = sluice("add", "--server", url, str(rule))  # no token at all
    assert r.returncode == 1 and "--token-file" in r.stderr, r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(RULE.replace("unit: minute", "unit: fortnight"))
    r = sluice("add", "--server", url, "--token-file", token, str(bad))
    assert r.returncode == 1 and f"{bad}:5:24: invalid unit 'fortnight'" in r.stderr, r.stderr
    assert quota(s) is None
    r = sluice("ls", "--server", "http://127.0.0.1:1", "--token-file", token)
    assert r.returncode == 1 and "http://127.0.0.1:1" in r.stderr, r.stderr


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers like the admin API and keeps what it was sent."""
    seen = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Recorder.seen.append((self.command, self.path, dict(self.headers), body))
        out = json.dumps({"id": "acme", "applied": True, "published": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def test_the_request_is_json_with_a_bearer_token(tmp_path):
    srv = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        token = tmp_path / "t"
        token.write_text(TOKEN + "\r\n")
        rule = tmp_path / "acme.yaml"
        rule.write_text(RULE)
        r = sluice("add", "--server", f"http://127.0.0.1:{srv.server_port}", "--token-file",
                   str(token), "--id", "acme", str(rule))
        assert r.returncode == 0, r.stderr
        assert "published to the other nodes" in r.stdout
    finally:
        srv.shutdown()
    method, path, headers, body = Recorder.seen[0]
    assert (method, path) == ("POST", "/v1/rules")
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(body) == {"id": "acme", "yaml": RULE}


def test_usage(tmp_path):
    r = sluice("ls", "--server", "http://x", "--db", str(tmp_path / "x.db"))
    assert r.returncode == 2 and r.stderr.startswith("sluice rules: give --server URL or --db")
    r = sluice("ls", "--db", str(tmp_path / "x.db"), "--token-file", "t")
    assert r.returncode == 2 and "--token-file goes with --server" in r.stderr
