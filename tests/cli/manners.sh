#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# manners.sh SLUICE SLUICED DIR - the command lines' manners: -V prints
# the version; an unknown sluiced option is one line and a hint, not the
# whole help; `sluice simulate` detects nginx's combined log, and stops on
# input of another format with one error naming --log-format (holding the
# first lines' errors until a line parses); `sluice rules ls` shows times
# as ISO 8601.
set -u
sluice=$1; sluiced=$2; dir=$3
rm -rf "$dir"; mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }

"$sluice" -V > "$dir/out" 2>&1 || fail "sluice -V: exit $?"
grep -Eq '^sluice [0-9]+\.[0-9]+\.[0-9]+$' "$dir/out" || fail "sluice -V: $(cat "$dir/out")"

"$sluiced" --frob > "$dir/out" 2> "$dir/err"
rc=$?
[ $rc -eq 2 ] || fail "sluiced --frob: exit $rc, not 2"
[ -s "$dir/out" ] && fail "sluiced --frob wrote to stdout"
[ "$(wc -l < "$dir/err")" -eq 2 ] || fail "sluiced --frob: $(wc -l < "$dir/err") lines: $(cat "$dir/err")"
[ "$(head -n 1 "$dir/err")" = "sluiced: unknown or incomplete option '--frob'" ] ||
    fail "sluiced --frob: $(head -n 1 "$dir/err")"
grep -q -- "--help" "$dir/err" || fail "sluiced --frob: no hint to --help"

cat > "$dir/rule.yaml" <<'Y'
domain: nginx
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
Y
i=0
while [ $i -lt 12 ]; do
    echo '127.0.0.1 - - [02/Dec/2026:06:00:00 +0000] "GET /a HTTP/1.1" 200 12 "-" "curl"'
    i=$((i + 1))
done > "$dir/access.log"

# detected: every line decided, 3 allowed then denied
"$sluice" simulate -r "$dir/rule.yaml" "$dir/access.log" > "$dir/out" 2> "$dir/err" ||
    fail "simulate (detected): exit $?: $(cat "$dir/err")"
[ "$(wc -l < "$dir/out")" -eq 12 ] || fail "simulate (detected): $(wc -l < "$dir/out") lines out"
[ "$(grep -c '"decision":"deny"' "$dir/out")" -eq 9 ] || fail "simulate (detected): not 9 denials"
grep -q "combined log format (detected" "$dir/err" || fail "simulate: detection not said"

# the wrong format chosen: one error, naming --log-format
"$sluice" simulate -r "$dir/rule.yaml" --log-format json "$dir/access.log" > "$dir/out" 2> "$dir/err"
rc=$?
[ $rc -eq 1 ] || fail "simulate --log-format json on a log: exit $rc, not 1"
[ "$(wc -l < "$dir/err")" -eq 1 ] || fail "simulate wrong format: $(cat "$dir/err")"
grep -q -- "--log-format" "$dir/err" || fail "simulate wrong format: no --log-format in $(cat "$dir/err")"
[ -s "$dir/out" ] && fail "simulate wrong format: output"

# a few bad lines before good ones: each is said, the good ones decided
printf 'garbage\nmore garbage\n{"t_ms": 1700000000000, "domain": "nginx", "descriptors": [{"remote_address": "1.2.3.4"}]}\n' |
    "$sluice" simulate -r "$dir/rule.yaml" > "$dir/out" 2> "$dir/err"
rc=$?
[ $rc -eq 1 ] || fail "simulate with bad lines: exit $rc, not 1"
[ "$(wc -l < "$dir/out")" -eq 1 ] || fail "simulate with bad lines: $(cat "$dir/out")"
grep -q "^sluice: line 1: " "$dir/err" && grep -q "^sluice: line 2: " "$dir/err" ||
    fail "simulate with bad lines: $(cat "$dir/err")"

# rules ls: ISO 8601, UTC, to the millisecond
"$sluice" rules add --db "$dir/r.db" --id acme "$dir/rule.yaml" > /dev/null || fail "rules add"
"$sluice" rules ls --db "$dir/r.db" > "$dir/out" || fail "rules ls"
grep -Eq "^acme	nginx	20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3}Z$" "$dir/out" ||
    fail "rules ls: $(cat "$dir/out")"
echo ok
