# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""keys_from_docs.py TEMPLATE DOCS OUT - write sluice.yaml(5)'s scdoc source:
TEMPLATE with its %%CONFIG_KEYS%% line replaced by every key table of DOCS
(docs/configuration.md, which a test keeps equal to `sluiced --help`), one
section per heading, so the manual lists exactly the keys the daemon takes.
"""
import re
import sys

ROW = re.compile(r"^\| `([^`]+)` \| (.*?) \| (.*) \|$")


def scdoc_text(md):
    """Markdown cell text as scdoc: code and links made plain or bold."""
    md = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", md)  # links: their text
    out = []
    for i, part in enumerate(md.split("`")):
        part = part.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")
        out.append("*" + part + "*" if i % 2 and part else part)
    return "".join(out)


def keys(docs):
    sections, title, in_table = [], None, False
    for line in open(docs, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("## "):
            title = line[3:].strip()
            in_table = False
        elif line.startswith("| key | default | meaning |"):
            in_table = True
            sections.append((title, []))
        elif in_table and (m := ROW.match(line)):
            sections[-1][1].append(m.groups())
        elif in_table and not line.startswith("|"):
            in_table = False
    text = []
    for title, rows in sections:
        if not rows:
            continue
        text.append("# " + (title or "KEYS").upper() + "\n")
        for key, default, meaning in rows:
            d = default.strip().strip("`")
            text.append(f"*{scdoc_text(key)}* (default: *{scdoc_text(d)}*)\n"
                        f"\t{scdoc_text(meaning.strip())}\n")
    return "\n".join(text)


def main():
    template, docs, out = sys.argv[1:4]
    body = open(template, encoding="utf-8").read().replace("%%CONFIG_KEYS%%\n", keys(docs))
    open(out, "w", encoding="utf-8").write(body)


if __name__ == "__main__":
    main()
