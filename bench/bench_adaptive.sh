#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# bench_adaptive.sh BUILD_DIR - concurrency limits in the proxy under a load
# that outgrows the upstream, and an upstream whose capacity changes.
#
# How to run: `make bench` runs it with the others; alone,
#   bench/bench_adaptive.sh build-release
# (the release build with the bench targets: bench/adaptive_upstream and
# bench/adaptive_load next to server/sluiced). About 5 minutes with every
# variant, under 2 minutes while the proxy has no adaptive_concurrency.
# SL_ADAPTIVE_SECONDS=21 halves every phase for a quick look (then the
# settle window shrinks too and the figures are not the targets' own).
#
# The setup: bench/adaptive_upstream, processor sharing over C slots of W ms
# of work each (C = SL_ADAPTIVE_SLOTS 20, W = SL_ADAPTIVE_WORK_MS 20: an
# unloaded latency of W, a capacity of C/W = 1000 req/s; beyond it every
# request slows down as more are in flight), behind sluiced as a reverse
# proxy (one worker, memory store, one route), driven by bench/adaptive_load
# on a schedule (open loop: one request in flight per connection, new
# connections as needed, a request unanswered after 1 s abandoned). The
# rates are kept modest (at most 3x capacity, 3000 req/s) so that neither
# the generator nor the proxy is the bottleneck: the servers (upstream and
# sluiced) are pinned to CPU 0, the generator to CPU 1, and each run prints
# the generator's send lag (how late requests left) and peak connections.
#
# Each variant runs the same phases (seconds at SL_ADAPTIVE_SECONDS=42):
#   ramp       8 s  offered load 0.5x -> 3x capacity, C slots
#   overload   6 s  3x, C slots
#   halved    14 s  3x, C/2 slots (the upstream loses half its capacity)
#   restored  14 s  3x, C slots (it doubles again)
# and the variants are:
#   none      no limit: everything goes upstream
#   fixed     a `concurrency` limit (lease 30 s) on a key every request
#             shares, over it 503: the best fixed limit for the first
#             capacity, N = capacity x measured unloaded latency rounded up
#             (Little's law; 22 at the defaults; SL_ADAPTIVE_FIXED_N): just
#             enough requests in flight to keep all C slots busy while
#             answers travel back through the proxy. Fewer leave slots idle,
#             more only add latency (n in flight take n*W/C each)
#   gradient, gradient2, vegas, aimd
#             `adaptive_concurrency: {algorithm: A}` on the route (plus
#             SL_ADAPTIVE_OPTS, e.g. "min_limit: 2"), run only if `sluiced -t`
#             accepts the configuration
#   classes   gradient with classes {critical 50%, default 35%, sheddable
#             15%} from X-Priority, at 3x overload with the mix
#             SL_ADAPTIVE_MIX (critical 8% of 3x: 24% of the capacity,
#             about half its 50% share of the slots at the latency the
#             limit settles at, so that its own bursts fit: at 10% (30% of
#             the capacity) 98.9% were admitted); and
#             fixed_classes, the fixed limit under the same mix (which has
#             no classes) for comparison
# SL_ADAPTIVE_VARIANTS picks some of them (e.g. "none fixed").
#
# How to read it: the unloaded latency is measured first (no limit, 0.3x
# capacity, through the proxy); the SLO is twice it. goodput is the 2xx
# answers within the SLO per second; goodput_ratio is goodput over what the
# upstream allows in that phase (per second min(offered, capacity), so 1.0
# is perfect even while the ramp is below capacity). p99 is of the admitted
# (2xx) requests (-1: none was admitted). For halved and restored,
# reconverge is the second of the phase from which every second has
# goodput >= 90% of capacity and p99 <= the SLO (-1: never), and settled_*
# are over the phase from 10 s on (less in shortened runs). The targets
# (MET/MISSED, adaptive concurrency with its default algorithm gradient):
# goodput_ratio >= 0.9 and p99 <= SLO in every phase (ramp and overload
# whole, halved and restored settled), reconverge <= 10 s; with classes at
# 3x overload, critical admitted fraction >= 0.99. The other
# algorithms get the same verdicts in lower case (informational). For none
# and fixed the script prints observations (lines starting with #): no
# limit collapses at overload (every request slows past the SLO), and a
# fixed limit tuned for C puts N on C/2 slots when the capacity halves:
# 2N*W/C, a little over 2W, past the SLO.
# The figures move with the machine's load (the latency tails most): run it
# on an idle machine for figures to keep.
#
# Plots: gnuplot SVGs into SL_ADAPTIVE_PLOTS (default BUILD_DIR/bench-adaptive):
# VARIANT.svg (offered, goodput and capacity; p99 and the SLO; over time),
# goodput.svg and p99.svg (every variant), and VARIANT.dat, the time series
# (bench/adaptive_load --series). It does not build anything and kills only
# the servers it started (by PID).
set -euo pipefail
build=${1:-build-release}
sluiced=$build/server/sluiced
upstream=$build/bench/adaptive_upstream
load=$build/bench/adaptive_load
slots=${SL_ADAPTIVE_SLOTS:-20}
work_ms=${SL_ADAPTIVE_WORK_MS:-20}
total=${SL_ADAPTIVE_SECONDS:-42}
mix=${SL_ADAPTIVE_MIX:-critical=0.08,default=0.32,sheddable=0.6}
# none last: its thousands of abandoned connections would disturb what follows.
variants=${SL_ADAPTIVE_VARIANTS:-fixed gradient gradient2 vegas aimd classes none}
opts=${SL_ADAPTIVE_OPTS:-}
# gradient's buffer: the latency above minRTT it tolerates before it
# lowers the limit. Envoy's default, 25 %, lets this upstream queue to about
# 1.5x its unloaded latency, and the second the load first crosses its
# capacity reaches a p99 past 2x; 10 % keeps it within (both are in
# docs/adaptive.md). SL_ADAPTIVE_GRADIENT_OPTS="" runs the default.
gradient_opts=${SL_ADAPTIVE_GRADIENT_OPTS-buffer: 10}
plots=${SL_ADAPTIVE_PLOTS:-$build/bench-adaptive}
for f in "$sluiced" "$upstream" "$load"; do
    [[ -x "$f" ]] || { echo "bench_adaptive: $f not built (cmake -DSL_BUILD_BENCH=ON)" >&2; exit 1; }
done
. "$(dirname "$0")/lib.sh"
bench_init bench_adaptive taskset curl gnuplot awk
mkdir -p "$plots"

# Phase lengths: scaled from 42 s, whole seconds, at least 2 each.
len() { awk -v t="$total" -v s="$1" 'BEGIN { v = int(t * s / 42 + 0.5); print (v < 2 ? 2 : v) }'; }
ramp_s=$(len 8) over_s=$(len 6) half_s=$(len 14)
settle=$(awk -v h="$half_s" 'BEGIN { s = int(h * 2 / 3); print (s > 10 ? 10 : s) }')
cap=$(awk -v c="$slots" -v w="$work_ms" 'BEGIN { print c * 1000 / w }')
half_slots=$(awk -v c="$slots" 'BEGIN { print c / 2 }')
rate() { awk -v c="$cap" -v x="$1" 'BEGIN { print c * x }'; }
phases="ramp:$ramp_s:$(rate 0.5):$(rate 3):$slots overload:$over_s:$(rate 3):$(rate 3):$slots"
phases+=" halved:$half_s:$(rate 3):$(rate 3):$half_slots restored:$half_s:$(rate 3):$(rate 3):$slots"
class_phases="warm:2:$(rate 0.5):$(rate 0.5):$slots overload:$((over_s + 2)):$(rate 3):$(rate 3):$slots"

up_port=$(free_port)
taskset -c 0 "$upstream" --port "$up_port" --slots "$slots" --work-ms "$work_ms" &
pids+=($!)
wait_http "$up_port" /_health

# gen NAME PORT PHASES [ARGS...]: the generator on CPU 1, its lines to $tmp/NAME.out.
gen() {
    local name=$1 port=$2 ph=$3
    shift 3
    taskset -c 1 "$load" --port "$port" --control "$up_port" --work-ms "$work_ms" \
        --slo-ms "${slo:-$((2 * work_ms))}" --settle "$settle" --phases "$ph" \
        --name "adaptive_$name" --series "$plots/$name.dat" "$@" >"$tmp/$name.out"
}
val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

# The upstream alone: below capacity a request takes W (plus at most the
# 1 ms tick).
gen upstream "$up_port" "low:3:$(rate 0.3):$(rate 0.3):$slots near:3:$(rate 0.9):$(rate 0.9):$slots"
grep -E '_(p50|p99|goodput_ratio|send_lag_p99) ' "$tmp/upstream.out"
near=$(val adaptive_upstream_near_p50 "$tmp/upstream.out")
awk -v p="$near" -v w="$work_ms" 'BEGIN { printf "# sanity: the upstream alone at 0.9x capacity: p50 %s ms for W = %s ms: %s\n",
    p, w, (p >= w && p <= w + 2) ? "as modelled" : "NOT as modelled" }'

# sluiced_conf NAME ROUTE_EXTRA: $tmp/NAME.yaml, one route to the upstream.
sluiced_conf() {
    cat >"$tmp/$1.yaml" <<YAML
listeners: [{address: 127.0.0.1, port: $sl_port, protocols: [proxy]}]
workers: 1
log: {level: warn, access: "off"}
server: {max_connections: 20000}
$(if [[ -e $tmp/rules.yaml ]]; then echo "rules: {files: [rules.yaml]}"; fi)
proxy:
  read_timeout: 30s
  trusted_proxies: [127.0.0.1/32] # the generator: its X-Priority is believed
  routes:
    - name: api
      upstream: {servers: ["127.0.0.1:$up_port"], max_fails: 0, keepalive: 1024}
$2
YAML
}
fixed_route="      domain: adaptive
      deny_status: 503
      rate_limits: [{actions: [{generic_key: {descriptor_value: all}}]}]"
adaptive_route() {
    local o=$opts
    [[ $1 == gradient && -n $gradient_opts ]] && o=${o:+$o, }$gradient_opts
    echo "      adaptive_concurrency: {algorithm: $1${o:+, $o}${2:+, $2}}"
}
classes_keys="classes: {critical: 50%, default: 35%, sheddable: 15%}, class_from: {header: X-Priority}"

start_sluiced() {
    sl_port=$(free_port)
    sluiced_conf "$1" "$2"
    taskset -c 0 "$sluiced" -c "$tmp/$1.yaml" 2>"$tmp/$1.log" &
    sl_pid=$!
    pids+=($sl_pid)
    wait_http "$sl_port" /_health
}
stop_sluiced() {
    kill "$sl_pid" 2>/dev/null || true
    wait "$sl_pid" 2>/dev/null || true
    sleep 0.5 # the upstream drops what the proxy's connections carried
}

# Unloaded latency through the proxy, and the SLO.
start_sluiced calibrate ""
gen calibrate "$sl_port" "unloaded:3:$(rate 0.3):$(rate 0.3):$slots"
stop_sluiced
unloaded=$(val adaptive_calibrate_unloaded_p50 "$tmp/calibrate.out")
slo=$(awk -v u="$unloaded" 'BEGIN { printf "%.3f", 2 * u }')
echo "adaptive_unloaded_latency $unloaded ms"
echo "adaptive_slo $slo ms"
echo "adaptive_capacity $cap req/s"
# The fixed limit: by Little's law, the requests in flight that keep every
# slot busy at the unloaded latency, capacity x unloaded latency, rounded
# up (N = C would leave slots idle while an answer travels back through the
# proxy and the next admitted request comes in: ~5-10% of the capacity).
fixed_n=${SL_ADAPTIVE_FIXED_N:-$(awk -v c="$cap" -v u="$unloaded" 'BEGIN { n = c * u / 1000; print ((n == int(n)) ? n : int(n) + 1) }')}
echo "adaptive_fixed_limit $fixed_n requests"
cat >"$tmp/rules.yaml" <<YAML
domain: adaptive
descriptors:
  - key: generic_key
    value: all
    limits: [{name: in_flight, algorithm: concurrency, requests: $fixed_n, lease: 30s}]
YAML

# verdicts MODE FILE: the generator's lines, the judged ones followed by a
# verdict. MODE target: MET/MISSED; info: met/missed; observe: none, and
# a summary line of the phases that missed.
verdicts() {
    awk -v mode="$1" -v slo="$slo" -v settle="$settle" '
    function judge(ok, target) {
        if (!ok) missed[++nm] = $1
        if (mode == "target") print $0, (ok ? "MET" : "MISSED"), target
        else if (mode == "info") print $0, (ok ? "met" : "missed"), target, "(informational)"
        else print $0
    }
    $1 ~ /_(ramp|overload)_goodput_ratio$/ || $1 ~ /_settled_goodput_ratio$/ { judge($2 >= 0.9, "target>=0.9"); next }
    $1 ~ /_(ramp|overload)_p99$/ || $1 ~ /_settled_p99$/ { judge($2 >= 0 && $2 <= slo, "target<=" slo); next }
    $1 ~ /_reconverge$/ { judge($2 >= 0 && $2 <= 10, "target<=10"); next }
    { print }
    END {
        if (mode != "observe") exit
        s = ""; ps = ""
        for (i = 1; i <= nm; i++) {
            s = s " " missed[i]
            if (match(missed[i], /_(ramp|overload|halved|restored)_/)) {
                ph = substr(missed[i], RSTART + 1, RLENGTH - 2)
                if (!(ph in seen)) { seen[ph] = 1; np++; ps = ps " " ph }
            }
        }
        printf "# observation: misses the adaptive targets in %d phase(s):%s (%s)\n", np + 0, ps, (nm ? s : " none")
    }' "$2"
}

run_variant() { # NAME MODE ROUTE_EXTRA
    start_sluiced "$1" "$3"
    gen "$1" "$sl_port" "$phases"
    stop_sluiced
    verdicts "$2" "$tmp/$1.out"
}

ran=()
# conf_ok NAME ROUTE_EXTRA: does this sluiced accept the variant's
# configuration? The first refusal of adaptive_concurrency itself says so
# once; a refusal of one variant's keys names the variant.
have_adaptive=unknown
conf_ok() {
    sl_port=$(free_port)
    sluiced_conf "probe_$1" "$2"
    "$sluiced" -t -c "$tmp/probe_$1.yaml" >"$tmp/probe_$1.log" 2>&1 && { have_adaptive=yes; return 0; }
    if grep -q "unknown route key 'adaptive_concurrency'" "$tmp/probe_$1.log"; then
        [[ $have_adaptive == no ]] || echo "SKIPPED: this sluiced has no adaptive_concurrency"
        have_adaptive=no
    else
        echo "SKIPPED: adaptive_$1: sluiced -t refuses its configuration:" \
            "$(grep -v ' info ' "$tmp/probe_$1.log" | head -1)"
    fi
    return 1
}

for v in $variants; do
    case $v in
    none)
        run_variant none observe ""
        r=$(val adaptive_none_overload_goodput_ratio "$tmp/none.out")
        awk -v r="$r" 'BEGIN { printf "# observation: no limit at 3x overload: goodput_ratio %s: %s\n", r,
            r < 0.5 ? "collapses (every request slows past the SLO)" : "does not collapse" }'
        ;;
    fixed) run_variant fixed observe "$fixed_route" ;;
    gradient | gradient2 | vegas | aimd)
        conf_ok "$v" "$(adaptive_route "$v")" || continue
        mode=info
        [[ $v == gradient ]] && mode=target
        run_variant "$v" "$mode" "$(adaptive_route "$v")"
        ;;
    classes)
        start_sluiced fixed_classes "$fixed_route"
        gen fixed_classes "$sl_port" "$class_phases" --classes "$mix"
        stop_sluiced
        grep '_overload_' "$tmp/fixed_classes.out"
        echo "# observation: a fixed limit has no classes: critical admitted fraction" \
            "$(val adaptive_fixed_classes_overload_critical_admitted_fraction "$tmp/fixed_classes.out")"
        ran+=(fixed_classes)
        conf_ok classes "$(adaptive_route gradient "$classes_keys")" || continue
        start_sluiced classes "$(adaptive_route gradient "$classes_keys")"
        gen classes "$sl_port" "$class_phases" --classes "$mix"
        stop_sluiced
        awk '$1 ~ /_overload_critical_admitted_fraction$/ { print $0, ($2 >= 0.99 ? "MET" : "MISSED"), "target>=0.99"; next }
             $1 ~ /_overload_/ { print }' "$tmp/classes.out"
        echo "# observation: sheddable shed fraction at 3x overload" \
            "$(val adaptive_classes_overload_sheddable_shed_fraction "$tmp/classes.out")"
        ;;
    *) echo "bench_adaptive: unknown variant '$v'" >&2; exit 1 ;;
    esac
    [[ $v == classes ]] && { ran+=(classes); continue; }
    ran+=("$v")
done

# ------------------------------------------------------------------ plots
# One SVG per variant that ran, and goodput/p99 of the phase variants
# together; dotted lines where a phase starts.
phase_lines() { # PHASES: gnuplot arrows at each phase's start but the first
    awk -v ph="$1" 'BEGIN { n = split(ph, p, " "); at = 0
        for (i = 1; i < n; i++) { split(p[i], f, ":"); at += f[2]
            printf "set arrow from %d, graph 0 to %d, graph 1 nohead dt 3 lc \"gray40\"\n", at, at } }'
}
plot_variant() { # NAME PHASES
    gnuplot <<GP
set terminal svg size 900,640 dynamic font "sans,11"
set output "$plots/$1.svg"
set multiplot layout 2,1 title "$1: W = $work_ms ms, C = $slots slots, SLO $slo ms"
set grid
set key outside right
set xlabel "s"
$(phase_lines "$2")
set ylabel "req/s"
set yrange [0:$(rate 3.3)]
plot "$plots/$1.dat" using 1:8 with steps lw 2 lc "black" title "capacity", \
     "" using 1:2 with lines lc "gray" title "offered", \
     "" using 1:4 with lines lw 2 lc "blue" title "goodput", \
     "" using 1:5 with lines lc "red" title "shed", \
     "" using 1:6 with lines lc "orange" title "errors"
set ylabel "ms"
set yrange [*:*]
set logscale y
plot "$plots/$1.dat" using 1:(\$7 > 0 ? \$7 : 1/0) with lines lw 2 lc "blue" title "p99 (2xx)", \
     $slo with lines dt 2 lc "black" title "SLO"
unset multiplot
GP
}
for v in "${ran[@]}"; do
    if [[ $v == *classes ]]; then plot_variant "$v" "$class_phases"; else plot_variant "$v" "$phases"; fi
done
plot_variant upstream "low:3 near:3"
series=()
for v in "${ran[@]}"; do [[ $v == *classes ]] || series+=("$v"); done
if ((${#series[@]} > 0)); then
    gp_goodput="\"$plots/${series[0]}.dat\" using 1:8 with steps lw 2 lc \"black\" title \"capacity\""
    gp_p99="$slo with lines dt 2 lc \"black\" title \"SLO\""
    for v in "${series[@]}"; do
        gp_goodput+=", \"$plots/$v.dat\" using 1:4 with lines lw 2 title \"$v\""
        gp_p99+=", \"$plots/$v.dat\" using 1:(\$7 > 0 ? \$7 : 1/0) with lines lw 2 title \"$v\""
    done
    gnuplot <<GP
set terminal svg size 900,420 dynamic font "sans,11"
$(phase_lines "$phases")
set grid
set key outside right
set xlabel "s"
set output "$plots/goodput.svg"
set title "goodput (2xx within $slo ms) per second"
set ylabel "req/s"
set yrange [0:$(rate 1.2)]
plot $gp_goodput
set output "$plots/p99.svg"
set title "p99 of admitted requests per second"
set ylabel "ms"
set yrange [*:*]
set logscale y
plot $gp_p99
GP
fi
echo "# plots: $plots"
