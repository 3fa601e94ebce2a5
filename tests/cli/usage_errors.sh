#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# usage_errors.sh SLUICE DIR - a usage error of `sluice` says what is wrong
# on its first line, before the usage text, and exits 2; a duplicate rule
# names the flag that replaces it.
set -u
sluice=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }

# expect WANT CMD...: exit status 2, and the first line of stderr is WANT
expect() {
    want=$1; shift
    "$sluice" "$@" > "$dir/out" 2> "$dir/err"
    rc=$?
    [ $rc -eq 2 ] || fail "sluice $*: exit $rc, not 2"
    first=$(head -n 1 "$dir/err")
    [ "$first" = "$want" ] || fail "sluice $*: first line is '$first', want '$want'"
    grep -q '^usage: ' "$dir/err" || fail "sluice $*: no usage text after the error"
}

cat > "$dir/rule.yaml" <<'Y'
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
Y
expect "sluice simulate: unknown option --frobnicate" simulate --frobnicate -r "$dir/rule.yaml"
expect "sluice simulate: missing -r FILE (the rules; or --db FILE)" simulate
expect "sluice simulate: -r needs a value" simulate -r
expect "sluice simulate: --log-format is json or combined (got 'xml')" \
    simulate -r "$dir/rule.yaml" --log-format xml
expect "sluice rules: missing --db FILE (or --server URL)" rules ls
expect "sluice rules: unknown option --frobnicate" rules add --frobnicate --db "$dir/x.db" "$dir/rule.yaml"
expect "sluice rules: missing RULES.yaml (or - for stdin)" rules add --db "$dir/x.db"
expect "sluice rules: missing ID (the rule to remove)" rules rm --db "$dir/x.db"
expect "sluice rules: unknown rules command 'list' (add, ls or rm)" rules list
expect "sluice check: unknown option --frobnicate" check --frobnicate
# a long option is named as typed, not by the letter it maps to
expect "sluice simulate: --db needs a value" simulate -r "$dir/rule.yaml" --db
expect "sluice rules: --server needs a value" rules ls --server
expect "sluice rules: --full takes no value" rules ls --db "$dir/x.db" --full=yes
expect "sluice simulate: unknown option --frobnicate" simulate --frobnicate=3 -r "$dir/rule.yaml"
expect "sluice: unknown option --frobnicate (options follow a command)" --frobnicate
expect "sluice: unknown command 'frobnicate'" frobnicate
expect "sluice check: missing FILE (a rules file, or -c sluice.yaml)" check
[ -e "$dir/x.db" ] && fail "a usage error created the database"

# a duplicate id: exit 1, and the message names --replace
"$sluice" rules add --db "$dir/r.db" --id acme "$dir/rule.yaml" > /dev/null || fail "add"
"$sluice" rules add --db "$dir/r.db" --id acme "$dir/rule.yaml" 2> "$dir/err"
[ $? -eq 1 ] || fail "duplicate id: exit status is not 1"
grep -q "rule 'acme' already exists.*--replace" "$dir/err" || fail "duplicate: $(cat "$dir/err")"
echo ok
