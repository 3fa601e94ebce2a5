# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_config_docs.py - docs/configuration.md lists every configuration key
that `sluiced --help` prints, with the same default, and no key it does not.

--help prints one line per key (conf/keytab.c, sl__keytab_help_line):
two spaces, the key left-aligned in 32 columns, a space, the default
left-aligned in 10 columns, a space, the meaning. A default longer than 10
columns pushes the meaning right; lines whose key column is blank continue
the meaning of the key above.

The documentation's keys are the rows `| `key` | default | meaning |` of
every table in docs/configuration.md whose first header cell is `key`
(the listener fields have a table of their own, headed `field`).
"""
import os
import re
import subprocess
from pathlib import Path

KEY_COL = 32
DEFAULT_COL = 10


def help_keys():
    """{key: default} from `sluiced --help`."""
    out = subprocess.run(
        [os.environ["SLUICED"], "--help"], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.startswith("configuration keys")), None
    )
    assert start is not None, "sluiced --help printed no 'configuration keys' section:\n" + out
    keys = {}
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            continue
        body = line[2:]
        if body[:KEY_COL].strip() == "":
            continue  # the meaning of the key above, continued
        if len(body) > KEY_COL and body[KEY_COL] == " ":
            key, rest = body[:KEY_COL].rstrip(), body[KEY_COL + 1 :]
        else:  # a key longer than its column
            key, _, rest = body.partition(" ")
        if len(rest) > DEFAULT_COL and rest[DEFAULT_COL] == " ":
            default = rest[:DEFAULT_COL].rstrip()
        else:  # a default longer than its column
            default = rest.split(" ", 1)[0]
        assert key not in keys, f"sluiced --help prints {key!r} twice"
        keys[key] = default
    assert keys, "no configuration keys parsed from sluiced --help:\n" + out
    return keys


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def unquote(cell):
    return cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == "`" else cell


def doc_keys():
    """{key: default} from the `key` tables of docs/configuration.md."""
    path = Path(os.environ["SLUICE_SOURCE"]) / "docs" / "configuration.md"
    keys = {}
    in_table = False
    prev = ""
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.lstrip().startswith("|"):
            in_table = False
        elif re.fullmatch(r"\|?[\s|:-]+\|?", line.strip()):
            in_table = cells(prev)[0].lower() == "key"  # the row above is the header
        elif in_table:
            row = cells(line)
            assert len(row) >= 3, f"configuration.md:{n}: a key row needs key | default | meaning"
            key, default = unquote(row[0]), unquote(row[1])
            assert key not in keys, f"configuration.md:{n}: {key!r} is listed twice"
            keys[key] = default
        prev = line
    assert keys, f"no key table found in {path}"
    return keys


def test_configuration_md_matches_help():
    want, have = help_keys(), doc_keys()
    problems = []
    for k in sorted(want.keys() - have.keys()):
        problems.append(f"missing from docs/configuration.md: `{k}` (default {want[k]})")
    for k in sorted(have.keys() - want.keys()):
        problems.append(f"in docs/configuration.md but not in sluiced --help: `{k}`")
    for k in sorted(want.keys() & have.keys()):
        if want[k] != have[k]:
            problems.append(f"`{k}`: sluiced --help says {want[k]!r}, the docs say {have[k]!r}")
    assert not problems, "docs/configuration.md and sluiced --help differ:\n  " + "\n  ".join(
        problems
    )
