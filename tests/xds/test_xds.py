# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_xds.py - rules from an xDS management server (rules.xds): a real
sluiced subscribed over ADS to tests/xds/server (go-control-plane's
snapshot cache, built here with `go build`), whose control port sets each
node's snapshot and tells what the nodes sent back (ACKs, NACKs).

Decisions are asked with the test clock (time stands still), so a limit
of N per minute allows exactly N. Skipped when Go is not installed.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "integration"))
from conftest import free_port  # noqa: E402
from conftest_tls import pki  # noqa: E402,F401

SLUICED = os.environ.get("SLUICED", "sluiced")
HERE = pathlib.Path(__file__).resolve().parent
START_MS = 1_700_000_000_000


def wait_until(pred, seconds=15.0, step=0.05):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


@pytest.fixture(scope="module")
def server_bin(tmp_path_factory):
    """The management server, built from tests/xds/server."""
    # scripts/go.sh: the Go on this machine, or the pinned release it fetches.
    r = subprocess.run([str(HERE.parent.parent / "scripts" / "go.sh")], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip("no Go toolchain: the xDS tests build their management server "
                    "(tests/xds/server) with `go build`: " + r.stderr.strip())
    go = r.stdout.strip()
    out_dir = pathlib.Path(os.environ.get("SLUICE_XDS_BUILD", tmp_path_factory.mktemp("xds")))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "xds-server"
    env = dict(os.environ, GOFLAGS="-mod=mod")
    r = subprocess.run([go, "build", "-o", str(out), "."], cwd=HERE / "server", env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"go build failed:\n{r.stderr}"
    return out


class XdsServer:
    def __init__(self, binary, tmp, ads_port=None, tls=None):
        self.log = open(tmp / "xds-server.log", "a")
        args = [str(binary)] + (["-ads-port", str(ads_port)] if ads_port else [])
        if tls:
            args += ["-tls-cert", tls[0], "-tls-key", tls[1]]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        ports = {}
        for _ in range(2):
            name, port = self.proc.stdout.readline().split()
            ports[name] = int(port)
        self.ads, self.control = ports["ads"], ports["control"]

    def set(self, version, nodes, configs):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.control}/snapshot?version={version}&nodes={','.join(nodes)}",
            data=json.dumps(configs).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 200

    def requests(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.control}/requests",
                                    timeout=5) as r:
            return json.loads(r.read()) or []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.log.close()


class Sluiced:
    def __init__(self, tmp, name, ads_port, node, files=None, tls="", db=None):
        self.tmp, self.name = tmp, name
        self.http = free_port()
        rules = f"  xds: {{server: '127.0.0.1:{ads_port}', node_id: {node}, backoff: 50ms, " \
                f"max_backoff: 400ms{tls}}}\n"
        if files:
            names = []
            for fname, text in files.items():
                (tmp / fname).write_text(text)
                names.append(fname)
            rules += f"  files: [{', '.join(names)}]\n"
        if db:
            rules += f"  database: {db}\n"
        self.cfg = tmp / f"{name}.yaml"
        self.cfg.write_text(f"""listeners:
  - {{address: 127.0.0.1, port: {self.http}, protocols: [http1]}}
workers: 1
rules:
{rules}log: {{level: info}}
admin: {{token_file: {name}.token}}
""")
        self.log = open(tmp / f"{name}.log", "a")
        self.proc = subprocess.Popen([SLUICED, "-c", str(self.cfg), "--test-clock",
                                      str(START_MS)], stderr=self.log)
        assert wait_until(self.alive), f"sluiced {name} did not start"

    def alive(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/readyz", timeout=1):
                return True
        except Exception:
            return False

    def admin(self, path):
        token = (self.tmp / f"{self.name}.token").read_text().split()[0]
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.read().decode()

    def xds(self):
        return json.loads(self.admin("/v1/stats"))["xds"]

    def metric(self, line_start):
        for line in self.admin("/metrics").splitlines():
            if line.startswith(line_start + " "):
                return float(line.split()[1])
        raise AssertionError(f"{line_start} not in /metrics")

    def check(self, domain, key, value):
        body = json.dumps({"domain": domain, "descriptors": [{key: value}]}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}/v1/check", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return json.loads(r.read())["decision"]
        except urllib.error.HTTPError as e:
            return json.loads(e.read())["decision"]

    def allowed(self, domain, key, value, tries):
        """How many of `tries` checks are allowed (time stands still)."""
        return sum(self.check(domain, key, value) == "allow" for _ in range(tries))

    def wait_version(self, version):
        assert wait_until(lambda: self.xds()["version"] == version), \
            f"{self.name} never applied {version}: {self.xds()}"

    def log_text(self):
        return (self.tmp / f"{self.name}.log").read_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.log.close()
        return self.proc.returncode


def config(domain, key, per_minute, name=None, unit="MINUTE"):
    rl = {"requests_per_unit": per_minute}
    if unit is not None:
        rl["unit"] = unit
    return {"name": name or domain, "domain": domain,
            "descriptors": [{"key": key, "rate_limit": rl}]}


@pytest.fixture
def servers(tmp_path):
    started = []
    yield started
    for s in reversed(started):
        s.stop()


def test_apply_update_nack_and_restart(server_bin, tmp_path, servers):
    xs = XdsServer(server_bin, tmp_path)
    servers.append(xs)
    xs.set("v1", ["n1"], [config("web", "user", 3)])
    sl = Sluiced(tmp_path, "a", xs.ads, "n1")
    servers.append(sl)
    sl.wait_version("v1")
    st = sl.xds()
    assert st["connected"] is True and st["resources"] == 1 and st["last_error"] is None
    assert sl.allowed("web", "user", "alice", 5) == 3
    assert any(r["version"] == "v1" and r["nonce"] and "error" not in r
               for r in xs.requests()), "no ACK of v1"

    # an update: a new limit and a second domain
    xs.set("v2", ["n1"], [config("web", "user", 5), config("api", "path", 1)])
    sl.wait_version("v2")
    assert sl.allowed("web", "user", "bob", 7) == 5
    assert sl.allowed("api", "path", "/x", 3) == 1
    assert sl.metric('sluice_xds_updates_total{result="ack"}') == 2

    # an invalid resource (no unit): NACKed with the loader's reason, and
    # v2 keeps serving
    xs.set("v3", ["n1"], [config("web", "user", 1, unit=None)])
    assert wait_until(lambda: any(r.get("error") for r in xs.requests()))
    nack = next(r for r in xs.requests() if r.get("error"))
    assert nack["version"] == "v2" and nack["code"] == 3 and nack["nonce"]
    assert "rate_limit needs a unit" in nack["error"]
    st = sl.xds()
    assert st["version"] == "v2" and "rate_limit needs a unit" in st["last_error"]
    assert sl.allowed("web", "user", "carol", 7) == 5
    assert "xds.rejected" in sl.log_text()

    # the server goes away: the rules keep serving; a new server on the
    # same port with a newer snapshot is found again
    ads = xs.ads
    xs.stop()
    servers.remove(xs)
    assert wait_until(lambda: sl.xds()["connected"] is False)
    assert sl.allowed("web", "user", "dave", 7) == 5
    assert "xds.lost" in sl.log_text()
    xs2 = XdsServer(server_bin, tmp_path, ads_port=ads)
    servers.append(xs2)
    xs2.set("v4", ["n1"], [config("web", "user", 2)])
    sl.wait_version("v4")
    assert sl.xds()["connected"] is True
    assert sl.allowed("web", "user", "erin", 4) == 2
    assert sl.metric("sluice_xds_disconnects_total") >= 1
    assert sl.stop() == 0


def test_two_instances_converge(server_bin, tmp_path, servers):
    xs = XdsServer(server_bin, tmp_path)
    servers.append(xs)
    xs.set("v1", ["n1", "n2"], [config("web", "user", 2)])
    a = Sluiced(tmp_path, "a", xs.ads, "n1")
    servers.append(a)
    b = Sluiced(tmp_path, "b", xs.ads, "n2")
    servers.append(b)
    a.wait_version("v1")
    b.wait_version("v1")
    xs.set("v2", ["n1", "n2"], [config("web", "user", 4)])
    a.wait_version("v2")
    b.wait_version("v2")
    assert a.allowed("web", "user", "x", 6) == 4
    assert b.allowed("web", "user", "x", 6) == 4
    acked = {(r["node"], r["version"]) for r in xs.requests() if r["nonce"] and "error" not in r}
    assert {("n1", "v2"), ("n2", "v2")} <= acked


def test_domain_in_file_and_xds_is_refused(server_bin, tmp_path, servers):
    xs = XdsServer(server_bin, tmp_path)
    servers.append(xs)
    sl = Sluiced(tmp_path, "a", xs.ads, "n1", files={"web.yaml": """domain: web
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
"""})
    servers.append(sl)
    xs.set("v1", ["n1"], [config("web", "user", 10), config("api", "path", 1)])
    assert wait_until(lambda: sl.xds()["last_error"] is not None)
    st = sl.xds()
    assert st["version"] is None
    assert "domain 'web' is already defined at" in st["last_error"]
    assert "web.yaml" in st["last_error"]
    nack = next(r for r in xs.requests() if r.get("error"))
    assert "domain 'web' is already defined" in nack["error"] and nack["version"] == ""
    # the file's rules keep serving; nothing of the refused version does
    assert sl.allowed("web", "user", "x", 3) == 1
    assert sl.allowed("api", "path", "/x", 3) == 3

    # without the clash it applies, and a reload of the files keeps it
    xs.set("v2", ["n1"], [config("api", "path", 2)])
    sl.wait_version("v2")
    assert sl.allowed("api", "path", "/y", 1) == 1
    sl.proc.send_signal(signal.SIGHUP)
    assert wait_until(lambda: sl.metric("sluice_reloads_total") >= 2)
    assert sl.allowed("api", "path", "/y", 3) == 1  # same limit, its count kept
    assert sl.allowed("web", "user", "y", 3) == 1


def test_database_wins_over_xds(server_bin, tmp_path, servers):
    db = tmp_path / "rules.db"
    (tmp_path / "row.yaml").write_text("""domain: api
descriptors:
  - key: path
    rate_limit: {unit: minute, requests_per_unit: 4}
""")
    r = subprocess.run([os.environ.get("SLUICE_CLI", "sluice"), "rules", "add", "--db", str(db),
                        "--id", "api-path", str(tmp_path / "row.yaml")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    xs = XdsServer(server_bin, tmp_path)
    servers.append(xs)
    xs.set("v1", ["n1"], [{"name": "api", "domain": "api", "descriptors": [
        {"key": "path", "rate_limit": {"unit": "MINUTE", "requests_per_unit": 1}},
        {"key": "user", "rate_limit": {"unit": "MINUTE", "requests_per_unit": 2}}]}])
    sl = Sluiced(tmp_path, "a", xs.ads, "n1", db=db)
    servers.append(sl)
    sl.wait_version("v1")
    assert sl.allowed("api", "path", "/x", 6) == 4  # the database's limit
    assert sl.allowed("api", "user", "u", 4) == 2  # xDS's, where the database says nothing


def test_config_errors(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("rules:\n  xds: {server: 'nohost'}\n")
    r = subprocess.run([SLUICED, "-t", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode != 0
    assert "rules.xds.server is host:port" in r.stderr + r.stdout
    assert "rules.xds.node_id is needed" in r.stderr + r.stdout


def test_tls_to_the_server(server_bin, tmp_path, servers, pki):
    xs = XdsServer(server_bin, tmp_path, tls=(pki.path("server.pem"), pki.path("server.key")))
    servers.append(xs)
    xs.set("v1", ["n1", "n2"], [config("web", "user", 2)])
    good = Sluiced(tmp_path, "good", xs.ads, "n1",
                   tls=f", tls: {{ca_file: {pki.path('ca.pem')}}}")
    servers.append(good)
    good.wait_version("v1")
    assert good.allowed("web", "user", "x", 4) == 2
    # a server whose certificate does not chain to ca_file is refused
    bad = Sluiced(tmp_path, "bad", xs.ads, "n2",
                  tls=f", tls: {{ca_file: {pki.path('other_ca.pem')}}}")
    servers.append(bad)
    assert wait_until(lambda: "certificate not trusted" in bad.log_text())
    assert bad.xds()["connected"] is False and bad.xds()["version"] is None
    assert all(r["node"] != "n2" for r in xs.requests())


def test_config_unknown_key_and_bad_tls_file(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("rules:\n  xds: {server: '127.0.0.1:1', node_id: a, bogus: 1,\n"
                   "        tls: {ca_file: missing-ca.pem}}\n")
    r = subprocess.run([SLUICED, "-t", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    out = r.stderr + r.stdout
    assert r.returncode != 0
    assert "unknown key 'rules.xds.bogus'" in out
    assert "rules.xds.tls.ca_file: cannot read" in out
