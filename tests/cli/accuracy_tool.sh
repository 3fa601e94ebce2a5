#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# accuracy_tool.sh BENCH_ACCURACY DIR - the accuracy benchmark's tool as
# anyone runs it on a log: a known answer on a three-line log, the
# generated trace written out and replayed giving the same figures, bad
# lines reported (exit 1) and bad arguments refused (exit 2).
set -u
tool=$1; dir=$2
mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }

# 2 per 10 s. Two requests at 9 s, one at 15 s: the exact log denies the
# third (both of 9 s are within 10 s), the two-counter window allows it
# (2 * 5/10 + 1 <= 2), ten 1 s sub-windows deny it.
cat > "$dir/log.jsonl" <<'J'
{"t_ms": 1700000009000, "domain": "d", "descriptors": [{"user": "a"}]}
{"t_ms": 1700000009000, "domain": "d", "descriptors": [{"user": "a"}]}
{"t_ms": 1700000015000, "domain": "d", "descriptors": [{"user": "a"}]}
J
"$tool" --requests 2 --period 10s --decider sliding_window:1 --decider sliding_window:10 \
    "$dir/log.jsonl" > "$dir/out" 2>&1 || fail "known log: $(cat "$dir/out")"
for want in "accuracy_requests 3 requests" "accuracy_over_limit 33.333 %" \
    "accuracy_sw_b1_misjudged 33.3333 % (1 of 3)" "accuracy_sw_b1_wrongly_allowed 33.3333 % (1)" \
    "accuracy_sw_b1_wrongly_denied 0.0000 % (0)" "accuracy_sw_b10_misjudged 0.0000 % (0 of 3)"; do
    grep -qF "$want" "$dir/out" || fail "known log: no '$want' in: $(cat "$dir/out")"
done

# The generated trace, written and replayed: the same figures.
"$tool" --clients 40 --hours 3 --write-trace "$dir/gen.jsonl" > "$dir/gen.out" 2>&1 ||
    fail "generate: $(cat "$dir/gen.out")"
"$tool" "$dir/gen.jsonl" > "$dir/replay.out" 2>&1 || fail "replay: $(cat "$dir/replay.out")"
grep -v '^# trace' "$dir/gen.out" > "$dir/a"
grep -v '^# trace' "$dir/replay.out" > "$dir/b"
cmp -s "$dir/a" "$dir/b" || fail "replay differs: $(diff "$dir/a" "$dir/b")"
grep -q '^accuracy_b60_vs_b1 .* \(MET\|MISSED\) target>=10' "$dir/gen.out" ||
    fail "no MET/MISSED line: $(cat "$dir/gen.out")"
[ "$(grep -c . "$dir/gen.jsonl")" -gt 1000 ] || fail "generated trace too short"

# A bad line is reported with its number and skipped: exit 1, figures still printed.
printf '%s\n{"t_ms": "soon"}\n' "$(head -1 "$dir/log.jsonl")" > "$dir/bad.jsonl"
"$tool" "$dir/bad.jsonl" > "$dir/out" 2> "$dir/err"
[ $? -eq 1 ] || fail "bad line: exit status is not 1"
grep -q 'line 2' "$dir/err" || fail "bad line: no line number in: $(cat "$dir/err")"
grep -q 'accuracy_requests 1 requests' "$dir/out" || fail "bad line: good line not replayed"

# Bad arguments: exit 2.
for args in "--decider nosuch:1" "--decider sliding_window:0" "--decider sliding_window:7 --period 1m" \
    "--requests 0" "--period 10"; do
    # shellcheck disable=SC2086
    "$tool" $args "$dir/log.jsonl" > "$dir/out" 2>&1
    [ $? -eq 2 ] || fail "'$args': exit status is not 2"
done
echo "ok"
