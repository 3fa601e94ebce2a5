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
"$sluice" rules rm --db "$db" acme > /dev/null || fail "rm"
"$sluice" rules rm --db "$db" acme 2> /dev/null && fail "rm of a missing id succeeded"
[ -z "$("$sluice" rules ls --db "$db")" ] || fail "ls after rm"
head -c 4096 /dev/urandom > "$dir/corrupt.db"
"$sluice" rules ls --db "$dir/corrupt.db" 2> "$dir/err"; [ $? -eq 1 ] || fail "corrupt db: exit status"
grep -q "not a Sluice rules database" "$dir/err" || fail "corrupt message: $(cat "$dir/err")"
echo ok
