# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_layers.py - the layer check (layers.py) passes on the tree and
fails, naming the file and line, on every kind of wrong-way include."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SLUICE_SOURCE", os.path.join(HERE, "..", ".."))
CHECK = [sys.executable, os.path.join(HERE, "layers.py")]


def run(root):
    return subprocess.run(CHECK + [str(root)], capture_output=True, text=True)


def tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


BASE = {
    "include/sluice.h": "",
    "lib/internal/sluice_int.h": "",
    "lib/table.c": '#include "sluice.h"\n#include "sluice_int.h"\n',
    "store/include/store.h": '#include "sluice.h"\n',
    "store/redis/redis.h": "",
    "server/core/conn.h": "",
    "server/core/decide.c": '#include "store.h"\n#include "conn.h"\n',
    "server/http/http1.h": '#include "conn.h"\n',
    "server/resp/resp.c": '#include "conn.h"\n',
}


def test_the_tree_passes():
    r = run(SOURCE)
    assert r.returncode == 0, r.stderr


def test_a_clean_fixture_passes(tmp_path):
    r = run(tree(tmp_path, BASE))
    assert r.returncode == 0, r.stderr


def test_lib_including_a_store_header_fails(tmp_path):
    files = dict(BASE)
    files["lib/limiter.c"] = '#include "sluice.h"\n\n#include "store.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert 'lib/limiter.c:3: lib/ may not include "store.h"' in r.stderr


def test_core_including_a_room_header_fails(tmp_path):
    files = dict(BASE)
    files["server/core/worker.c"] = '#include "http1.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert 'server/core/worker.c:1: server/core/ may not include "http1.h"' in r.stderr


def test_server_including_store_internals_fails(tmp_path):
    files = dict(BASE)
    files["server/core/worker.c"] = '#include "redis.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert "store/redis/redis.h" in r.stderr


def test_a_room_including_another_room_fails(tmp_path):
    files = dict(BASE)
    files["server/resp/resp_sl.c"] = '#include "http1.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert "server/resp/resp_sl.c:1" in r.stderr


def test_relative_includes_fail(tmp_path):
    files = dict(BASE)
    files["server/http/http_api.c"] = '#include "../../store/include/store.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert "by a relative path" in r.stderr
