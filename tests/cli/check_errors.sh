#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# check_errors.sh SLUICE DIR - `sluice check` exits 0 on valid files, and on
# broken ones exits 1 printing every error with file:line:col.
set -u
sluice=$1; dir=$2
mkdir -p "$dir"
cat > "$dir/good.yaml" <<'Y'
domain: api
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 500}
Y
cat > "$dir/broken.yaml" <<'Y'
domain: api2
descriptors:
  - key: user
    colour: red
    limits:
      - {algorithm: gcra, requests: 5, period: 10, burst: -1}
      - {algorithm: token_bucket, requests: 5, period: 1s, burst: 2, warmup: 3s}
  - key: user
Y
fail() { echo "FAIL: $*"; exit 1; }
"$sluice" check "$dir/good.yaml" > "$dir/out" 2>&1 || fail "good file rejected: $(cat "$dir/out")"
"$sluice" check "$dir/good.yaml" "$dir/broken.yaml" > "$dir/out" 2>&1
[ $? -eq 1 ] || fail "broken file: exit status is not 1"
for want in "broken.yaml:4:5: unknown key 'colour'" "broken.yaml:6:48: period '10' has no unit" \
    "broken.yaml:6:59: burst must be >= 0" "broken.yaml:7:78: warmup cannot be combined" \
    "broken.yaml:8:5: duplicate descriptor"; do
    grep -qF "$want" "$dir/out" || fail "missing: $want; got: $(cat "$dir/out")"
done
[ "$(grep -c ':[0-9]*:[0-9]*: ' "$dir/out")" -eq 5 ] || fail "expected exactly 5 errors: $(cat "$dir/out")"
"$sluice" check "$dir/missing.yaml" > "$dir/out" 2>&1 && fail "missing file accepted"
"$sluice" check > /dev/null 2>&1; [ $? -eq 2 ] || fail "no argument: exit status is not 2"
echo ok
