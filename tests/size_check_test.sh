#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# size_check_test.sh SIZE_CHECK WORKDIR - size_check.sh fails on a large
# tracked file and passes the same file under fuzz/corpus/ or tests/vectors/,
# in a scratch repository (so the check is known to bite before it is
# trusted on the real tree).
set -euo pipefail
check=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
cd "$work"
git init -q .
git config user.email t@example.invalid
git config user.name test
printf 'small\n' >small.txt
head -c 262144 /dev/zero >exactly_256k.bin
git add small.txt exactly_256k.bin
"$check" . >/dev/null || { echo "FAIL: 256 KiB exactly must pass" >&2; exit 1; }
head -c 300000 /dev/zero >p1m.perf
git add p1m.perf
if "$check" . 2>err.txt; then
    echo "FAIL: a 300000-byte tracked file must fail the check" >&2
    exit 1
fi
grep -q 'p1m.perf is 300000 bytes' err.txt || { echo "FAIL: message: $(cat err.txt)" >&2; exit 1; }
git rm -q --cached p1m.perf
mkdir -p fuzz/corpus/fuzz_x tests/vectors "a dir"
cp p1m.perf fuzz/corpus/fuzz_x/seed
cp p1m.perf tests/vectors/big.bin
git add fuzz/corpus/fuzz_x/seed tests/vectors/big.bin
"$check" . >/dev/null || { echo "FAIL: corpus entries and test vectors may be large" >&2; exit 1; }
cp p1m.perf "a dir/big file"
git add "a dir/big file"
if "$check" . 2>/dev/null; then
    echo "FAIL: a large file with a space in its path must fail too" >&2
    exit 1
fi
echo ok
