# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_rules_dirs.py - rules.directories against the real sluiced, its
directory laid out as Kubernetes mounts a ConfigMap (every key a link
"a.yaml -> ..data/a.yaml", "..data" a link to a hidden timestamped
directory) and updated as the kubelet updates it: a new timestamped
directory, a "..data_tmp" link to it renamed over "..data", the old
directory removed.

- While a client sends checks without pause, generation after generation
  is swapped in: every answer comes from one generation's rules (each
  generation's limits are its own numbers), none fails, each swap is one
  reload, and at every look the loaded rules (GET /rlconfig, one snapshot)
  and the files GET /v1/config lists are all of one generation;
- a generation with a broken file is refused whole, with the file's
  line and column logged; the previous rules keep serving;
- a key added or removed (a file linked or unlinked), and a plain file
  written into, changed in or removed from the directory, reload; a
  directory removed and made anew is watched again;
- `sluice check -c` checks the directory's files;
- envoyproxy/ratelimit's own example directory (envoy_ratelimit/config,
  copied unchanged) loads and decides as it says.

Reloads are counted and waited for, never timed.
"""
import http.client
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

from conftest import wait_for
from conftest_http import http_sluiced  # noqa: F401 (fixture)
from test_rules_files import metrics

EXAMPLES = Path(__file__).parent / "envoy_ratelimit" / "config"


def gen_files(g, broken=False, extra=None):
    """Generation g: a.yaml's domain alpha allows 100000 + g an hour,
    b.yaml's beta 200000 + g; `extra`: more {name: text}."""
    files = {
        "a.yaml": f"domain: alpha\ndescriptors:\n  - key: k\n"
                  f"    rate_limit: {{unit: hour, requests_per_unit: {100000 + g}}}\n",
        "b.yaml": f"domain: beta\ndescriptors:\n  - key: k\n"
                  f"    rate_limit: {{unit: hour, requests_per_unit: {200000 + g}}}\n",
    }
    if broken:
        files["b.yaml"] = "domain: beta\ndescriptors:\n  - key: k\n    colour: red\n"
    files.update(extra or {})
    return files


class ConfigMap:
    """A directory as the kubelet keeps a mounted ConfigMap."""

    def __init__(self, path):
        self.path = path
        self.path.mkdir()
        self.gen = None
        self.keys = set()

    def swap(self, g, files):
        """Publish generation g holding `files` ({key: text}) as the kubelet
        does; returns the new timestamped directory's name."""
        ts = f"..2026_12_02_10_00_00.{g:06d}"
        new = self.path / ts
        new.mkdir()
        for name, text in files.items():
            (new / name).write_text(text)
        tmp = self.path / "..data_tmp"
        os.symlink(ts, tmp)
        os.rename(tmp, self.path / "..data")
        for name in files.keys() - self.keys:  # new keys get their link
            os.symlink(f"..data/{name}", self.path / name)
        for name in self.keys - files.keys():  # removed keys lose theirs
            os.remove(self.path / name)
        self.keys = set(files)
        if self.gen is not None:
            shutil.rmtree(self.path / self.gen)
        self.gen = ts
        return ts


def start(http_sluiced, tmp_path, g=1, **files_kw):
    cm = ConfigMap(tmp_path / "cm")
    cm.swap(g, gen_files(g, **files_kw))
    s = http_sluiced(rules={}, watch=True, workers=2,
                     rules_extra=f"  directories: [{cm.path}]\n  debounce: 100ms")
    return s, cm


def rlconfig(s):
    """{domain: requests_per_unit} of the rules serving (one snapshot)."""
    status, _, body = s.request("GET", "/rlconfig")
    assert status == 200
    out = {}
    for line in body.decode().splitlines():
        m = re.match(r"(\w+)\.\S+: unit=\w+ requests_per_unit=(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def generation_of(limits):
    """The one generation the loaded rules are of (they never mix)."""
    ga, gb = limits["alpha"] - 100000, limits["beta"] - 200000
    assert ga == gb, f"a mixture of generations: {limits}"
    return ga


def listed_targets(s):
    status, _, cfg = s.json("GET", "/v1/config")
    assert status == 200
    (d,) = cfg["rules"]["directories"]
    return d["path"], [(f["name"], f["target"]) for f in d["files"]]


class Client(threading.Thread):
    """Checks alpha and beta in turn on one keep-alive connection until
    told to stop; records each answer's (domain, quota), and errors."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.answers = []
        self.errors = []

    def run(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        i = 0
        while not self.stop.is_set() and not self.errors:
            domain = "alpha" if i % 2 == 0 else "beta"
            i += 1
            try:
                c.request("POST", "/v1/check",
                          body=json.dumps({"domain": domain, "descriptors": [{"k": "x"}]}),
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                body = json.loads(r.read())
                st = body["statuses"][0]
                if r.status != 200 or st["decision"] != "allow" or st["limit"] is None:
                    self.errors.append((r.status, body))
                else:
                    self.answers.append((domain, st["quota"]))
            except (OSError, http.client.HTTPException, ValueError) as e:
                self.errors.append(repr(e))
        c.close()


def test_configmap_swaps_under_load_never_mix(http_sluiced, tmp_path):
    s, cm = start(http_sluiced, tmp_path)
    assert generation_of(rlconfig(s)) == 1
    client = Client(s.port)
    client.start()
    swaps = 12
    try:
        for g in range(2, 2 + swaps):
            before = metrics(s)["sluice_reloads_total"]
            ts = cm.swap(g, gen_files(g))
            assert wait_for(lambda: generation_of(rlconfig(s)) == g, timeout=30), \
                s.log_text()[-3000:]
            # the listing names the files of the generation read
            assert wait_for(lambda: all(ts in t for _, t in listed_targets(s)[1]),
                            timeout=30)
            path, files = listed_targets(s)
            assert path == str(cm.path)
            assert [n for n, _ in files] == ["a.yaml", "b.yaml"]
            # one swap, one reload (hidden entries' events are no reason);
            # the count grows just after the rules are published
            assert wait_for(lambda: metrics(s)["sluice_reloads_total"] >= before + 1)
            assert metrics(s)["sluice_reloads_total"] == before + 1
    finally:
        client.stop.set()
        client.join(timeout=30)
    assert not client.errors, client.errors[:3]
    assert len(client.answers) > 0
    # every answer is one generation's own number for its domain
    gens = set()
    for domain, quota in client.answers:
        g = quota - (100000 if domain == "alpha" else 200000)
        assert 1 <= g <= 1 + swaps, (domain, quota)
        gens.add(g)
    assert len(gens) > 1  # the answers crossed swaps
    m = metrics(s)
    assert m["sluice_reload_failures_total"] == 0
    assert m["sluice_reloads_total"] == swaps
    assert "rules.reloaded rules: reloaded on file change" in s.log_text()


def test_broken_generation_is_refused_whole(http_sluiced, tmp_path):
    s, cm = start(http_sluiced, tmp_path)
    assert generation_of(rlconfig(s)) == 1
    cm.swap(2, gen_files(2, broken=True))
    assert wait_for(lambda: metrics(s).get("sluice_reload_failures_total", 0) == 1,
                    timeout=30), s.log_text()[-3000:]
    log = s.log_text()
    assert f"{cm.path}/b.yaml:4:5: unknown key 'colour'" in log, log[-3000:]
    assert "the previous rules keep serving" in log
    # generation 1, a.yaml included, keeps serving: nothing of 2 was taken
    assert rlconfig(s) == {"alpha": 100001, "beta": 200001}
    status, _, body = s.json("POST", "/v1/check",
                             {"domain": "alpha", "descriptors": [{"k": "x"}]})
    assert status == 200 and body["statuses"][0]["quota"] == 100001
    # an emptied file is refused the same way
    cm.swap(3, gen_files(3, extra={"b.yaml": ""}))
    assert wait_for(lambda: metrics(s).get("sluice_reload_failures_total", 0) == 2,
                    timeout=30), s.log_text()[-3000:]
    assert "b.yaml:1:1: the rules file holds no rules" in s.log_text()
    assert rlconfig(s) == {"alpha": 100001, "beta": 200001}
    # the next good generation loads
    cm.swap(4, gen_files(4))
    assert wait_for(lambda: rlconfig(s) == {"alpha": 100004, "beta": 200004}, timeout=30)
    assert metrics(s)["sluice_reloads_total"] == 1


GAMMA = "domain: gamma\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 7}\n"


def test_files_added_and_removed_reload(http_sluiced, tmp_path):
    s, cm = start(http_sluiced, tmp_path)
    # a ConfigMap key added: its file is linked after the swap
    cm.swap(2, gen_files(2, extra={"c.yaml": GAMMA}))
    assert wait_for(lambda: rlconfig(s).get("gamma") == 7, timeout=30), s.log_text()[-3000:]
    assert [n for n, _ in listed_targets(s)[1]] == ["a.yaml", "b.yaml", "c.yaml"]
    # and removed again: its link goes
    cm.swap(3, gen_files(3))
    assert wait_for(lambda: "gamma" not in rlconfig(s), timeout=30), s.log_text()[-3000:]
    assert generation_of(rlconfig(s)) == 3
    # a plain file written into the directory, then removed; hidden and
    # other files are no rules
    (cm.path / ".hidden.yaml").write_text("not: [yaml")
    (cm.path / "notes.txt").write_text("not rules")
    (cm.path / "d.yml").write_text(GAMMA.replace("gamma", "delta"))
    assert wait_for(lambda: rlconfig(s).get("delta") == 7, timeout=30), s.log_text()[-3000:]
    (cm.path / "d.yml").write_text(GAMMA.replace("gamma", "delta").replace(": 7", ": 8"))
    assert wait_for(lambda: rlconfig(s).get("delta") == 8, timeout=30), s.log_text()[-3000:]
    os.remove(cm.path / "d.yml")
    assert wait_for(lambda: "delta" not in rlconfig(s), timeout=30), s.log_text()[-3000:]
    m = metrics(s)
    assert m["sluice_reload_failures_total"] == 0
    # the same domain in a file of the directory and in another is refused
    # as it is for two files
    (cm.path / "e.yaml").write_text(gen_files(9)["a.yaml"])
    assert wait_for(lambda: metrics(s).get("sluice_reload_failures_total", 0) == 1,
                    timeout=30), s.log_text()[-3000:]
    assert "domain 'alpha' is already defined at" in s.log_text()
    assert generation_of(rlconfig(s)) == 3


def test_sluice_check_reads_the_directory(tmp_path):
    cm = ConfigMap(tmp_path / "cm")
    cm.swap(1, gen_files(1))
    cfg = tmp_path / "sluice.yaml"
    cfg.write_text("listeners:\n  - {address: 127.0.0.1, port: 6390, protocols: [http1]}\n"
                   "rules:\n  directories: [cm]\n")
    cli = os.environ["SLUICE_CLI"]
    r = subprocess.run([cli, "check", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    assert "ok: configuration" in r.stdout
    # the sources it read: the directory and its files
    assert f"rules directory {tmp_path}/cm: 2 files: a.yaml, b.yaml\n" in r.stdout, r.stdout
    cm.swap(2, gen_files(2, broken=True))
    r = subprocess.run([cli, "check", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    assert f"{tmp_path}/cm/b.yaml:4:5: unknown key 'colour'" in r.stderr, r.stderr
    # a directory that does not exist is named
    cfg.write_text("rules:\n  directories: [nowhere]\n")
    r = subprocess.run([cli, "check", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    assert f"{tmp_path}/nowhere:1:1: cannot open rules directory" in r.stderr, r.stderr


def check(s, domain, *entries):
    status, _, body = s.json("POST", "/v1/check",
                             {"domain": domain, "descriptors": [dict(entries)]})
    st = body["statuses"][0]
    return status, st["quota"] if st["limit"] is not None else None


def test_envoy_ratelimit_example_directory(http_sluiced, tmp_path):
    # the files as envoyproxy/ratelimit ships them, in a copy of the directory
    d = tmp_path / "ratelimit" / "config"
    shutil.copytree(EXAMPLES, d)
    for f in EXAMPLES.iterdir():
        assert (d / f.name).read_bytes() == f.read_bytes()
    s = http_sluiced(rules={}, rules_extra=f"  directories: [{d}]")
    status, _, cfg = s.json("GET", "/v1/config")
    assert status == 200
    assert [f["name"] for f in cfg["rules"]["directories"][0]["files"]] == \
        ["config.yaml", "example.yaml"]
    # config.yaml: mongo_cps database=users, 500 a second
    assert check(s, "mongo_cps", ("database", "users")) == (200, 500)
    # example.yaml: rl category=account, 4 a minute (the test clock stands still)
    for _ in range(4):
        assert check(s, "rl", ("category", "account")) == (200, 4)
    assert check(s, "rl", ("category", "account"))[0] == 429
    # source_cluster=proxy, destination_cluster=mock: 1 a minute
    assert check(s, "rl", ("source_cluster", "proxy"), ("destination_cluster", "mock")) == (200, 1)
    assert check(s, "rl", ("source_cluster", "proxy"),
                 ("destination_cluster", "mock"))[0] == 429
    # foo, bar=banned: requests_per_unit 0, every request denied
    assert check(s, "rl", ("foo", "x"), ("bar", "banned"))[0] == 429
    # qux: unlimited
    for _ in range(10):
        assert check(s, "rl", ("qux", "anything"))[0] == 200
    # foo alone: 2 a minute
    assert check(s, "rl", ("foo", "y")) == (200, 2)
    assert check(s, "rl", ("foo", "y")) == (200, 2)
    assert check(s, "rl", ("foo", "y"))[0] == 429


def test_directory_replaced_is_watched_anew(http_sluiced, tmp_path):
    s, cm = start(http_sluiced, tmp_path)
    # the directory removed and made again (a new inode): seen through its
    # parent's watch, and watched itself again after the reload
    shutil.rmtree(cm.path)
    cm.path.mkdir()
    for name, text in gen_files(5).items():
        (cm.path / name).write_text(text)
    assert wait_for(lambda: generation_of(rlconfig(s)) == 5, timeout=30), s.log_text()[-3000:]
    (cm.path / "d.yml").write_text(GAMMA.replace("gamma", "delta"))
    assert wait_for(lambda: rlconfig(s).get("delta") == 7, timeout=30), s.log_text()[-3000:]
    assert metrics(s)["sluice_reload_failures_total"] == 0
