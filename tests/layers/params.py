#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""params.py SOURCE_DIR [--max N] - no function of the stores takes more
than N (6) parameters.

Every C file under store/ (.c and .h) is read: comments, strings and
preprocessor lines taken out, every function declared or defined at file
scope (a name after a type, its parameter list, then `{`, `;` or
`__attribute__`) has its parameters counted - `(void)` is none, and a
variadic `...` is not one. A function over the limit fails the check,
named with its file and line. A call that needs more says so in a struct
built by its caller (store/redis/redis_int.h: struct sl__rstart), not in
a longer list whose order the reader must keep in mind.

Function-pointer types and the members of structs are not functions and
are not counted.
"""
import os
import re
import sys

DIRS = ["store"]
MAX = 6
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "_Alignof", "_Static_assert",
            "__attribute__", "__typeof__", "typeof", "defined", "_Generic", "do", "else"}
TOKEN = re.compile(r"[A-Za-z_]\w*|\.\.\.|\S")


def strip(text):
    """The text with comments, string and character literals and
    preprocessor lines blanked (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(text)
    bol = True  # at the beginning of a line (only blanks before)
    while i < n:
        c = text[i]
        if bol and c == "#":  # a directive, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                if text.startswith("/*", i):  # a comment inside a directive
                    end = text.find("*/", i + 2)
                    end = n if end < 0 else end + 2
                    out.append("\n" * text.count("\n", i, end))
                    i = end
                    continue
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(" " + "\n" * text.count("\n", i, end))
            i = end
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        if c == "\n":
            bol = True
        elif not c.isspace():
            bol = False
        i += 1
    return "".join(out)


def tokens(text):
    """(token, line) of the stripped text."""
    line = 1
    at = 0
    for m in TOKEN.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        yield m.group(0), line


def count_params(toks):
    """Parameters in the tokens between a list's parentheses."""
    if not toks or toks == ["void"]:
        return 0
    count, depth, item = 0, 0, []
    for t in toks + [","]:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == "," and depth == 0:
            if item and item != ["..."]:
                count += 1
            item = []
        else:
            item.append(t)
    return count


def functions(text):
    """(name, line, parameters) of every function declared or defined at
    file scope of C text."""
    toks = list(tokens(strip(text)))
    out = []
    depth = 0  # braces
    i = 0
    while i < len(toks):
        t, line = toks[i]
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
        elif (depth == 0 and i + 1 < len(toks) and toks[i + 1][0] == "(" and i > 0
              and re.match(r"[A-Za-z_]", t) and t not in KEYWORDS
              and (toks[i - 1][0] == "*" or re.match(r"[A-Za-z_]\w*$", toks[i - 1][0]))
              and toks[i - 1][0] not in KEYWORDS):
            j, par = i + 2, 1
            while j < len(toks) and par > 0:
                par += {"(": 1, ")": -1}.get(toks[j][0], 0)
                j += 1
            after = toks[j][0] if j < len(toks) else ""
            if after in ("{", ";", "__attribute__"):
                out.append((t, line, count_params([x for x, _ in toks[i + 2:j - 1]])))
            i = j
            continue
        i += 1
    return out


def check(root, limit=MAX):
    bad = []
    for top in DIRS:
        for dp, dn, fn in os.walk(os.path.join(root, top)):
            dn[:] = sorted(d for d in dn if not d.startswith("build"))
            for f in sorted(fn):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dp, f)
                rel = os.path.relpath(path, root)
                text = open(path, encoding="utf-8", errors="replace").read()
                for name, line, n in functions(text):
                    if n > limit:
                        bad.append(f"{rel}:{line}: {name} takes {n} parameters "
                                   f"(at most {limit}: pass a struct)")
    return bad


def main():
    args = sys.argv[1:]
    limit = MAX
    if "--max" in args:
        k = args.index("--max")
        limit = int(args[k + 1])
        del args[k:k + 2]
    root = args[0] if args else "."
    if not os.path.isdir(os.path.join(root, DIRS[0])):
        print(f"params: no {DIRS[0]}/ under {root}", file=sys.stderr)
        return 2
    bad = check(root, limit)
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"{len(bad)} function(s) with more than {limit} parameters "
              "(tests/layers/params.py)", file=sys.stderr)
        return 1
    print(f"params: no function of {', '.join(DIRS)}/ takes more than {limit} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
