#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""man_check.py MANDIR SLUICED SLUICE SOURCE_DIR

The man pages built in MANDIR (man1/, man5/, man8/):
- render with groff -ww (every warning) without a single warning;
- are true to the programs: every option of `sluiced --help` is in
  sluiced(8), every configuration key it lists is in sluice.yaml(5), every
  command of `sluice --help` and every option of each command's help is in
  sluice(1);
- are true to docs/: every key of the key tables of docs/configuration.md
  and docs/distributed.md is in sluice.yaml(5), every key of the tables of
  docs/rules.md is in sluice-rules(5).
Fails listing everything missing.
"""
import os
import re
import subprocess
import sys

mandir, sluiced, sluice, src = sys.argv[1:5]
PAGES = {"sluice": "man1/sluice.1", "sluiced": "man8/sluiced.8",
         "sluice.yaml": "man5/sluice.yaml.5", "sluice-rules": "man5/sluice-rules.5"}
problems = []


def render(path):
    """The page as plain text: wide lines, no hyphenation, no overstrikes."""
    out = subprocess.run(["groff", "-man", "-Tascii", "-rLL=250n", "-rHY=0", path],
                         check=True, capture_output=True, text=True).stdout
    return re.sub(r".\x08", "", out)


def words(text):
    return " ".join(text.split())


text = {}
for name, rel in PAGES.items():
    path = os.path.join(mandir, rel)
    if not os.path.isfile(path):
        problems.append(f"{rel}: not built")
        continue
    r = subprocess.run(["groff", "-ww", "-man", "-Tutf8", "-z", path], capture_output=True,
                       text=True)
    if r.returncode != 0 or r.stderr.strip():
        problems.append(f"{rel}: groff -ww: exit {r.returncode}\n{r.stderr.strip()}")
    text[name] = words(render(path))


def need(page, item, where):
    if page in text and item not in text[page]:
        problems.append(f"{PAGES[page]}: lacks '{item}' ({where})")


def help_of(*argv):
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if r.returncode != 0:
        problems.append(f"{' '.join(argv)}: exit {r.returncode}")
    return r.stdout


OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")

# sluiced --help: options above the key list, then one key per line.
out = help_of(sluiced, "--help")
opts, _, keys = out.partition("configuration keys")
for opt in sorted(set(OPTION.findall(opts))):
    need("sluiced", opt, "sluiced --help")
n_keys = 0
for line in keys.splitlines():
    m = re.match(r"  ([a-z][\w.\[\]]*(?:\.[A-Z]+)?)\s", line)
    if m:
        n_keys += 1
        need("sluice.yaml", m.group(1), "sluiced --help")
if n_keys < 20:
    problems.append(f"sluiced --help: only {n_keys} keys read; the reader needs fixing")

# sluice --help: the commands, then each command's options.
out = help_of(sluice, "--help")
commands = re.findall(r"^  ([a-z]+)\s{2,}\S", out, re.M)
if len(commands) < 3:
    problems.append(f"sluice --help: only {commands} read as commands")
for opt in sorted(set(OPTION.findall(out))):
    need("sluice", opt, "sluice --help")
for cmd in commands:
    need("sluice", f"sluice {cmd}", "sluice --help")
    for opt in sorted(set(OPTION.findall(help_of(sluice, "help", cmd)))):
        need("sluice", opt, f"sluice help {cmd}")


def table_keys(md):
    """First-column `names` of every table of docs/MD whose first column is
    headed 'key' or 'field' (wherever the tables are in the page)."""
    with open(os.path.join(src, "docs", md)) as f:
        lines = f.read().splitlines()
    found = []
    in_table = False
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.split("|")]
        if not in_table and i + 1 < len(lines) and lines[i + 1].startswith("|--"):
            in_table = cells[1] in ("key", "field")
            continue
        if in_table:
            found += re.findall(r"`([^`]+)`", cells[1])
    return found


n_doc_keys = 0
for md, page in (("configuration.md", "sluice.yaml"), ("distributed.md", "sluice.yaml"),
                 ("rules.md", "sluice-rules")):
    for key in table_keys(md):
        n_doc_keys += 1
        need(page, re.sub(r"<domain>", "DOMAIN", key), f"docs/{md}")
if n_doc_keys < 40:
    problems.append(f"docs/: only {n_doc_keys} keys read from the key tables; the reader needs fixing")

if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"{len(text)} man pages render without warnings and hold every option, command and key "
      f"of the --help outputs and of docs/ ({n_keys} keys in sluiced --help, {n_doc_keys} in docs/)")
