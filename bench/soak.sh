#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# soak.sh BUILD_DIR [SECONDS] - `make soak` (not in CI, not in `make bench`):
# sluiced under mixed traffic for SECONDS (default 600) at ~80 % of the peak
# measured first, with idle, slow and abusive connections mixed in
# (bench/soak_abuse.py). Well-behaved clients are bench/oload (open loop,
# RESP and HTTP), their latency read per minute. Prints `name value unit`
# lines: RSS after warm-up and at the end (growth must stay under 10 %), p99
# per minute for each client (the largest over the smallest: stable when at
# most 3), and
# the errors seen by well-behaved clients (must be 0). sluiced is pinned to
# CPU 0, the clients to CPU 1.
set -euo pipefail
build=$1
total=${2:-600}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bench_init soak taskset redis-benchmark /usr/bin/python3
[[ -x "$build/server/sluiced" && -x "$build/bench/oload" ]] ||
    { echo "soak: build $build first (make bench builds it)" >&2; exit 1; }

port=$(free_port)
cat >"$tmp/rules.yaml" <<YAML
domain: bench
descriptors:
  - key: user
    limits: [{name: tb, algorithm: token_bucket, requests: 1000, period: 1s, burst: 2000}]
YAML
cat >"$tmp/sluice.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $port}]
workers: 1
rules: {files: [rules.yaml], watch: false}
server: {header_timeout: 5s, read_timeout: 5s, write_timeout: 5s, idle_timeout: 30s}
log: {level: error}
YAML
taskset -c 0 "$build/server/sluiced" -c "$tmp/sluice.yaml" 2>"$tmp/sluiced.log" &
sl=$!
pids+=($sl)
wait_redis "$port"

rss() { awk '/^VmRSS/ {print $2}' "/proc/$sl/status"; }

# The peak a closed-loop client reaches, then 80 % of it, open loop (RESP 3/4, HTTP 1/4).
peak=$(taskset -c 1 redis-benchmark -p "$port" -c 32 -n 200000 -r 100000 --csv \
    SL.CHECK bench 1 user __rand_int__ | awk -F'"' '/SL.CHECK/ {print int($4)}')
rate=$((peak * 8 / 10))
echo "soak_peak_rps $peak req/s"
echo "soak_offered_rps $rate req/s"

/usr/bin/python3 "$here/soak_abuse.py" "$port" "$total" >"$tmp/abuse.out" &
abuse=$!
pids+=($abuse)

minutes=$(( (total + 59) / 60 ))
rss_warm=0
p99s_resp=()
p99s_http=()
errors=0
for m in $(seq "$minutes"); do
    taskset -c 1 "$build/bench/oload" --proto resp --port "$port" --rate $((rate * 3 / 4)) \
        --conns 16 --seconds 59 --keys 100000 --name resp >"$tmp/resp.$m" &
    r=$!
    taskset -c 1 "$build/bench/oload" --proto http --port "$port" --rate $((rate / 4)) \
        --conns 8 --seconds 59 --keys 100000 --name http >"$tmp/http.$m"
    wait "$r"
    p99s_resp+=("$(awk '/_p99 / {print $2}' "$tmp/resp.$m")")
    p99s_http+=("$(awk '/_p99 / {print $2}' "$tmp/http.$m")")
    errors=$((errors + $(awk '/_errors |_unanswered / {s += $2} END {print s}' "$tmp/resp.$m" "$tmp/http.$m")))
    [[ $m -eq 1 ]] && rss_warm=$(rss)
    echo "# minute $m: rss $(rss) kB, p99 resp ${p99s_resp[-1]} us, http ${p99s_http[-1]} us"
done
wait "$abuse" || true
rss_end=$(rss)
cat "$tmp/abuse.out"
echo "soak_rss_after_warmup $rss_warm kB"
echo "soak_rss_end $rss_end kB"
growth=$(awk -v a="$rss_warm" -v b="$rss_end" 'BEGIN {printf "%.1f", (b - a) * 100 / a}')
verdict=$(awk -v g="$growth" 'BEGIN {print (g < 10) ? "MET" : "MISSED"}')
echo "soak_rss_growth $growth % $verdict target<10"
spread() { printf '%s\n' "$@" | sort -n | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.2f", hi/lo}'; }
# Stable: no minute's p99 more than 3 times another's.
stable() { awk -v r="$1" 'BEGIN {print (r <= 3) ? "MET" : "MISSED"}'; }
r=$(spread "${p99s_resp[@]}")
echo "soak_p99_resp_max_over_min $r x $(stable "$r") target<=3"
r=$(spread "${p99s_http[@]}")
echo "soak_p99_http_max_over_min $r x $(stable "$r") target<=3"
echo "soak_wellbehaved_errors $errors count $([[ $errors -eq 0 ]] && echo MET || echo MISSED) target=0"
kill -0 "$sl" || { echo "soak: sluiced died" >&2; exit 1; }
