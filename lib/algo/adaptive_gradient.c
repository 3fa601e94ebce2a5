/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * adaptive_gradient.c - Envoy's adaptive concurrency gradient controller
 * (docs/algorithms.md §gradient), over the caller's time: latency samples
 * gathered in windows of update_interval; at each window's end the
 * window's percentile is the sample RTT and
 *
 *     gradient = clamp((minRTT + minRTT x buffer) / sampleRTT, 0.5, 2)
 *     limit'   = floor(gradient x limit + sqrt(gradient x limit)), in [min, max]
 *
 * except that, with app_limited (the default), a window raises the limit
 * to at most twice the most in flight its requests started with (so one
 * whose requests all started with fewer than half the limit does not
 * raise it):
 * Envoy's controller grows a limit nobody uses (gradient 1.25 and the
 * headroom every window while the load is light), and the first burst
 * beyond the upstream's capacity then meets a limit far above it.
 *
 * The minRTT is measured with the limit pinned to min_limit, as the
 * percentile of the first min_rtt_requests samples of requests started
 * since the measurement began: at start, every min_rtt_interval plus a
 * jitter drawn from the caller's seed, and after consecutive_at_min windows
 * that left the limit at min_limit.
 *
 * The timers Envoy arms are deadlines here (window_end_ns,
 * next_min_rtt_ns), run by the first call at or after them, in time order.
 * A window keeps at most SL_ADAPTIVE_SAMPLES samples; beyond that it is a
 * uniform reservoir (Vitter's algorithm R, drawing from the seed).
 *
 * Deliberately does not: read a clock, allocate,
 * sort more than SL_ADAPTIVE_SAMPLES, or call libm but for sqrt (correctly rounded by IEEE 754).
 */
#include <math.h>

#include "algo/adaptive_int.h"
#include "sluice_sat.h"

static void clear_window(struct sl_adaptive *a)
{
    a->n = 0;
    a->window_seen = 0;
    a->window_peak = 0;
}

/* Keeps `rtt` in the window: appended while there is room, then each new
 * sample replaces a random one with probability SAMPLES / seen. */
static void keep(struct sl_adaptive *a, int64_t rtt_ns)
{
    a->window_seen++;
    if (a->n < SL_ADAPTIVE_SAMPLES) {
        a->window[a->n++] = rtt_ns;
        return;
    }
    uint64_t j = sl__adaptive_rand(a) % a->window_seen;
    if (j < SL_ADAPTIVE_SAMPLES)
        a->window[j] = rtt_ns;
}

/* The k-th smallest (0-based) of v[0..n-1], sorting v: an insertion sort,
 * at most SL_ADAPTIVE_SAMPLES^2 / 2 moves once per window. */
static int64_t select_kth(int64_t *v, uint32_t n, uint32_t k)
{
    for (uint32_t i = 1; i < n; i++) {
        int64_t x = v[i];
        uint32_t j = i;

        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    return v[k];
}

/* The window's percentile by nearest rank: the sample of rank
 * ceil(p x n / 100), 1-based; n > 0. Empties the window. */
static int64_t aggregate(struct sl_adaptive *a)
{
    int64_t rank = sl__adaptive_ceil(a->cfg.percentile * (double)a->n / 100);
    int64_t v;

    if (rank < 1)
        rank = 1;
    if (rank > a->n)
        rank = a->n;
    v = select_kth(a->window, a->n, (uint32_t)(rank - 1));
    clear_window(a);
    return v;
}

/* Sets the limit as Envoy's updateConcurrencyLimit does, counting the
 * windows that leave it at min_limit. */
static void set_limit(struct sl_adaptive *a, uint32_t l, bool measuring)
{
    uint32_t old = a->limit;

    a->limit = l;
    a->estimate = l;
    if (!measuring && old == a->cfg.min_limit && l == a->cfg.min_limit)
        a->at_min++;
    else
        a->at_min = 0;
}

static void start_min_rtt(struct sl_adaptive *a, int64_t at_ns)
{
    a->phase = SL_ADAPTIVE_MEASURING_MIN_RTT;
    a->deferred_limit = a->limit;
    a->epoch_ns = at_ns;
    set_limit(a, a->cfg.min_limit, true);
    clear_window(a);
}

void sl__adaptive_gradient_init(struct sl_adaptive *a, int64_t now_ns)
{
    start_min_rtt(a, now_ns);
}

/* The next minRTT measurement: interval + (a draw mod ceil(interval x
 * jitter)), after `now`. */
static int64_t next_min_rtt(struct sl_adaptive *a, int64_t now_ns)
{
    int64_t interval = a->cfg.min_rtt_interval_ns, range, delay = 0;

    range = sl__adaptive_ceil((double)interval * (a->cfg.jitter_pct / 100));
    if (range > 0)
        delay = (int64_t)(sl__adaptive_rand(a) % (uint64_t)range);
    return sl__sat_add(sl__sat_add(now_ns, interval), delay);
}

static void end_min_rtt(struct sl_adaptive *a, int64_t now_ns)
{
    a->min_rtt_ns = aggregate(a);
    set_limit(a, a->deferred_limit, true);
    a->deferred_limit = 0;
    a->phase = SL_ADAPTIVE_STEADY;
    a->next_min_rtt_ns = next_min_rtt(a, now_ns);
    a->window_end_ns = sl__sat_add(now_ns, a->cfg.update_interval_ns);
}

/* The new limit from the window's sample RTT (Envoy's calculateNewLimit). */
static uint32_t new_limit(struct sl_adaptive *a, int64_t sample_ns)
{
    double min_rtt = (double)a->min_rtt_ns;
    double g = (min_rtt + min_rtt * (a->cfg.buffer_pct / 100)) / (double)sample_ns;
    double l, sum;

    g = g < 0.5 ? 0.5 : g > 2.0 ? 2.0 : g;
    l = (double)a->limit * g;
    a->gradient = g;
    a->headroom = sqrt(l);
    sum = l + a->headroom;
    if (sum >= (double)a->cfg.max_limit)
        return a->cfg.max_limit;
    if (sum <= (double)a->cfg.min_limit)
        return a->cfg.min_limit;
    return (uint32_t)sum;
}

/* The window that ended at end_ns: a limit from its samples, if any. */
static void end_window(struct sl_adaptive *a, int64_t end_ns)
{
    if (a->n == 0)
        return;
    uint32_t l, peak = a->window_peak; /* aggregate() clears the window */

    a->last_rtt_ns = aggregate(a);
    l = new_limit(a, a->last_rtt_ns);
    /* app-limited: a limit is raised to at most twice the most in flight
     * the window saw (its latency says nothing of more than that), so one
     * not used to half is not raised at all */
    if (a->cfg.app_limited && l > a->limit && (uint64_t)l > 2 * (uint64_t)peak)
        l = (uint64_t)a->limit > 2 * (uint64_t)peak ? a->limit : 2 * peak;
    set_limit(a, l, false);
    if (a->at_min >= a->cfg.consecutive_at_min)
        a->next_min_rtt_ns = end_ns; /* the limit sits at its floor: measure again now */
}

void sl__adaptive_gradient_tick(struct sl_adaptive *a, int64_t now_ns)
{
    while (a->phase == SL_ADAPTIVE_STEADY) {
        int64_t end = a->window_end_ns, interval = a->cfg.update_interval_ns;

        if (a->next_min_rtt_ns <= now_ns && a->next_min_rtt_ns < end) {
            start_min_rtt(a, a->next_min_rtt_ns);
            return;
        }
        if (end > now_ns)
            return;
        end_window(a, end);
        /* Empty windows change nothing: skip to the first one not over. */
        int64_t skip = (now_ns - end) / interval;
        a->window_end_ns = sl__sat_add(end, sl__sat_mul(skip + 1, interval));
        if (a->next_min_rtt_ns <= end) {
            start_min_rtt(a, sl__max64(a->next_min_rtt_ns, end));
            return;
        }
    }
}

void sl__adaptive_gradient_sample(struct sl_adaptive *a, int64_t now_ns, int64_t start_ns,
                                  int64_t rtt_ns, uint32_t inflight)
{
    if (start_ns < a->epoch_ns)
        return; /* started before this minRTT measurement began */
    keep(a, rtt_ns);
    if (inflight > a->window_peak)
        a->window_peak = inflight;
    if (a->phase == SL_ADAPTIVE_MEASURING_MIN_RTT && a->window_seen >= a->cfg.min_rtt_requests)
        end_min_rtt(a, now_ns);
}
