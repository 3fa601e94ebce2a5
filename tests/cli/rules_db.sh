#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# rules_db.sh SLUICE DIR - `sluice rules add|ls|rm --db FILE`: validated
# adds with positions, refusal of an existing id without --replace,
# persistence, database rules overriding file rules in simulate, clear
# errors for a corrupt file.
set -u
sluice=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"; db=$dir/rules.db
fail() { echo "FAIL: $*"; exit 1; }
cat > "$dir/file.yaml" <<'Y'
domain: api
descriptors:
  - key: customer
    rate_limit: {unit: minute, requests_per_unit: 1, name: default-plan}
Y
cat > "$dir/acme.yaml" <<'Y'
domain: api
descriptors:
  - key: customer
    value: acme
    rate_limit: {unit: minute, requests_per_unit: 3, name: acme-plan}
Y
cat > "$dir/bad.yaml" <<'Y'
domain: api
descriptors:
  - key: customer
    rate_limit: {unit: fortnight, requests_per_unit: 3}
Y
"$sluice" rules ls --db "$db" > /dev/null 2>&1 && fail "ls on a missing database succeeded"
"$sluice" rules add --db "$db" --id acme "$dir/acme.yaml" > /dev/null || fail "add"
"$sluice" rules add --db "$db" --id acme "$dir/acme.yaml" 2> "$dir/err" && fail "duplicate id accepted"
grep -q "already exists" "$dir/err" || fail "duplicate message: $(cat "$dir/err")"
"$sluice" rules add --db "$db" --id acme --replace - < "$dir/acme.yaml" > /dev/null || fail "replace from stdin"
"$sluice" rules add --db "$db" --id bad "$dir/bad.yaml" 2> "$dir/err"; [ $? -eq 1 ] || fail "bad rule accepted"
grep -qF "bad.yaml:4:24: invalid unit 'fortnight'" "$dir/err" || fail "bad rule message: $(cat "$dir/err")"
[ "$("$sluice" rules ls --db "$db" | cut -f1,2)" = "$(printf 'acme\tapi')" ] || fail "ls: $("$sluice" rules ls --db "$db")"
# Database rules win over the file for acme; other customers keep the file's limit.
in='{"t_ms":1700000040000,"domain":"api","descriptors":[{"customer":"acme"}]}'
out=$(printf '%s\n%s\n' "$in" "$in" | "$sluice" simulate -r "$dir/file.yaml" --db "$db")
[ "$(echo "$out" | grep -c '"decision":"allow","limit":"acme-plan"')" -eq 2 ] || fail "db precedence: $out"
out=$(printf '%s\n%s\n' "$in" "$in" | "$sluice" simulate -r "$dir/file.yaml")
echo "$out" | tail -1 | grep -q '"decision":"deny"' || fail "file only: $out"
# sliding_window sub-windows through the database: 2 per minute in 6
# sub-windows; a bad `buckets` is refused with its position.
cat > "$dir/sub.yaml" <<'Y'
domain: api
descriptors:
  - key: customer
    value: sub
    limits: [{algorithm: sliding_window, requests: 2, period: 1m, buckets: 6, name: sub-plan}]
Y
sed 's/buckets: 6/buckets: 7/' "$dir/sub.yaml" > "$dir/sub7.yaml"
"$sluice" rules add --db "$db" --id sub "$dir/sub.yaml" > /dev/null || fail "add with buckets"
"$sluice" rules add --db "$db" --id sub7 "$dir/sub7.yaml" 2> "$dir/err"; [ $? -eq 1 ] || fail "buckets: 7 accepted"
grep -qF "sub7.yaml:5:14: sliding_window: the period must split" "$dir/err" || fail "buckets message: $(cat "$dir/err")"
# 1 at 0:00, 1 at 0:09.9 (2 in the window), 1 at 1:00 (0:00's sub-window is
# the oldest, weight 1: denied), 1 at 1:10.1 (the first is gone: allowed).
sub() { printf '{"t_ms":%s,"domain":"api","descriptors":[{"customer":"sub"}]}\n' "$1"; }
out=$( (sub 1700000040000; sub 1700000049900; sub 1700000100000; sub 1700000110100) |
    "$sluice" simulate -r "$dir/file.yaml" --db "$db" | sed 's/.*"decision":"\([a-z]*\)","delay_ms.*/\1/')
[ "$(echo $out)" = "allow allow deny allow" ] || fail "sub-windows from the database: $out"
"$sluice" rules rm --db "$db" sub > /dev/null || fail "rm sub"
"$sluice" rules rm --db "$db" acme > /dev/null || fail "rm"
"$sluice" rules rm --db "$db" acme 2> /dev/null && fail "rm of a missing id succeeded"
[ -z "$("$sluice" rules ls --db "$db")" ] || fail "ls after rm"
head -c 4096 /dev/urandom > "$dir/corrupt.db"
"$sluice" rules ls --db "$dir/corrupt.db" 2> "$dir/err"; [ $? -eq 1 ] || fail "corrupt db: exit status"
grep -q "not a Sluice rules database" "$dir/err" || fail "corrupt message: $(cat "$dir/err")"
echo ok
