# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_calls.py - the call-cycle check (calls.py) fails on a cycle among
the proxy's files, naming the files and the symbols that make it, and
passes once the cycle is broken (one side calling through a function
pointer it was given). Tiny C files are compiled with `cc -c` into a fake
build tree laid out as CMake lays out the daemon's objects."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = [sys.executable, os.path.join(HERE, "calls.py")]
OBJ = "server/CMakeFiles/sluiced_proxy.dir/proxy"
CORE = "server/CMakeFiles/sluiced_core.dir/core"
REDIS = "store/CMakeFiles/sluice_store.dir/redis"

A = "void b_run(void);\nvoid a_back(void) {}\nvoid a_run(void) { b_run(); }\n"
B_CYCLE = "void a_back(void);\nvoid b_run(void) { a_back(); }\n"
# The way out: a_run hands b its callback; b names nothing of a.
A_CB = "void b_run(void (*cb)(void));\nstatic void back(void) {}\nvoid a_run(void) { b_run(back); }\n"
B_CB = "void b_run(void (*cb)(void)) { cb(); }\n"


def build(tmp_path, files):
    """Compile {path of the object under the build dir: C text}."""
    for rel, text in files.items():
        obj = tmp_path / rel
        obj.parent.mkdir(parents=True, exist_ok=True)
        src = obj.with_suffix("")  # x.c.o -> x.c, beside it
        src.write_text(text)
        subprocess.run(["cc", "-c", "-o", str(obj), str(src)], check=True)
    return tmp_path


def run(build_dir):
    return subprocess.run(CHECK + [str(build_dir)], capture_output=True, text=True)


def test_a_cycle_between_two_proxy_files_fails(tmp_path):
    r = run(build(tmp_path, {f"{OBJ}/a.c.o": A, f"{OBJ}/b.c.o": B_CYCLE}))
    assert r.returncode == 1, r.stderr
    assert "a call cycle among the proxy's files" in r.stderr
    assert "server/proxy/a.c -> server/proxy/b.c (calls b_run)" in r.stderr
    assert "server/proxy/b.c -> server/proxy/a.c (calls a_back)" in r.stderr


def test_a_longer_cycle_names_every_file(tmp_path):
    files = {
        f"{OBJ}/a.c.o": "void b_run(void);\nvoid a_run(void) { b_run(); }\n",
        f"{OBJ}/b.c.o": "void c_run(void);\nvoid b_run(void) { c_run(); }\n",
        f"{OBJ}/c.c.o": "void a_run(void);\nvoid c_run(void) { a_run(); }\n",
    }
    r = run(build(tmp_path, files))
    assert r.returncode == 1, r.stderr
    for edge in ("a.c -> server/proxy/b.c", "b.c -> server/proxy/c.c", "c.c -> server/proxy/a.c"):
        assert edge in r.stderr


def test_the_cycle_broken_by_a_callback_passes(tmp_path):
    r = run(build(tmp_path, {f"{OBJ}/a.c.o": A_CB, f"{OBJ}/b.c.o": B_CB}))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""


def test_one_way_calls_pass_and_graph_lists_them(tmp_path):
    b = "void b_run(void) {}\n"
    d = build(tmp_path, {f"{OBJ}/a.c.o": A.replace("void a_back(void) {}\n", ""), f"{OBJ}/b.c.o": b})
    r = subprocess.run(CHECK + [str(d), "--graph"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "server/proxy/a.c -> server/proxy/b.c (b_run)" in r.stdout


def test_a_cycle_outside_the_checked_groups_is_not_reported(tmp_path):
    r = run(build(tmp_path, {f"{CORE}/a.c.o": A, f"{CORE}/b.c.o": B_CYCLE}))
    assert r.returncode == 0, r.stderr


def test_a_cycle_among_the_redis_store_files_fails(tmp_path):
    r = run(build(tmp_path, {f"{REDIS}/a.c.o": A, f"{REDIS}/link/b.c.o": B_CYCLE,
                             f"{OBJ}/c.c.o": "void c_run(void) {}\n"}))
    assert r.returncode == 1, r.stderr
    assert "a call cycle among the Redis store's files" in r.stderr
    assert "store/redis/a.c -> store/redis/link/b.c (calls b_run)" in r.stderr


def test_the_redis_store_cycle_broken_by_a_callback_passes(tmp_path):
    r = run(build(tmp_path, {f"{REDIS}/a.c.o": A_CB, f"{REDIS}/b.c.o": B_CB}))
    assert r.returncode == 0, r.stderr


def test_no_objects_is_an_error(tmp_path):
    r = run(tmp_path)
    assert r.returncode == 2
    assert "no daemon objects" in r.stderr
