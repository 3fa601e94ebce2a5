#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""calls.py BUILD_DIR [--graph] - no call cycle between the daemon's files
where one would tangle the house: among the proxy's files
(server/proxy/*.c), between server/core/decide.c and server/core/worker.c,
between server/core/server.c and server/core/watch.c, and among the Redis
store's files (store/redis/*.c, its link included: each floor calls only
the floors below, and reports upward through the pointers of struct
sl__rup in store/redis/redis_int.h).

The file-level call graph is read from the objects the build made: `nm`
gives each object's defined (T, D, B, R...) and undefined (U) symbols; file
A calls file B when A needs a symbol B defines. A cycle is a strongly
connected set of two or more files; one inside a checked group (or
joining a checked pair) fails the check, naming the files and, for each
edge of the cycle, a symbol that makes it. A call through a function
pointer is not seen (the file that takes the function's address is the one
that needs its symbol): callbacks registered by the caller are the way out
of a cycle, and the way the proxy's state machine drives its helpers.

--graph prints every edge among the checked files (for the notes of a
restructuring).
"""
import os
import subprocess
import sys

# (name, predicate over a source path relative to the tree)
GROUPS = [
    ("the proxy's files", lambda p: p.startswith("server/proxy/")),
    ("decide.c and worker.c", lambda p: p in ("server/core/decide.c", "server/core/worker.c")),
    ("server.c and watch.c", lambda p: p in ("server/core/server.c", "server/core/watch.c")),
    ("the Redis store's files", lambda p: p.startswith("store/redis/")),
]
OBJ_DIR_MARK = ".dir/"


def objects(build):
    """source path (relative to the tree) -> object path, for the daemon's
    objects (the sluiced_* libraries) and the stores' (sluice_store*), one
    object per source."""
    out = {}
    for top in ("server", "store"):
        for root, _, files in os.walk(os.path.join(build, top, "CMakeFiles")):
            for f in files:
                if not f.endswith(".c.o"):
                    continue
                path = os.path.join(root, f)
                rel = path.split(OBJ_DIR_MARK, 1)[1][: -len(".o")]
                out.setdefault(top + "/" + rel, path)
    return out


def symbols(obj):
    """(defined, undefined) global symbols of an object."""
    text = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRGSVW" and parts[1].isupper():
            defined.add(parts[2])
    return defined, undefined


def graph(build):
    """file -> {file it calls: a symbol that makes the edge}."""
    objs = objects(build)
    syms = {src: symbols(o) for src, o in objs.items()}
    owner = {}
    for src, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, src)
    edges = {src: {} for src in syms}
    for src, (_, undefined) in syms.items():
        for s in sorted(undefined):
            dst = owner.get(s)
            if dst is not None and dst != src:
                edges[src].setdefault(dst, s)
    return edges


def cycles(edges, files):
    """Strongly connected sets of two or more of `files`, in the graph
    restricted to them (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in files:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(files):
        if v not in index:
            visit(v)
    return out


def main(argv):
    if len(argv) < 2:
        print("usage: calls.py BUILD_DIR [--graph]", file=sys.stderr)
        return 2
    edges = graph(argv[1])
    if not edges:
        print(f"calls.py: no daemon objects under {argv[1]}/server", file=sys.stderr)
        return 2
    failed = False
    for name, pick in GROUPS:
        files = {f for f in edges if pick(f)}
        if argv[2:] == ["--graph"]:
            print(f"# {name}")
            for a in sorted(files):
                for b, s in sorted(edges[a].items()):
                    if b in files:
                        print(f"{a} -> {b} ({s})")
        for comp in cycles(edges, files):
            failed = True
            print(f"calls.py: a call cycle among {name}:", file=sys.stderr)
            for a in comp:
                for b, s in sorted(edges[a].items()):
                    if b in comp:
                        print(f"  {a} -> {b} (calls {s})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
