# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_readme.py - README.md's examples, run as written against the
server `make run` starts, so that the README stays true.

The server is started as scripts/run.sh starts it (the built sluiced with
examples/sluice.yaml and examples/rules/, the admin token created beside
the configuration), from a copy of examples/ whose ports are free ones:
6390, 6391 (the proxy) and 6399 (the Redis module's example) are replaced
by free ports in the configuration and in the commands alike, the token's
path by the copy's, `build/` by the build tree. Every block the README
marks `<!-- runnable expect="REGEX" -->` is run with bash from the source
tree; it must exit 0 and its output match REGEX. Blocks that install,
use sudo or systemd are never marked. Each way to use Sluice the README
lists has its runnable block.
"""
import os
import re
import signal
import subprocess
import time

from conftest import free_port

SRC = os.environ["SLUICE_SOURCE"]
SLUICED = os.environ["SLUICED"]
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(SLUICED)))  # <build>/server/sluiced
CC = os.environ.get("SLUICE_README_CC", "cc")

MARK = re.compile(r'<!-- runnable expect="((?:[^"\\]|\\.)*)" -->\n\s*```sh\n(.*?)\n\s*```', re.S)


def unescape(s):
    return re.sub(r"\\(.)", lambda m: {"n": "\n", '"': '"', "\\": "\\"}.get(m.group(1),
                                                                           "\\" + m.group(1)), s)


def blocks():
    with open(os.path.join(SRC, "README.md")) as f:
        text = f.read()
    out = []
    for m in MARK.finditer(text):
        body = "\n".join(line.strip() for line in m.group(2).split("\n"))
        out.append((unescape(m.group(1)), body, text[:m.start()].count("\n") + 1))
    ways = text.split("## Ways to use it", 1)[1].split("\n## ", 1)[0]
    return out, len(MARK.findall(ways)), ways.count("\n- **")


def test_the_readme_runs(tmp_path):
    found, in_ways, n_ways = blocks()
    assert len(found) >= 8, "the README's runnable examples were lost"
    assert n_ways >= 6 and in_ways == n_ways, "a way to use Sluice without its runnable example"
    for _, body, line in found:
        assert not re.search(r"\b(sudo|systemctl|apt|apt-get|make)\b", body), \
            f"README.md:{line}: a block that installs or needs root is marked runnable"

    ports = {"6390": free_port(), "6391": free_port(), "6399": free_port()}
    run = tmp_path / "run"
    run.mkdir()
    (run / "rules").mkdir()
    for name in os.listdir(os.path.join(SRC, "examples", "rules")):
        with open(os.path.join(SRC, "examples", "rules", name)) as f:
            (run / "rules" / name).write_text(f.read())
    with open(os.path.join(SRC, "examples", "sluice.yaml")) as f:
        cfg = f.read()
    for old, new in ports.items():
        cfg = cfg.replace(f"port: {old}", f"port: {new}").replace(f":{old}", f":{new}")
    (run / "sluice.yaml").write_text(cfg)
    pid = tmp_path / "redis.pid"

    def fill(body):
        body = body.replace("build/run/admin.token", str(run / "admin.token"))
        body = body.replace('"$PWD/build/run/redis.pid"', str(pid))
        body = body.replace('"$PWD/build/', '"' + BUILD + "/")
        body = re.sub(r"(?<![\w/.-])build/", BUILD + "/", body)
        body = re.sub(r"^cc ", CC + " ", body, flags=re.M)
        if os.environ.get("SL_REDIS_PRELOAD"):  # the sanitizer build's module
            body = re.sub(r"^redis-server ", f"LD_PRELOAD={os.environ['SL_REDIS_PRELOAD']} redis-server ",
                          body, flags=re.M)
        for old, new in ports.items():
            body = re.sub(rf"\b{old}\b", str(new), body)
        return body

    log = open(tmp_path / "sluiced.log", "w")
    proc = subprocess.Popen([SLUICED, "-c", str(run / "sluice.yaml")], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = subprocess.run(["redis-cli", "-p", str(ports["6390"]), "PING"],
                               capture_output=True, text=True)
            if r.stdout.strip() == "PONG" and (run / "admin.token").exists():
                break
            assert proc.poll() is None, (tmp_path / "sluiced.log").read_text()
            time.sleep(0.05)
        for expect, body, line in found:
            r = subprocess.run(["bash", "-c", "set -eo pipefail\n" + fill(body)], cwd=SRC,
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, f"README.md:{line}: exit {r.returncode}\n{body}\n{r.stderr}"
            assert re.search(expect, r.stdout, re.S), \
                f"README.md:{line}: the output does not match {expect!r}:\n{r.stdout}"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(10)
        log.close()
        if pid.exists():
            try:
                os.kill(int(pid.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
