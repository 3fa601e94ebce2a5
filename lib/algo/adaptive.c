/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * adaptive.c - adaptive concurrency limits (include/sluice_adaptive.h): the
 * common calls (configuration, acquire, release, statistics) and three of
 * the controllers, after Netflix's concurrency-limits: AIMD (loss based),
 * Vegas (queue estimated from the no-load latency) and Gradient2 (short
 * against long latency). Envoy's gradient controller, which works in time
 * windows, is adaptive_gradient.c. The formulas, defaults and differences
 * are docs/algorithms.md §Adaptive concurrency.
 *
 * Deliberately does not: read a clock, allocate, lock, queue waiters, or
 * call libm (doubles with + - * / only, compiled with -ffp-contract=off so
 * that no platform fuses them: the same samples give the same limits
 * everywhere). A caller's time that steps back is taken as the latest seen.
 */
#include <string.h>

#include "algo/adaptive_int.h"
#include "sluice_sat.h"

/* Netflix ExpAvgMeasurement's warm-up: the first samples are averaged. */
#define G2_WARMUP 10u

static const char *const names[] = {
    [SL_ADAPTIVE_GRADIENT] = "gradient",
    [SL_ADAPTIVE_GRADIENT2] = "gradient2",
    [SL_ADAPTIVE_VEGAS] = "vegas",
    [SL_ADAPTIVE_AIMD] = "aimd",
};
#define N_ALGOS (sizeof(names) / sizeof(names[0]))

int sl_adaptive_algo_parse(const char *name, enum sl_adaptive_algo *out)
{
    for (size_t i = 0; name != NULL && i < N_ALGOS; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (enum sl_adaptive_algo)i;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

const char *sl_adaptive_algo_name(enum sl_adaptive_algo algo)
{
    return (unsigned)algo < N_ALGOS ? names[algo] : "?";
}

const char *sl_adaptive_phase_name(enum sl_adaptive_phase phase)
{
    switch (phase) {
    case SL_ADAPTIVE_STEADY:
        return "steady";
    case SL_ADAPTIVE_MEASURING_MIN_RTT:
        return "measuring_min_rtt";
    }
    return "?";
}

uint64_t sl__adaptive_rand(struct sl_adaptive *a)
{
    uint64_t z = (a->rng += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

int64_t sl__adaptive_ceil(double x)
{
    if (!(x < 0x1p63))
        return INT64_MAX; /* and NaN, which no caller passes */
    int64_t i = (int64_t)x;

    return (double)i < x ? i + 1 : i;
}

void sl_adaptive_config_init(struct sl_adaptive_config *c, enum sl_adaptive_algo algo)
{
    memset(c, 0, sizeof(*c));
    c->algo = algo;
    c->initial_limit = 20;
    c->min_limit = 20;
    c->max_limit = 200;
    c->backoff_ratio = 0.9;
    c->timeout_ns = 5 * SL_NS_PER_S;
    c->smoothing = 0.2;
    c->probe_multiplier = 30;
    c->rtt_tolerance = 1.5;
    c->long_window = 600;
    c->queue_size = 4;
    c->percentile = 50;
    c->update_interval_ns = 100 * SL_NS_PER_MS;
    c->min_rtt_interval_ns = 60 * SL_NS_PER_S;
    c->min_rtt_requests = 50;
    c->jitter_pct = 15;
    c->buffer_pct = 25;
    c->consecutive_at_min = 5;
    c->app_limited = true;
    if (algo == SL_ADAPTIVE_VEGAS) {
        c->min_limit = 1;
        c->max_limit = 1000;
        c->smoothing = 1.0;
    } else if (algo == SL_ADAPTIVE_GRADIENT) {
        c->initial_limit = 3;
        c->min_limit = 3;
        c->max_limit = 1000;
    }
}

/* NaN fails every range check: they are written as !(in range). */
static bool in(double x, double lo, double hi)
{
    return x >= lo && x <= hi;
}

static int bad(const char **why, const char *msg)
{
    if (why != NULL)
        *why = msg;
    return SL_EINVAL;
}

static int validate_limits(const struct sl_adaptive_config *c, const char **why)
{
    if (c->min_limit < 1)
        return bad(why, "adaptive: min_limit must be at least 1");
    if (c->max_limit < c->min_limit)
        return bad(why, "adaptive: max_limit must be at least min_limit");
    if (c->initial_limit < c->min_limit || c->initial_limit > c->max_limit)
        return bad(why, "adaptive: initial_limit must lie between min_limit and max_limit");
    return SL_OK;
}

static int validate_gradient(const struct sl_adaptive_config *c, const char **why)
{
    if (!(c->percentile > 0 && c->percentile <= 100))
        return bad(why, "adaptive gradient: percentile must be above 0 and at most 100");
    if (c->update_interval_ns <= 0)
        return bad(why, "adaptive gradient: update_interval must be a positive duration");
    if (c->min_rtt_interval_ns <= 0)
        return bad(why, "adaptive gradient: min_rtt_interval must be a positive duration");
    if (c->min_rtt_requests < 1)
        return bad(why, "adaptive gradient: min_rtt_requests must be at least 1");
    if (!in(c->jitter_pct, 0, 100))
        return bad(why, "adaptive gradient: jitter must be a percentage from 0 to 100");
    if (!in(c->buffer_pct, 0, 100))
        return bad(why, "adaptive gradient: buffer must be a percentage from 0 to 100");
    if (c->consecutive_at_min < 1)
        return bad(why, "adaptive gradient: consecutive_at_min must be at least 1");
    return SL_OK;
}

int sl_adaptive_config_validate(const struct sl_adaptive_config *c, const char **why)
{
    int rc;

    if ((unsigned)c->algo >= N_ALGOS)
        return bad(why, "adaptive: algorithm must be gradient, gradient2, vegas or aimd");
    if ((rc = validate_limits(c, why)) != SL_OK)
        return rc;
    switch (c->algo) {
    case SL_ADAPTIVE_AIMD:
        if (!(c->backoff_ratio >= 0.5 && c->backoff_ratio < 1))
            return bad(why, "adaptive aimd: backoff_ratio must be at least 0.5 and below 1");
        if (c->timeout_ns <= 0)
            return bad(why, "adaptive aimd: timeout must be a positive duration");
        return SL_OK;
    case SL_ADAPTIVE_VEGAS:
        if (c->probe_multiplier < 1)
            return bad(why, "adaptive vegas: probe_multiplier must be at least 1");
        break;
    case SL_ADAPTIVE_GRADIENT2:
        if (!(c->rtt_tolerance >= 1 && c->rtt_tolerance <= 1e6))
            return bad(why, "adaptive gradient2: rtt_tolerance must be at least 1");
        if (c->long_window < 1)
            return bad(why, "adaptive gradient2: long_window must be at least 1 sample");
        break;
    case SL_ADAPTIVE_GRADIENT:
        return validate_gradient(c, why);
    }
    if (!(c->smoothing > 0 && c->smoothing <= 1))
        return bad(why, "adaptive: smoothing must be above 0 and at most 1");
    return SL_OK;
}

/* Vegas's probe point: a fresh factor in [0.5, 1) from the seed. */
static void vegas_jitter(struct sl_adaptive *a)
{
    a->probe_jitter = 0.5 + (double)(sl__adaptive_rand(a) >> 11) * 0x1p-54;
}

int sl_adaptive_init(struct sl_adaptive *a, const struct sl_adaptive_config *c, int64_t now_ns,
                     uint64_t seed, const char **why)
{
    int rc = sl_adaptive_config_validate(c, why);

    if (rc != SL_OK)
        return rc;
    memset(a, 0, sizeof(*a));
    a->cfg = *c;
    a->rng = seed;
    a->last_ns = now_ns;
    a->estimate = c->initial_limit;
    a->limit = c->initial_limit;
    if (c->algo == SL_ADAPTIVE_VEGAS)
        vegas_jitter(a);
    if (c->algo == SL_ADAPTIVE_GRADIENT)
        sl__adaptive_gradient_init(a, now_ns);
    return SL_OK;
}

/* The estimate clamped to [min, max], and the whole limit under it. */
static void set_estimate(struct sl_adaptive *a, double est)
{
    double lo = a->cfg.min_limit, hi = a->cfg.max_limit;

    a->estimate = est < lo ? lo : est > hi ? hi : est;
    a->limit = (uint32_t)a->estimate;
}

/* AIMDLimit: a drop or a latency above the timeout multiplies the limit by
 * backoff_ratio (truncated); otherwise a sample taken with at least half the
 * limit in flight adds one. */
static void aimd(struct sl_adaptive *a, int64_t rtt_ns, uint32_t inflight, bool dropped)
{
    uint32_t l = a->limit;

    if (dropped || rtt_ns > a->cfg.timeout_ns)
        l = (uint32_t)(l * a->cfg.backoff_ratio);
    else if ((uint64_t)inflight * 2 >= l)
        l = l == UINT32_MAX ? l : l + 1;
    set_estimate(a, l);
}

/* Netflix's Log10RootFunction: max(1, floor(log10(n))), in integers. */
static uint32_t log10_root(uint32_t n)
{
    uint32_t d = 0;

    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d < 1 ? 1 : d;
}

/* VegasLimit. The noload RTT is the least latency seen, re-probed (taken
 * as the sample itself) every probe_jitter x probe_multiplier x limit
 * samples; the queue is ceil(limit x (1 - noload / rtt)). */
static void vegas(struct sl_adaptive *a, int64_t rtt_ns, uint32_t inflight, bool dropped)
{
    double est = a->estimate, next;
    uint32_t f = log10_root((uint32_t)est);
    int64_t queue;

    a->probe_count++;
    if (a->probe_jitter * a->cfg.probe_multiplier * est <= (double)a->probe_count) {
        vegas_jitter(a);
        a->probe_count = 0;
        a->noload_ns = rtt_ns;
        return;
    }
    if (a->noload_ns == 0 || rtt_ns < a->noload_ns) {
        a->noload_ns = rtt_ns;
        return;
    }
    queue = sl__adaptive_ceil(est * (1 - (double)a->noload_ns / (double)rtt_ns));
    if (dropped)
        next = est - f;
    else if ((double)inflight * 2 < est)
        return; /* app-limited: no upward drift */
    else if (queue <= (int64_t)f)
        next = est + 6.0 * f; /* no queue: grow by beta */
    else if (queue < (int64_t)(3 * f))
        next = est + f; /* below alpha */
    else if (queue > (int64_t)(6 * f))
        next = est - f; /* above beta */
    else
        return;
    if (next < a->cfg.min_limit)
        next = a->cfg.min_limit;
    if (next > a->cfg.max_limit)
        next = a->cfg.max_limit;
    set_estimate(a, (1 - a->cfg.smoothing) * est + a->cfg.smoothing * next);
}

/* Gradient2Limit. short = the sample; long = its exponential average
 * (factor 2 / (long_window + 1), the first 10 samples averaged), decayed by
 * 0.95 when above twice the short; gradient = clamp(tolerance x long / short,
 * 0.5, 1); estimate' = estimate x (1 - s) + (estimate x gradient + queue) x
 * s, unless fewer than estimate / 2 are in flight. */
static void gradient2(struct sl_adaptive *a, int64_t rtt_ns, uint32_t inflight)
{
    double rtt = (double)rtt_ns, est = a->estimate, s = a->cfg.smoothing, lng, g, next;

    if (a->long_count < G2_WARMUP) {
        a->long_count++;
        a->long_sum_ns += rtt;
        a->long_rtt_ns = a->long_sum_ns / a->long_count;
    } else {
        double k = 2.0 / ((double)a->cfg.long_window + 1);

        a->long_rtt_ns = a->long_rtt_ns * (1 - k) + rtt * k;
    }
    lng = a->long_rtt_ns;
    if (lng / rtt > 2)
        a->long_rtt_ns = lng * 0.95; /* drift back after an overload */
    if ((double)inflight < est / 2)
        return; /* app-limited */
    g = a->cfg.rtt_tolerance * lng / rtt;
    g = g < 0.5 ? 0.5 : g > 1.0 ? 1.0 : g;
    a->gradient = g;
    next = est * g + a->cfg.queue_size;
    set_estimate(a, est * (1 - s) + next * s);
}

/* The time seen now: never earlier than before. */
static int64_t clamp_now(struct sl_adaptive *a, int64_t now_ns)
{
    if (now_ns > a->last_ns)
        a->last_ns = now_ns;
    return a->last_ns;
}

void sl_adaptive_tick(struct sl_adaptive *a, int64_t now_ns)
{
    int64_t t = clamp_now(a, now_ns);

    if (a->cfg.algo == SL_ADAPTIVE_GRADIENT)
        sl__adaptive_gradient_tick(a, t);
}

/* One sample at clamped time t of a request that started at start_ns. */
static void sample(struct sl_adaptive *a, int64_t t, int64_t start_ns, int64_t rtt_ns,
                   uint32_t inflight, bool dropped)
{
    if (rtt_ns < 0)
        return;
    if (rtt_ns == 0)
        rtt_ns = 1;
    a->samples++;
    if (a->cfg.algo != SL_ADAPTIVE_GRADIENT)
        a->last_rtt_ns = rtt_ns;
    switch (a->cfg.algo) {
    case SL_ADAPTIVE_AIMD:
        aimd(a, rtt_ns, inflight, dropped);
        break;
    case SL_ADAPTIVE_VEGAS:
        vegas(a, rtt_ns, inflight, dropped);
        break;
    case SL_ADAPTIVE_GRADIENT2:
        gradient2(a, rtt_ns, inflight);
        break;
    case SL_ADAPTIVE_GRADIENT:
        sl__adaptive_gradient_sample(a, t, start_ns, rtt_ns, inflight);
        break;
    }
}

void sl_adaptive_on_sample(struct sl_adaptive *a, int64_t now_ns, int64_t rtt_ns, uint32_t inflight,
                           bool dropped)
{
    int64_t t;

    sl_adaptive_tick(a, now_ns);
    t = a->last_ns;
    sample(a, t, sl__sat_sub(t, rtt_ns < 0 ? 0 : rtt_ns), rtt_ns, inflight, dropped);
}

bool sl_adaptive_acquire(struct sl_adaptive *a, int64_t now_ns, struct sl_adaptive_ticket *t)
{
    sl_adaptive_tick(a, now_ns);
    if (a->inflight >= a->limit) {
        a->rejected++;
        return false;
    }
    a->inflight++;
    a->admitted++;
    t->start_ns = a->last_ns;
    t->inflight = a->inflight;
    return true;
}

void sl_adaptive_release(struct sl_adaptive *a, const struct sl_adaptive_ticket *t, int64_t now_ns,
                         int64_t latency_ns, enum sl_adaptive_outcome outcome)
{
    if (a->inflight > 0)
        a->inflight--;
    sl_adaptive_tick(a, now_ns);
    if (outcome == SL_ADAPTIVE_IGNORED)
        return;
    if (outcome == SL_ADAPTIVE_DROPPED)
        a->dropped++;
    sample(a, a->last_ns, t->start_ns, latency_ns, t->inflight, outcome == SL_ADAPTIVE_DROPPED);
}

uint32_t sl_adaptive_limit(const struct sl_adaptive *a)
{
    return a->limit;
}

void sl_adaptive_stats(const struct sl_adaptive *a, struct sl_adaptive_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->limit = a->limit;
    s->inflight = a->inflight;
    s->phase = (enum sl_adaptive_phase)a->phase;
    s->min_rtt_ns = a->cfg.algo == SL_ADAPTIVE_VEGAS ? a->noload_ns : a->min_rtt_ns;
    s->long_rtt_ns = a->long_rtt_ns >= 0x1p63 ? INT64_MAX : (int64_t)a->long_rtt_ns;
    s->sample_rtt_ns = a->last_rtt_ns;
    s->gradient = a->gradient;
    s->headroom = a->cfg.algo == SL_ADAPTIVE_GRADIENT2 ? (double)a->cfg.queue_size : a->headroom;
    s->estimate = a->estimate;
    s->next_min_rtt_ns = a->next_min_rtt_ns;
    s->admitted = a->admitted;
    s->rejected = a->rejected;
    s->dropped = a->dropped;
    s->samples = a->samples;
}
