#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""layers.py SOURCE_DIR - no layer includes a header of a layer above it.

Sluice's layers, bottom up: the public header (include/), libsluice (lib/),
configuration tables (conf/), the TLS every client of Sluice speaks (net/), the native check body's reader (checkbody/:
sluiced's /v1/check and `sluice simulate`) and the rules database (rulesdb/), the stores
(store/), the server core (server/core/), the protocol rooms (server/http,
server/resp, ... each a directory under server/), the admin room (over
http), the configuration check (server/check: sluiced -t, on the core and
linked with the registration), and the registration (server/*.c). The CLI
(cli/) sits on lib, checkbody and rulesdb, and of the daemon on server/check alone
(`sluice check -c` runs sluiced's own check, which links the daemon's
configuration files only: the targets sluiced_conf and sluice_store_conf,
whose files stay in their own directories and follow their rules below). ALLOWED below says, for each directory, which directories' headers
its files may include; a file may always include headers of its own
directory tree. Every `#include "..."` of every C file is resolved against
the directories that hold a header of that name; an include that resolves
only to a directory not allowed, or that climbs with "..", fails the check.

The build enforces the same with private include folders (a wrong-way
include does not compile); this check also catches what include paths
cannot see (relative paths) and states the rules in one place.
"""
import os
import re
import sys

# directory -> directories whose headers it may include (besides its own tree)
ALLOWED = {
    "lib": ["include"],
    "conf": ["include"],
    "checkbody": ["include"],
    "rulesdb": ["include", "lib/internal"],
    "net": [],
    "store": ["include", "lib/internal", "conf", "rulesdb", "net"],
    "server/core": ["include", "lib/internal", "conf", "rulesdb", "store/include", "net"],
    "server/http": ["include", "lib/internal", "conf", "checkbody", "server/core"],
    "server/resp": ["include", "conf", "server/core"],
    "server/admin": ["include", "conf", "rulesdb", "server/core", "server/http"],
    "server/grpc": ["include", "conf", "server/core"],
    "server/proxy": ["include", "lib/internal", "conf", "server/core", "server/http", "net"],
    "server/check": ["include", "conf", "server/core"],
    "server": ["include", "conf", "server/core", "server/http", "server/resp", "server/admin",
               "server/grpc", "server/proxy", "server/check"],
    "cli": ["include", "checkbody", "rulesdb", "server/check"],
    "redis-module": ["include", "lib/internal"],
}
CHECKED = list(ALLOWED)
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


def layer_of(rel):
    """The most specific directory of ALLOWED holding file `rel`."""
    best = None
    for d in ALLOWED:
        if rel.startswith(d + "/") and (best is None or len(d) > len(best)):
            best = d
    return best


def headers(root):
    """header path relative to root -> True, for every .h of the tree."""
    out = set()
    for top in ["include"] + CHECKED:
        base = os.path.join(root, top)
        for dp, dn, fn in os.walk(base):
            dn[:] = [d for d in dn if not d.startswith("build")]
            for f in fn:
                if f.endswith(".h"):
                    out.add(os.path.relpath(os.path.join(dp, f), root))
    return out


def resolve(name, hs):
    """Every header of the tree that `#include "name"` could mean."""
    return [h for h in hs if h == name or h.endswith("/" + name)]


def check(root):
    hs = headers(root)
    bad = []
    for top in CHECKED:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dp, dn, fn in os.walk(base):
            dn[:] = [d for d in dn if not d.startswith("build")]
            for f in fn:
                if not f.endswith((".c", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(dp, f), root)
                layer = layer_of(rel)
                if layer is None or layer != top:
                    continue  # checked under its own, more specific directory
                text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    name = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    if ".." in name.split("/"):
                        bad.append(f"{rel}:{line}: includes \"{name}\" by a relative path")
                        continue
                    cands = resolve(name, hs)
                    if not cands:
                        continue  # a generated or system header
                    own = os.path.dirname(rel)
                    ok = [c for c in cands
                          if c.startswith(layer + "/") or os.path.dirname(c) == own
                          or any(c.startswith(a + "/") for a in ALLOWED[layer])]
                    if not ok:
                        bad.append(f"{rel}:{line}: {layer}/ may not include \"{name}\" "
                                   f"({', '.join(sorted(cands))})")
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = check(root)
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"{len(bad)} include(s) against the layers (tests/layers/layers.py)", file=sys.stderr)
        return 1
    print("layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
