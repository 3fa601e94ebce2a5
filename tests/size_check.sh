#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# size_check.sh SOURCE_DIR - no file git tracks is larger than 256 KiB,
# except where large inputs belong: fuzz seed corpora (fuzz/corpus/) and
# test vectors (tests/vectors/). A profile, a capture or a build output
# committed by accident would otherwise weigh on every clone for ever.
# The size is the blob's in git's index (what a commit records), so a file
# counts once it is added. Fails listing each file too large, with its size.
# Outside a git checkout (a release tarball) there is nothing to check.
set -euo pipefail
limit=$((256 * 1024))
cd "$1"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "size_check: not a git checkout; nothing to check"
    exit 0
fi
bad=0
# The index's blob of each path, then every blob's size in one batch.
# (Without -z git quotes an unusual path, so each entry is one line.)
sizes=$(mktemp)
trap 'rm -f "$sizes"' EXIT
git ls-files -s | cut -f1 | cut -d' ' -f2 | git cat-file --batch-check='%(objectsize)' >"$sizes"
while IFS= read -r size <&3 && IFS= read -r -d '' path <&4; do
    path=${path#*$'\t'}
    if ! [[ "$size" =~ ^[0-9]+$ ]]; then
        echo "size_check: cannot size $path ($size)" >&2
        bad=1
        continue
    fi
    case "$path" in
        fuzz/corpus/* | tests/vectors/*) continue ;;
    esac
    if [ "$size" -gt "$limit" ]; then
        echo "size_check: $path is $size bytes (over 256 KiB); keep it out of git" \
            "(.gitignore), or put a large test input under fuzz/corpus/ or tests/vectors/" >&2
        bad=1
    fi
done 3<"$sizes" 4< <(git ls-files -s -z)
if [ "$bad" -ne 0 ]; then
    exit 1
fi
echo "size_check: every tracked file is at most 256 KiB, but for fuzz corpora and test vectors"
