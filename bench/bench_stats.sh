#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_stats.sh BUILD_DIR - what the operator's statistics cost on the
# decision path, in instructions (not time, so the figure holds on a loaded
# machine): sluiced (one worker, memory store) runs under valgrind's
# callgrind, collecting only inside sl__decide - the one decision path,
# the store's answer and the protocol's callback included - while a fixed
# number of RESP checks goes through it; once with stats.enabled true, once
# false. Three mixes of keys against a limit of 50 a minute per key:
#   allowed     1,000 keys, 20 checks each: nothing limited (most traffic);
#   hot         as allowed, but 1 check in 10 goes to one of 5 hot keys,
#               which are denied past their 50 (about 9 % denied: abuse);
#   churn       200 keys round robin, 100 checks each: half the checks
#               denied, 200 keys churning through 32 Space-Saving counters,
#               every denial taking a counter over (the worst case).
# Output: `name value unit` lines; the overhead prints MET or MISSED with
# the target (<= 5 % more instructions per decision).
# It does not build anything and kills only the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
n=${SL_BENCH_DECISIONS:-20000}
[[ -x "$sluiced" ]] || { echo "bench_stats: $sluiced not built" >&2; exit 1; }
. "$(dirname "$0")/lib.sh"
bench_init bench_stats valgrind redis-cli

# instructions ENABLED MIX: callgrind's Ir inside sl__decide for $n checks.
instructions() {
    local enabled=$1 mix=$2 rpm=50 port out pid
    port=$(free_port)
    out="$tmp/callgrind.$enabled.$mix"
    cat >"$tmp/rules.yaml" <<YAML
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: $rpm}
YAML
    cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $port, protocols: [resp]}]
workers: 1
rules: {files: [rules.yaml], watch: false}
stats: {enabled: $enabled}
log: {level: warn}
YAML
    valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
        --toggle-collect=sl__decide "$sluiced" -c "$tmp/sluice.yaml" --test-clock 1700000000000 \
        2>"$tmp/valgrind.log" &
    pid=$!
    pids+=($pid)
    for _ in $(seq 600); do
        redis-cli -p "$port" PING >/dev/null 2>&1 && break
        # valgrind gives up on debug information it cannot read (clang's
        # DWARF 5 with valgrind 3.19: build without -g, as make bench does)
        kill -0 "$pid" 2>/dev/null || { tail -5 "$tmp/valgrind.log" >&2; return 1; }
        sleep 0.1
    done
    /usr/bin/python3 - "$port" "$n" "$mix" <<'PY'
import sys, redis
port, n, mix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def key(i):
    if mix == "churn":
        return f"u{i % 200}"
    if mix == "hot" and i % 10 == 0:
        return f"hot{i // 10 % 5}"
    return f"u{i % 1000}"
r = redis.Redis(port=port, socket_timeout=120)
done = 0
while done < n:
    p = r.pipeline(transaction=False)
    for i in range(done, min(n, done + 500)):
        p.execute_command("SL.CHECK", "api", 1, "user", key(i))
    replies = p.execute()
    assert all(x[0] in (b"allow", b"deny") for x in replies), replies[:3]
    done += len(replies)
PY
    kill -TERM "$pid"
    wait "$pid" || true
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

per() { awk -v a="$1" -v n="$n" 'BEGIN { printf "%.0f", a / n }'; }
overhead() { awk -v on="$1" -v off="$2" 'BEGIN { printf "%.2f", (on - off) * 100 / off }'; }
verdict() { awk -v p="$1" 'BEGIN { print (p <= 5) ? "MET" : "MISSED" }'; }

for name in allowed hot churn; do
    off=$(instructions false "$name")
    on=$(instructions true "$name")
    [[ -n "$off" && -n "$on" ]] || { echo "bench_stats: no callgrind totals" >&2; exit 1; }
    echo "stats_off_${name}_instructions_per_decision $(per "$off") instructions"
    echo "stats_on_${name}_instructions_per_decision $(per "$on") instructions"
    p=$(overhead "$on" "$off")
    echo "stats_overhead_${name} $p % $(verdict "$p") target <= 5 %"
done
