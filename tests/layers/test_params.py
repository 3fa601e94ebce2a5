# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_params.py - the parameter check (params.py) fails on a function of
store/ taking 7 parameters, declared or defined, naming it with its file
and line, and passes on 6; what is not a function (a function-pointer
type, a struct's member, a macro, a call inside a body) is not counted."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = [sys.executable, os.path.join(HERE, "params.py")]

SIX = "int six(int a, int b, int c, int d, int e, int f)"
SEVEN = "int seven(int a, int b, int c, int d, int e, int f, int g)"


def run(root, *extra):
    return subprocess.run(CHECK + [str(root), *extra], capture_output=True, text=True)


def tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_a_definition_of_seven_fails_and_is_named(tmp_path):
    body = f"#include <stdint.h>\n\n{SEVEN}\n{{\n    return a + b + c + d + e + f + g;\n}}\n"
    r = run(tree(tmp_path, {"store/redis/x.c": body}))
    assert r.returncode == 1, r.stderr
    assert "store/redis/x.c:3: seven takes 7 parameters" in r.stderr
    assert "1 function(s) with more than 6 parameters" in r.stderr


def test_a_declaration_of_seven_in_a_header_fails(tmp_path):
    decl = ("struct sl__x;\n/* a comment (int a, int b) */\n"
            "static inline int\nseven(const struct sl__x *x, int (*cb)(void *, int), void *arg,\n"
            "      const char *p, size_t n, uint64_t h[2], int *out);\n")
    r = run(tree(tmp_path, {"store/include/x.h": decl}))
    assert r.returncode == 1, r.stderr
    assert "store/include/x.h:4: seven takes 7 parameters" in r.stderr


def test_six_passes(tmp_path):
    files = {
        "store/x.h": f"{SIX};\nvoid none(void);\nint log_line(int a, int b, int c, int d, int e,"
                     " const char *fmt, ...) __attribute__((format(printf, 6, 7)));\n",
        "store/x.c": f'#include "x.h"\n{SIX}\n{{\n    return a + b + c + d + e + f;\n}}\n',
    }
    r = run(tree(tmp_path, files))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""


def test_what_is_not_a_function_is_not_counted(tmp_path):
    text = (
        "#define SEVEN(a, b, c, d, e, f, g) \\\n    ((a) + (b) + (c) + (d) + (e) + (f) + (g))\n"
        "typedef void (*cb7)(int a, int b, int c, int d, int e, int f, int g);\n"
        "struct s {\n    int (*seven)(int, int, int, int, int, int, int);\n};\n"
        "static const char *text = \"int seven(int a, int b, int c, int d, int e, int f, int g);\";\n"
        f"int six(int a, int b, int c, int d, int e, int f)\n{{\n"
        "    return call(a, b, c, d, e, f, SEVEN(1, 2, 3, 4, 5, 6, 7));\n}\n"
    )
    r = run(tree(tmp_path, {"store/x.c": text}))
    assert r.returncode == 0, r.stderr


def test_outside_store_is_not_checked(tmp_path):
    r = run(tree(tmp_path, {"store/x.c": f"{SIX};\n", "server/y.c": f"{SEVEN};\n"}))
    assert r.returncode == 0, r.stderr


def test_the_limit_is_a_flag(tmp_path):
    r = run(tree(tmp_path, {"store/x.c": f"{SIX};\n"}), "--max", "5")
    assert r.returncode == 1
    assert "store/x.c:1: six takes 6 parameters (at most 5" in r.stderr


def test_no_store_directory_is_an_error(tmp_path):
    r = run(tmp_path)
    assert r.returncode == 2
    assert "no store/" in r.stderr
