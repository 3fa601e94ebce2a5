/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_adaptive.c - the adaptive concurrency controllers and the partitions
 * (include/sluice_adaptive.h, docs/algorithms.md §Adaptive concurrency,
 * §Partitions): a reference trace per controller computed by hand from the
 * published formulas (Netflix AIMDLimit, VegasLimit, Gradient2Limit; Envoy's
 * gradient controller), with the arithmetic beside each row; then the
 * properties (limit within [min, max] on random traces, a higher latency
 * never gives a higher limit, a steady latency at the no-load value grows
 * the limit to its max, clocks stepping back, latencies of 0, negative and
 * INT64_MAX), validation's error paths, and the partitions' rule under
 * overload.
 *
 * Does not: measure anything in time (no timing assertion), or compare
 * against the Java or C++ implementations themselves.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sluice_adaptive.h"

#define MS   SL_NS_PER_MS
#define S    SL_NS_PER_S
#define T0   (1000 * S) /* any start: the controllers take any monotonic clock */
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define EPS  1e-9

/* One sample and what follows it: the limit, and the unrounded estimate. */
struct row {
    int64_t rtt_ns;
    uint32_t inflight;
    bool dropped;
    uint32_t limit;
    double estimate;
};

static void run(struct sl_adaptive *a, const struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sl_adaptive_on_sample(a, T0 + (int64_t)i * MS, rows[i].rtt_ns, rows[i].inflight,
                              rows[i].dropped);
        if (sl_adaptive_limit(a) != rows[i].limit || fabs(a->estimate - rows[i].estimate) > EPS)
            fail_msg("row %zu: limit %u estimate %.12f, expected %u %.12f", i, sl_adaptive_limit(a),
                     a->estimate, rows[i].limit, rows[i].estimate);
    }
}

static void start(struct sl_adaptive *a, const struct sl_adaptive_config *c)
{
    const char *why = NULL;

    if (sl_adaptive_init(a, c, T0, 42, &why) != SL_OK)
        fail_msg("init: %s", why);
}

/* ------------------------------------------------------------ names, defaults */

static void names_parse(void **unused)
{
    static const char *const names[] = {"gradient", "gradient2", "vegas", "aimd"};
    enum sl_adaptive_algo a;

    (void)unused;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sl_adaptive_algo_parse(names[i], &a), SL_OK);
        assert_int_equal(a, i);
        assert_string_equal(sl_adaptive_algo_name(a), names[i]);
    }
    assert_int_equal(sl_adaptive_algo_parse("Gradient", &a), SL_EINVAL);
    assert_int_equal(sl_adaptive_algo_parse("", &a), SL_EINVAL);
    assert_int_equal(sl_adaptive_algo_parse(NULL, &a), SL_EINVAL);
    assert_string_equal(sl_adaptive_algo_name((enum sl_adaptive_algo)9), "?");
    assert_string_equal(sl_adaptive_phase_name(SL_ADAPTIVE_STEADY), "steady");
    assert_string_equal(sl_adaptive_phase_name(SL_ADAPTIVE_MEASURING_MIN_RTT), "measuring_min_rtt");
    assert_string_equal(sl_adaptive_phase_name((enum sl_adaptive_phase)5), "?");
}

/* The defaults are Netflix's builders' and Envoy's proto's. */
static void defaults(void **unused)
{
    struct sl_adaptive_config c;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_AIMD);
    assert_int_equal(c.initial_limit, 20);
    assert_int_equal(c.min_limit, 20);
    assert_int_equal(c.max_limit, 200);
    assert_true(c.backoff_ratio == 0.9);
    assert_int_equal(c.timeout_ns, 5 * S);
    sl_adaptive_config_init(&c, SL_ADAPTIVE_VEGAS);
    assert_int_equal(c.initial_limit, 20);
    assert_int_equal(c.min_limit, 1);
    assert_int_equal(c.max_limit, 1000);
    assert_true(c.smoothing == 1.0);
    assert_int_equal(c.probe_multiplier, 30);
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT2);
    assert_int_equal(c.initial_limit, 20);
    assert_int_equal(c.min_limit, 20);
    assert_int_equal(c.max_limit, 200);
    assert_true(c.smoothing == 0.2);
    assert_true(c.rtt_tolerance == 1.5);
    assert_int_equal(c.long_window, 600);
    assert_int_equal(c.queue_size, 4);
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    assert_int_equal(c.min_limit, 3);
    assert_int_equal(c.initial_limit, 3);
    assert_int_equal(c.max_limit, 1000);
    assert_true(c.percentile == 50);
    assert_int_equal(c.update_interval_ns, 100 * MS);
    assert_int_equal(c.min_rtt_interval_ns, 60 * S);
    assert_int_equal(c.min_rtt_requests, 50);
    assert_true(c.jitter_pct == 15);
    assert_true(c.buffer_pct == 25);
    assert_int_equal(c.consecutive_at_min, 5);
    for (int i = 0; i < 4; i++) {
        sl_adaptive_config_init(&c, (enum sl_adaptive_algo)i);
        assert_int_equal(sl_adaptive_config_validate(&c, NULL), SL_OK);
    }
}

/* The bad parameters validation must refuse: which controller, what is
 * spoilt (spoil() below, by number), and the word the reason must hold. */
static const struct bad {
    enum sl_adaptive_algo algo;
    const char *says;
} bads[] = {
    {SL_ADAPTIVE_AIMD, "min_limit"},
    {SL_ADAPTIVE_VEGAS, "max_limit"},
    {SL_ADAPTIVE_GRADIENT2, "initial_limit"},
    {SL_ADAPTIVE_GRADIENT, "initial_limit"},
    {SL_ADAPTIVE_AIMD, "backoff_ratio"},
    {SL_ADAPTIVE_AIMD, "backoff_ratio"},
    {SL_ADAPTIVE_AIMD, "backoff_ratio"},
    {SL_ADAPTIVE_AIMD, "timeout"},
    {SL_ADAPTIVE_VEGAS, "smoothing"},
    {SL_ADAPTIVE_GRADIENT2, "smoothing"},
    {SL_ADAPTIVE_VEGAS, "probe_multiplier"},
    {SL_ADAPTIVE_GRADIENT2, "rtt_tolerance"},
    {SL_ADAPTIVE_GRADIENT2, "long_window"},
    {SL_ADAPTIVE_GRADIENT, "percentile"},
    {SL_ADAPTIVE_GRADIENT, "percentile"},
    {SL_ADAPTIVE_GRADIENT, "percentile"},
    {SL_ADAPTIVE_GRADIENT, "update_interval"},
    {SL_ADAPTIVE_GRADIENT, "min_rtt_interval"},
    {SL_ADAPTIVE_GRADIENT, "min_rtt_requests"},
    {SL_ADAPTIVE_GRADIENT, "jitter"},
    {SL_ADAPTIVE_GRADIENT, "jitter"},
    {SL_ADAPTIVE_GRADIENT, "buffer"},
    {SL_ADAPTIVE_GRADIENT, "consecutive_at_min"},
    {SL_ADAPTIVE_AIMD, "algorithm"},
    {SL_ADAPTIVE_GRADIENT2, "rtt_tolerance"},
};

static void spoil(struct sl_adaptive_config *c, size_t i)
{
    switch (i) {
    case 0:
        c->min_limit = 0;
        break;
    case 1:
        c->max_limit = c->min_limit - 1;
        break;
    case 2:
        c->initial_limit = c->min_limit - 1;
        break;
    case 3:
        c->initial_limit = c->max_limit + 1;
        break;
    case 4:
        c->backoff_ratio = 1.0;
        break;
    case 5:
        c->backoff_ratio = 0.49;
        break;
    case 6:
        c->backoff_ratio = NAN;
        break;
    case 7:
        c->timeout_ns = 0;
        break;
    case 8:
        c->smoothing = 0;
        break;
    case 9:
        c->smoothing = 1.5;
        break;
    case 10:
        c->probe_multiplier = 0;
        break;
    case 11:
        c->rtt_tolerance = 0.99;
        break;
    case 12:
        c->long_window = 0;
        break;
    case 13:
        c->percentile = 0;
        break;
    case 14:
        c->percentile = 100.5;
        break;
    case 15:
        c->percentile = NAN;
        break;
    case 16:
        c->update_interval_ns = 0;
        break;
    case 17:
        c->min_rtt_interval_ns = -1;
        break;
    case 18:
        c->min_rtt_requests = 0;
        break;
    case 19:
        c->jitter_pct = 101;
        break;
    case 20:
        c->jitter_pct = -1;
        break;
    case 21:
        c->buffer_pct = 250;
        break;
    case 22:
        c->consecutive_at_min = 0;
        break;
    case 23:
        c->algo = (enum sl_adaptive_algo)7;
        break;
    case 24:
        c->rtt_tolerance = NAN;
        break;
    }
}

/* Each bad parameter is refused with a sentence that names it. */
static void validation(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    const char *why;

    (void)unused;
    for (size_t i = 0; i < N(bads); i++) {
        sl_adaptive_config_init(&c, bads[i].algo);
        spoil(&c, i);
        why = NULL;
        assert_int_equal(sl_adaptive_config_validate(&c, &why), SL_EINVAL);
        assert_non_null(why);
        if (strstr(why, bads[i].says) == NULL)
            fail_msg("case %zu: '%s' does not name %s", i, why, bads[i].says);
        why = NULL;
        assert_int_equal(sl_adaptive_init(&a, &c, T0, 1, &why), SL_EINVAL);
        assert_non_null(why);
        assert_int_equal(sl_adaptive_init(&a, &c, T0, 1, NULL), SL_EINVAL);
    }
    /* A parameter of another controller is not looked at. */
    sl_adaptive_config_init(&c, SL_ADAPTIVE_AIMD);
    c.percentile = 0;
    c.smoothing = 0;
    assert_int_equal(sl_adaptive_config_validate(&c, NULL), SL_OK);
    /* The edges that are allowed. */
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    c.percentile = 100;
    c.jitter_pct = 0;
    c.buffer_pct = 0;
    c.min_limit = c.max_limit = c.initial_limit = 1;
    assert_int_equal(sl_adaptive_config_validate(&c, NULL), SL_OK);
    sl_adaptive_config_init(&c, SL_ADAPTIVE_AIMD);
    c.backoff_ratio = 0.5;
    assert_int_equal(sl_adaptive_config_validate(&c, NULL), SL_OK);
}

/* ------------------------------------------------------------ AIMD */

/* AIMDLimit with initial 10, min 1, max 12, backoff 0.9, timeout 5 s:
 * a drop or rtt > timeout: limit = max(min, (int)(limit x 0.9)); else
 * inflight x 2 >= limit: limit + 1, at most max. */
static void aimd_trace(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_AIMD);
    c.initial_limit = 10;
    c.min_limit = 1;
    c.max_limit = 12;
    start(&a, &c);
    const struct row rows[] = {
        {1 * MS, 5, false, 11, 11},  /* 5 x 2 = 10 >= 10: +1 */
        {1 * MS, 5, false, 11, 11},  /* 10 < 11: app-limited, unchanged */
        {1 * MS, 6, false, 12, 12},  /* 12 >= 11: +1 */
        {1 * MS, 12, false, 12, 12}, /* 13, clamped to max 12 */
        {1 * MS, 12, true, 10, 10},  /* drop: (int)(12 x 0.9 = 10.8) = 10 */
        {6 * S, 12, false, 9, 9},    /* 6 s > 5 s: a drop, (int)9.0 */
        {5 * S, 9, false, 10, 10},   /* exactly the timeout is not above it: +1 */
        {1 * MS, 0, true, 9, 9},     /* 10 x 0.9 = 9 */
        {1 * MS, 0, true, 8, 8},     /* 8.1 */
        {1 * MS, 0, true, 7, 7},     /* 7.2 */
        {1 * MS, 0, true, 6, 6},     /* 6.3 */
        {1 * MS, 0, true, 5, 5},     /* 5.4 */
        {1 * MS, 0, true, 4, 4},     /* 4.5 */
        {1 * MS, 0, true, 3, 3},     /* 3.6 */
        {1 * MS, 0, true, 2, 2},     /* 2.7 */
        {1 * MS, 0, true, 1, 1},     /* 1.8 */
        {1 * MS, 0, true, 1, 1},     /* 0.9 -> 0, clamped to min 1 */
        {INT64_MAX, 1, false, 1, 1}, /* a huge latency is a timeout */
        {0, 1, false, 2, 2},         /* 0 is taken as 1 ns: 2 >= 1, +1 */
    };
    run(&a, rows, N(rows));
}

/* acquire admits up to the limit; release frees and feeds the sample with
 * the in-flight count at acquire; ignored and negative samples change
 * nothing but the count. */
static void acquire_release(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    struct sl_adaptive_ticket t[4], x;
    struct sl_adaptive_stats st;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_AIMD);
    c.initial_limit = 3;
    c.min_limit = 1;
    start(&a, &c);
    for (int i = 0; i < 3; i++) {
        assert_true(sl_adaptive_acquire(&a, T0 + i, &t[i]));
        assert_int_equal(t[i].inflight, i + 1);
        assert_int_equal(t[i].start_ns, T0 + i);
    }
    assert_false(sl_adaptive_acquire(&a, T0 + 3, &t[3]));
    /* A clock stepping back grants nothing either. */
    assert_false(sl_adaptive_acquire(&a, T0 - S, &t[3]));
    /* t[2] saw 3 in flight: 3 x 2 >= 3, +1: limit 4. */
    sl_adaptive_release(&a, &t[2], T0 + 10, 5 * MS, SL_ADAPTIVE_SUCCESS);
    assert_int_equal(sl_adaptive_limit(&a), 4);
    /* Ignored, negative: freed, no sample. */
    sl_adaptive_release(&a, &t[1], T0 + 11, 5 * MS, SL_ADAPTIVE_IGNORED);
    sl_adaptive_release(&a, &t[0], T0 + 12, -5, SL_ADAPTIVE_SUCCESS);
    assert_int_equal(sl_adaptive_limit(&a), 4);
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.inflight, 0);
    assert_int_equal(st.admitted, 3);
    assert_int_equal(st.rejected, 2);
    assert_int_equal(st.samples, 1);
    assert_int_equal(st.sample_rtt_ns, 5 * MS);
    /* A drop: (int)(4 x 0.9) = 3, counted. */
    assert_true(sl_adaptive_acquire(&a, T0 + 13, &x));
    sl_adaptive_release(&a, &x, T0 + 14, 1 * MS, SL_ADAPTIVE_DROPPED);
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.limit, 3);
    assert_int_equal(st.dropped, 1);
    /* A release with nothing in flight does not wrap the count. */
    sl_adaptive_release(&a, &x, T0 + 15, -1, SL_ADAPTIVE_IGNORED);
    assert_int_equal(a.inflight, 0);
}

/* ------------------------------------------------------------ Vegas */

/* VegasLimit with its defaults (initial 20, min 1, max 1000, smoothing 1,
 * probe every >= 0.5 x 30 x limit samples, so not within this trace).
 * f(L) = max(1, floor(log10 L)); alpha = 3f, beta = 6f, threshold = f;
 * queue = ceil(L x (1 - noload / rtt)). */
static void vegas_trace(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    struct sl_adaptive_stats st;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_VEGAS);
    start(&a, &c);
    const struct row rows[] = {
        {10 * MS, 20, false, 20, 20},   /* no noload yet: noload = 10 ms */
        {10 * MS, 10, false, 26, 26},   /* queue ceil(20 x 0) = 0 <= 1: + beta 6 */
        {10 * MS, 5, false, 26, 26},    /* 5 x 2 < 26: app-limited */
        {12500000, 26, false, 26, 26},  /* queue ceil(26 x 0.2) = 6: alpha 3 <= 6 <= beta 6 */
        {20 * MS, 26, false, 25, 25},   /* queue ceil(26 x 0.5) = 13 > 6: - f 1 */
        {10500000, 25, false, 26, 26},  /* queue ceil(25 x 0.0476) = 2 < 3: + f 1 */
        {11 * MS, 26, false, 26, 26},   /* queue ceil(26 x 0.0909) = 3: sweet spot */
        {10 * MS, 1, true, 25, 25},     /* a drop: - f 1 (app-limited or not) */
        {8 * MS, 25, false, 25, 25},    /* below noload: noload = 8 ms, no change */
        {8 * MS, 25, false, 31, 31},    /* queue 0: + 6 */
        {INT64_MAX, 31, false, 30, 30}, /* queue ceil(31 x ~1) = 31 > 6: - 1 */
    };
    run(&a, rows, N(rows));
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.min_rtt_ns, 8 * MS);
    assert_int_equal(st.sample_rtt_ns, INT64_MAX);

    /* At 150, f = floor(log10 150) = 2: beta 12; smoothing 0.5 takes half
     * the step: 150 + (162 - 150) x 0.5 = 156. */
    c.initial_limit = 150;
    c.smoothing = 0.5;
    start(&a, &c);
    const struct row big[] = {
        {10 * MS, 150, false, 150, 150},
        {10 * MS, 150, false, 156, 156},
        {10 * MS, 1, true, 155, 155}, /* 156 - 2 = 154; halfway: 155 */
    };
    run(&a, big, N(big));

    /* A drop at the floor stays at min 1: 1 - 1 = 0, clamped. */
    c.initial_limit = 1;
    c.smoothing = 1;
    start(&a, &c);
    const struct row floor_[] = {{10 * MS, 1, false, 1, 1}, {10 * MS, 1, true, 1, 1}};
    run(&a, floor_, N(floor_));
}

/* The noload RTT is re-probed: with probe_multiplier 1 at limit 20 the
 * sample number jitter x 20 (jitter in [0.5, 1)) becomes the new noload,
 * even when higher, so somewhere from the 10th to the 20th sample. */
static void vegas_probe(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    struct sl_adaptive_stats st;
    int probed_at = 0;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_VEGAS);
    c.probe_multiplier = 1;
    start(&a, &c);
    sl_adaptive_on_sample(&a, T0, 10 * MS, 0, false);
    for (int i = 2; i <= 20 && probed_at == 0; i++) {
        sl_adaptive_on_sample(&a, T0, 50 * MS, 0, false); /* app-limited: limit stays */
        sl_adaptive_stats(&a, &st);
        if (st.min_rtt_ns == 50 * MS)
            probed_at = i;
    }
    assert_in_range(probed_at, 10, 20);
    assert_int_equal(sl_adaptive_limit(&a), 20);
}

/* ------------------------------------------------------------ Gradient2 */

/* Gradient2Limit with its defaults (initial 20, min 20, max 200, smoothing
 * s = 0.2, tolerance 1.5, long window 600, queue 4). The long RTT is the
 * mean of the first 10 samples; g = clamp(1.5 x long / short, 0.5, 1);
 * E' = E x 0.8 + (E x g + 4) x 0.2, in [20, 200]; limit = floor(E'). */
static void gradient2_trace(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    struct sl_adaptive_stats st;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT2);
    start(&a, &c);
    const struct row rows[] = {
        /* long 10, g = min(1, 1.5): 16 + 24 x 0.2 = 20.8 */
        {10 * MS, 20, false, 20, 20.8},
        /* long 10, g 1: 16.64 + 24.8 x 0.2 = 21.6 */
        {10 * MS, 20, false, 21, 21.6},
        /* long 50/3 = 16.667, g = 1.5 x 16.667 / 30 = 0.8333: 21.6 x 0.8333 + 4 =
         * 22; 17.28 + 4.4 = 21.68 (the queue allowance still grows it) */
        {30 * MS, 21, false, 21, 21.68},
        /* long 110/4 = 27.5, g = 41.25 / 60 = 0.6875: 14.905 + 4 = 18.905;
         * 17.344 + 3.781 = 21.125 */
        {60 * MS, 21, false, 21, 21.125},
        /* long 120/5 = 24 (> 2 x 10: the stored long decays to 22.8); 5 <
         * 21.125 / 2: app-limited, E unchanged */
        {10 * MS, 5, false, 21, 21.125},
        /* warm-up again: long 220/6 = 36.667 (the decay is lost, as in
         * Netflix's ExpAvgMeasurement), g = 0.55: 11.61875 + 4 = 15.61875;
         * 16.9 + 3.12375 = 20.02375 */
        {100 * MS, 21, false, 20, 20.02375},
        /* long 1220/7 = 174.29, g = 0.2614 -> 0.5: 10.011875 + 4; 16.019 +
         * 2.802375 = 18.821375 -> min 20 */
        {1 * S, 20, false, 20, 20},
    };
    run(&a, rows, N(rows));
    sl_adaptive_stats(&a, &st);
    assert_true(fabs(st.gradient - 0.5) < EPS);
    assert_int_equal(st.long_rtt_ns, 1220 * MS / 7);
    assert_int_equal(st.sample_rtt_ns, 1 * S);
    assert_true(st.headroom == 4);

    /* After the warm-up the long RTT is an exponential average: with long
     * window 3 the factor is 2 / (3 + 1) = 0.5. */
    c.long_window = 3;
    start(&a, &c);
    for (int i = 0; i < 10; i++)
        sl_adaptive_on_sample(&a, T0, 10 * MS, 20, false);
    sl_adaptive_on_sample(&a, T0, 30 * MS, 200, false); /* long 5 + 15 = 20 ms */
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.long_rtt_ns, 20 * MS);
    assert_true(fabs(st.gradient - 1.0) < EPS); /* 1.5 x 20 / 30 */
    /* long 10 + 2.5 = 12.5 > 2 x 5: stored 12.5 x 0.95 = 11.875 */
    sl_adaptive_on_sample(&a, T0, 5 * MS, 200, false);
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.long_rtt_ns, 11875000);
}

/* ------------------------------------------------------------ gradient (Envoy) */

static void samples_at(struct sl_adaptive *a, int64_t at, const int64_t *rtt_ms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sl_adaptive_on_sample(a, at, rtt_ms[i] * MS, 1, false);
}

/* Envoy's gradient controller, min 3, max 1000, initial 10 (the limit
 * restored after the first minRTT), windows of 100 ms, p50, buffer 25 %,
 * 5 requests for the minRTT, no jitter. g = clamp(1.25 minRTT / sample,
 * 0.5, 2); limit' = floor(g L + sqrt(g L)) in [3, 1000]. */
static void gradient_trace(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    struct sl_adaptive_stats st;
    struct sl_adaptive_ticket t;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    c.initial_limit = 10;
    c.min_rtt_requests = 5;
    c.jitter_pct = 0;
    c.app_limited = false; /* Envoy's formula exactly: these samples start with 1 in flight */
    start(&a, &c);
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.phase, SL_ADAPTIVE_MEASURING_MIN_RTT);
    assert_int_equal(st.limit, 3); /* pinned while measuring */
    for (int i = 0; i < 3; i++)
        assert_true(sl_adaptive_acquire(&a, T0, &t));
    assert_false(sl_adaptive_acquire(&a, T0, &t));
    a.inflight = 0;

    /* A request that started before the measurement is no sample. */
    sl_adaptive_on_sample(&a, T0 + 5 * MS, 10 * MS, 1, false);
    /* p50 of {8, 9, 10, 11, 12}: rank ceil(2.5) = 3: 10 ms. */
    const int64_t first[] = {10, 12, 8, 11, 9};
    samples_at(&a, T0 + 20 * MS, first, 4);
    assert_int_equal(sl_adaptive_limit(&a), 3);
    samples_at(&a, T0 + 20 * MS, first + 4, 1);
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.phase, SL_ADAPTIVE_STEADY);
    assert_int_equal(st.min_rtt_ns, 10 * MS);
    assert_int_equal(st.limit, 10);
    assert_int_equal(st.next_min_rtt_ns, T0 + 20 * MS + 60 * S);

    struct {
        int64_t at_ms;     /* the samples' time; windows end at 120, 220, ... */
        int64_t rtt_ms[3]; /* 0: none */
        uint32_t limit;    /* after the window's end */
        double gradient;
    } w[] = {
        /* p50 10: g 12.5 / 10 = 1.25; 12.5 + sqrt 12.5 (3.54) = 16.04 */
        {50, {10, 10, 10}, 16, 1.25},
        /* p50 of {20, 25, 30} (rank 2) 25: g 0.5; 8 + 2.83 = 10.83 */
        {150, {30, 20, 25}, 10, 0.5},
        /* p50 of {12, 12, 13} 12: g 12.5 / 12 = 1.0417; 10.42 + 3.23 = 13.64 */
        {250, {12, 13, 12}, 13, 12.5 / 12},
        /* an empty window changes nothing */
        {350, {0, 0, 0}, 13, 12.5 / 12},
        /* 100 ms: g 0.125 -> 0.5: 6.5 + 2.55 = 9.05 */
        {450, {100, 0, 0}, 9, 0.5},
    };
    for (size_t i = 0; i < N(w); i++) {
        for (int k = 0; k < 3 && w[i].rtt_ms[k] != 0; k++)
            sl_adaptive_on_sample(&a, T0 + w[i].at_ms * MS, w[i].rtt_ms[k] * MS, 1, false);
        sl_adaptive_tick(&a, T0 + (w[i].at_ms + 70) * MS); /* past the window's end */
        sl_adaptive_stats(&a, &st);
        if (st.limit != w[i].limit || fabs(st.gradient - w[i].gradient) > EPS)
            fail_msg("window %zu: limit %u gradient %f", i, st.limit, st.gradient);
    }
    assert_int_equal(st.sample_rtt_ns, 100 * MS);
    /* A long silence closes no window with samples: nothing changes. */
    sl_adaptive_tick(&a, T0 + 10 * S);
    assert_int_equal(sl_adaptive_limit(&a), 9);

    /* 1 s windows drive it to the floor: 9 -> 4.5 + 2.12 = 6; 6 -> 3 + 1.73
     * = 4; 4 -> 2 + 1.41 = 3; then 3 -> 1.5 + 1.22 = 2.72 -> min 3 for 5
     * windows in a row: a new minRTT measurement starts at once. */
    const uint32_t down[] = {6, 4, 3, 3, 3, 3, 3};
    int64_t at = T0 + 10 * S + 50 * MS;
    for (size_t i = 0; i < N(down); i++, at += 100 * MS) {
        sl_adaptive_on_sample(&a, at, 1 * S, 1, false);
        sl_adaptive_tick(&a, at + 80 * MS); /* windows end at 10.120 s, 10.220 s, ... */
        sl_adaptive_stats(&a, &st);
        assert_int_equal(st.limit, down[i]);
        assert_int_equal(st.phase, SL_ADAPTIVE_STEADY);
    }
    sl_adaptive_on_sample(&a, at, 1 * S, 1, false);
    sl_adaptive_tick(&a, at + 80 * MS); /* the 5th window at 3 */
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.phase, SL_ADAPTIVE_MEASURING_MIN_RTT);
    /* Measuring since that window's end (at + 70 ms): requests sent from
     * then on count. */
    const int64_t again[] = {40, 40, 40, 40, 40};
    samples_at(&a, at + 200 * MS, again, 5);
    sl_adaptive_stats(&a, &st);
    assert_int_equal(st.phase, SL_ADAPTIVE_STEADY);
    assert_int_equal(st.min_rtt_ns, 40 * MS);
    assert_int_equal(st.limit, 3); /* restored: it was 3 */
    /* The scheduled measurement: 60 s later, the limit pinned again. */
    int64_t next = st.next_min_rtt_ns;
    assert_int_equal(next, at + 200 * MS + 60 * S);
    sl_adaptive_tick(&a, next - 1);
    assert_int_equal(a.phase, SL_ADAPTIVE_STEADY);
    sl_adaptive_tick(&a, next);
    assert_int_equal(a.phase, SL_ADAPTIVE_MEASURING_MIN_RTT);
    /* A clock stepping back during it changes nothing. */
    sl_adaptive_tick(&a, T0);
    assert_int_equal(a.phase, SL_ADAPTIVE_MEASURING_MIN_RTT);
}

/* The jitter delays the next measurement by [0, ceil(interval x 15 %)),
 * drawn from the seed: the same seed draws the same. */
static void gradient_jitter(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a, b;
    int64_t first[4];

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    c.min_rtt_requests = 1;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        assert_int_equal(sl_adaptive_init(&a, &c, T0, seed, NULL), SL_OK);
        assert_int_equal(sl_adaptive_init(&b, &c, T0, seed, NULL), SL_OK);
        sl_adaptive_on_sample(&a, T0 + MS, MS, 1, false);
        sl_adaptive_on_sample(&b, T0 + MS, MS, 1, false);
        assert_int_equal(a.next_min_rtt_ns, b.next_min_rtt_ns);
        assert_in_range(a.next_min_rtt_ns - (T0 + MS + 60 * S), 0, 9 * S - 1);
        first[seed - 1] = a.next_min_rtt_ns;
    }
    /* Different seeds, different delays (fixed seeds: this cannot flake). */
    assert_true(first[0] != first[1] && first[1] != first[2] && first[2] != first[3]);
}

/* A window holds SL_ADAPTIVE_SAMPLES samples, then a uniform reservoir:
 * the p90 of 1..10,000 ms estimated from 256 of them lands near 9,000. */
static void gradient_reservoir(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    c.min_rtt_requests = 10000;
    c.percentile = 90;
    assert_int_equal(sl_adaptive_init(&a, &c, T0, 7, NULL), SL_OK);
    for (int64_t i = 1; i <= 10000; i++)
        sl_adaptive_on_sample(&a, T0 + 20 * S, i * MS, 1, false);
    assert_int_equal(a.phase, SL_ADAPTIVE_STEADY);
    assert_in_range(a.min_rtt_ns / MS, 8500, 9500);
    assert_int_equal(a.n, 0);
}

/* ------------------------------------------------------------ properties */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int64_t any_rtt(uint64_t *s)
{
    switch (rnd(s) % 8) {
    case 0:
        return 0;
    case 1:
        return INT64_MAX;
    case 2:
        return -(int64_t)(rnd(s) % S);
    default:
        return (int64_t)(rnd(s) % (2 * S)) + 1;
    }
}

/* Random traces (fixed seed, printed): acquire, release with any latency
 * and outcome, bare samples, ticks, clocks stepping back: the limit always
 * stays in [min, max] (at min while measuring), in flight never exceeds
 * the limit at admission, the estimate is never NaN. */
static void limit_stays_in_bounds(void **unused)
{
    uint64_t seed = 20261202;
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    struct sl_adaptive_ticket held[64];
    int nheld;

    (void)unused;
    printf("limit_stays_in_bounds: seed %llu\n", (unsigned long long)seed);
    for (int algo = 0; algo < 4; algo++) {
        sl_adaptive_config_init(&c, (enum sl_adaptive_algo)algo);
        c.min_limit = 2;
        c.max_limit = 40;
        c.initial_limit = 10;
        c.min_rtt_requests = 7;
        c.update_interval_ns = 10 * MS;
        c.min_rtt_interval_ns = S;
        assert_int_equal(sl_adaptive_init(&a, &c, T0, seed, NULL), SL_OK);
        int64_t now = T0;
        nheld = 0;
        for (int step = 0; step < 50000; step++) {
            uint64_t r = rnd(&seed) % 10;
            now += (int64_t)(rnd(&seed) % (5 * MS)) - (r == 0 ? 20 * MS : 0);
            if (r < 5 && nheld < 64) {
                uint32_t before = a.inflight, lim = sl_adaptive_limit(&a);
                if (sl_adaptive_acquire(&a, now, &held[nheld])) {
                    assert_true(before < sl_adaptive_limit(&a));
                    nheld++;
                } else {
                    assert_true(before >= sl_adaptive_limit(&a));
                    (void)lim;
                }
            } else if (r < 8 && nheld > 0) {
                int i = (int)(rnd(&seed) % (uint64_t)nheld);
                sl_adaptive_release(&a, &held[i], now, any_rtt(&seed),
                                    (enum sl_adaptive_outcome)(rnd(&seed) % 3));
                held[i] = held[--nheld];
            } else if (r == 8) {
                sl_adaptive_on_sample(&a, now, any_rtt(&seed), (uint32_t)(rnd(&seed) % 80),
                                      rnd(&seed) % 4 == 0);
            } else {
                sl_adaptive_tick(&a, now);
            }
            uint32_t l = sl_adaptive_limit(&a);
            if (l < c.min_limit || l > c.max_limit || a.estimate != a.estimate)
                fail_msg("%s step %d: limit %u", sl_adaptive_algo_name(c.algo), step, l);
            if (a.phase == SL_ADAPTIVE_MEASURING_MIN_RTT)
                assert_int_equal(l, c.min_limit);
        }
    }
}

/* From the same state, a sample (or window) of higher latency never gives
 * a higher limit than one of lower latency: Gradient2 and gradient, on
 * random states reached by random traces (fixed seed). */
static void higher_latency_never_raises(void **unused)
{
    uint64_t seed = 77;
    struct sl_adaptive_config c;
    struct sl_adaptive a, lo, hi;

    (void)unused;
    for (int algo = 0; algo < 2; algo++) {
        sl_adaptive_config_init(&c, (enum sl_adaptive_algo)algo);
        c.min_rtt_requests = 5;
        assert_int_equal(sl_adaptive_init(&a, &c, T0, seed, NULL), SL_OK);
        int64_t now = T0;
        for (int step = 0; step < 20000; step++) {
            int64_t r1 = (int64_t)(rnd(&seed) % (500 * MS)) + 1;
            int64_t r2 = (int64_t)(rnd(&seed) % (500 * MS)) + 1;
            uint32_t inflight = (uint32_t)(rnd(&seed) % 1200);
            int64_t rlo = r1 < r2 ? r1 : r2, rhi = r1 < r2 ? r2 : r1;
            now += (int64_t)(rnd(&seed) % (30 * MS));
            /* A request sent before the minRTT measurement began is no
             * sample, whatever its latency: compare only samples. */
            bool both = now - rhi >= a.epoch_ns;
            lo = a;
            hi = a;
            sl_adaptive_on_sample(&lo, now, rlo, inflight, false);
            sl_adaptive_on_sample(&hi, now, rhi, inflight, false);
            sl_adaptive_tick(&lo, now + 100 * MS);
            sl_adaptive_tick(&hi, now + 100 * MS);
            if (both && lo.phase == hi.phase && sl_adaptive_limit(&hi) > sl_adaptive_limit(&lo))
                fail_msg("%s step %d: %lld ns gives %u, %lld ns gives %u",
                         sl_adaptive_algo_name(c.algo), step, (long long)rhi,
                         sl_adaptive_limit(&hi), (long long)rlo, sl_adaptive_limit(&lo));
            if (lo.phase == hi.phase && algo == SL_ADAPTIVE_GRADIENT2)
                assert_true(hi.estimate <= lo.estimate);
            sl_adaptive_on_sample(&a, now, r1, inflight, false);
        }
    }
}

/* A steady latency at the no-load value, with the limit in flight, grows
 * every controller's limit to its max, and keeps it there. */
/* app_limited (the default): a window raises the limit to at most twice
 * the most in flight its requests started with: with 19 of 40 in flight it
 * is not raised, however fast the answers; with 25 it is raised to 50
 * (not Envoy's 57); with 30, to Envoy's 57; and a slow window at low load
 * still lowers it. */
static void gradient_does_not_grow_an_unused_limit(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    int64_t now = T0;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    assert_true(c.app_limited);
    c.initial_limit = 40;
    c.min_rtt_requests = 5;
    c.jitter_pct = 0;
    assert_int_equal(sl_adaptive_init(&a, &c, now, 7, NULL), SL_OK);
    for (int i = 0; i < 5; i++) /* minRTT: 10 ms, then the limit is 40 again */
        sl_adaptive_on_sample(&a, now += 20 * MS, 10 * MS, 1, false);
    assert_int_equal(a.phase, SL_ADAPTIVE_STEADY);
    assert_int_equal(sl_adaptive_limit(&a), 40);
    /* 20 windows of fast answers with 19 in flight: 19 x 2 < 40, kept */
    for (int w = 0; w < 20; w++)
        for (int i = 0; i < 10; i++)
            sl_adaptive_on_sample(&a, now += 10 * MS, 10 * MS, 19, false);
    assert_int_equal(sl_adaptive_limit(&a), 40);
    /* 25 in flight: 40 x 1.25 + sqrt(50) = 57.07, capped at 2 x 25 */
    for (int i = 0; i < 10; i++)
        sl_adaptive_on_sample(&a, now += 10 * MS, 10 * MS, 25, false);
    sl_adaptive_on_sample(&a, now += 10 * MS, 10 * MS, 25, false);
    assert_int_equal(sl_adaptive_limit(&a), 50);
    /* 40 in flight: 50 x 1.25 + sqrt(62.5) = 70.4, under 2 x 40 */
    for (int i = 0; i < 10; i++)
        sl_adaptive_on_sample(&a, now += 10 * MS, 10 * MS, 40, false);
    assert_int_equal(sl_adaptive_limit(&a), 70);
    /* slow answers at low load still lower it: gradient 0.5 */
    for (int i = 0; i < 11; i++)
        sl_adaptive_on_sample(&a, now += 10 * MS, 100 * MS, 1, false);
    assert_true(sl_adaptive_limit(&a) < 70);
}

static void steady_latency_grows_to_max(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;

    (void)unused;
    for (int algo = 0; algo < 4; algo++) {
        sl_adaptive_config_init(&c, (enum sl_adaptive_algo)algo);
        c.jitter_pct = 0;
        assert_int_equal(sl_adaptive_init(&a, &c, T0, 3, NULL), SL_OK);
        int64_t now = T0;
        int steps = 0;
        /* gradient: 100 samples a window, minRTT re-measured every 60 s,
         * each measurement done after 50 of them. */
        for (; steps < 100000; steps++) {
            now += MS;
            sl_adaptive_on_sample(&a, now, 10 * MS, sl_adaptive_limit(&a), false);
            if (a.phase == SL_ADAPTIVE_STEADY && sl_adaptive_limit(&a) == c.max_limit)
                break;
        }
        if (sl_adaptive_limit(&a) != c.max_limit)
            fail_msg("%s: %u after %d samples", sl_adaptive_algo_name(c.algo),
                     sl_adaptive_limit(&a), steps);
        for (int i = 0; i < 5000; i++) {
            now += MS;
            sl_adaptive_on_sample(&a, now, 10 * MS, sl_adaptive_limit(&a), false);
            if (a.phase == SL_ADAPTIVE_STEADY)
                assert_int_equal(sl_adaptive_limit(&a), c.max_limit);
        }
    }
}

/* A latency rising far above the no-load value brings the gradient limits
 * down to their min: Gradient2 from max 200 with each sample 5 % slower
 * than the last; gradient with each window at 4 x minRTT. */
static void rising_latency_drives_to_min(void **unused)
{
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    double rtt = 10 * MS;

    (void)unused;
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT2);
    c.initial_limit = 200;
    start(&a, &c);
    uint32_t prev = 200;
    for (int i = 0; i < 300; i++, rtt *= 1.05) {
        sl_adaptive_on_sample(&a, T0, (int64_t)rtt, 200, false);
        if (i >= 10)
            assert_true(sl_adaptive_limit(&a) <= prev);
        prev = sl_adaptive_limit(&a);
    }
    assert_int_equal(sl_adaptive_limit(&a), 20);

    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    c.initial_limit = 1000;
    c.min_rtt_requests = 1;
    start(&a, &c);
    sl_adaptive_on_sample(&a, T0 + 10 * MS, 10 * MS, 1, false); /* minRTT 10 ms */
    assert_int_equal(sl_adaptive_limit(&a), 1000);
    prev = 1000;
    /* 1000 -> 500 + 22.4 = 522 -> 261 + 16.2 = 277 -> 150 -> 83 -> 47 -> 28 ->
     * 17 -> 11 -> 7 -> 5 -> 4 -> 3 (12 windows; 5 more at 3 would measure a
     * new minRTT, 40 ms, from which the limit grows again, as in Envoy). */
    const uint32_t want[] = {522, 277, 150, 83, 47, 28, 17, 11, 7, 5, 4, 3};
    for (int i = 1; i <= 12; i++) { /* windows end at 110 ms, 210 ms, ... */
        sl_adaptive_on_sample(&a, T0 + (i * 100 - 40) * MS, 40 * MS, 1, false);
        sl_adaptive_tick(&a, T0 + (i * 100 + 10) * MS);
        assert_true(sl_adaptive_limit(&a) <= prev);
        prev = sl_adaptive_limit(&a);
        assert_int_equal(prev, want[i - 1]);
    }
}

/* Latencies of 0 (1 ns), INT64_MAX and below 0 keep every controller
 * finite and within bounds; a clock stepping back never closes a window
 * nor admits above the limit. */
static void extreme_latencies_and_clock(void **unused)
{
    static const int64_t rtts[] = {0, 1, INT64_MAX, -1, INT64_MIN, INT64_MAX, 0, 5 * MS};
    struct sl_adaptive_config c;
    struct sl_adaptive a;
    struct sl_adaptive_ticket t;

    (void)unused;
    for (int algo = 0; algo < 4; algo++) {
        sl_adaptive_config_init(&c, (enum sl_adaptive_algo)algo);
        c.min_rtt_requests = 2;
        start(&a, &c);
        for (int round = 0; round < 50; round++) {
            for (size_t i = 0; i < N(rtts); i++) {
                int64_t now = T0 + round * 100 * MS + (int64_t)i;
                sl_adaptive_on_sample(&a, now, rtts[i], sl_adaptive_limit(&a), i % 3 == 0);
                assert_true(a.estimate == a.estimate);
                assert_in_range(sl_adaptive_limit(&a), c.min_limit, c.max_limit);
            }
        }
        /* Full: stepping the clock back admits nothing more. */
        while (sl_adaptive_acquire(&a, a.last_ns, &t))
            ;
        assert_false(sl_adaptive_acquire(&a, INT64_MIN, &t));
        assert_false(sl_adaptive_acquire(&a, a.last_ns - S, &t));
    }
    /* gradient: samples in a window, then a tick earlier than its end does
     * not close it. */
    sl_adaptive_config_init(&c, SL_ADAPTIVE_GRADIENT);
    c.min_rtt_requests = 1;
    start(&a, &c);
    sl_adaptive_on_sample(&a, T0 + MS, MS, 1, false); /* minRTT 1 ms; window to T0 + 101 ms */
    sl_adaptive_on_sample(&a, T0 + 50 * MS, 40 * MS, 1, false);
    uint32_t before = sl_adaptive_limit(&a);
    sl_adaptive_tick(&a, T0);
    sl_adaptive_tick(&a, T0 + 100 * MS);
    assert_int_equal(sl_adaptive_limit(&a), before);
    assert_int_equal(a.n, 1);
    sl_adaptive_tick(&a, T0 + 101 * MS);
    assert_int_equal(a.n, 0);
    /* The longest interval and jitter: the next measurement saturates. */
    c.min_rtt_interval_ns = INT64_MAX;
    c.update_interval_ns = INT64_MAX;
    c.jitter_pct = 100;
    start(&a, &c);
    sl_adaptive_on_sample(&a, T0 + MS, MS, 1, false);
    assert_int_equal(a.phase, SL_ADAPTIVE_STEADY);
    assert_int_equal(a.next_min_rtt_ns, INT64_MAX);
    assert_int_equal(a.window_end_ns, INT64_MAX);
    sl_adaptive_tick(&a, INT64_MAX - 1);
    assert_int_equal(a.phase, SL_ADAPTIVE_STEADY);
    sl_adaptive_tick(&a, INT64_MAX);
    assert_int_equal(a.phase, SL_ADAPTIVE_MEASURING_MIN_RTT); /* the window ended, then this */
}

/* ------------------------------------------------------------ partitions */

static void partition_config(void **unused)
{
    struct sl_partition_config c;
    struct sl_partition p;
    const char *why = NULL;

    (void)unused;
    sl_partition_config_init(&c);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.share_pct[0], 50);
    assert_int_equal(c.share_pct[1], 35);
    assert_int_equal(c.share_pct[2], 15);
    assert_int_equal(sl_partition_init(&p, &c, &why), SL_OK);
    assert_int_equal(sl_partition_guaranteed(&p, 0, 100), 50);
    assert_int_equal(sl_partition_guaranteed(&p, 1, 10), 3); /* floor(3.5) */
    assert_int_equal(sl_partition_guaranteed(&p, 2, 10), 1);
    assert_int_equal(sl_partition_guaranteed(&p, 3, 10), 0);
    assert_int_equal(sl_partition_guaranteed(&p, 0, UINT32_MAX), UINT32_MAX / 2);

    c.n = 0;
    assert_int_equal(sl_partition_config_validate(&c, &why), SL_EINVAL);
    assert_non_null(strstr(why, "classes"));
    c.n = 9;
    assert_int_equal(sl_partition_init(&p, &c, &why), SL_EINVAL);
    sl_partition_config_init(&c);
    c.share_pct[1] = 101;
    assert_int_equal(sl_partition_config_validate(&c, &why), SL_EINVAL);
    assert_non_null(strstr(why, "percentage"));
    c.share_pct[1] = 36; /* 50 + 36 + 15 = 101 */
    assert_int_equal(sl_partition_config_validate(&c, &why), SL_EINVAL);
    assert_non_null(strstr(why, "at most 100"));
    assert_int_equal(sl_partition_config_validate(&c, NULL), SL_EINVAL);
    c.n = 8; /* 5 classes of 0 % added */
    c.share_pct[1] = 35;
    assert_int_equal(sl_partition_config_validate(&c, NULL), SL_OK);
}

/* Limit 10, shares 5 / 3 / 1: the rule step by step. */
static void partition_rule(void **unused)
{
    struct sl_partition_config c;
    struct sl_partition p;

    (void)unused;
    sl_partition_config_init(&c);
    assert_int_equal(sl_partition_init(&p, &c, NULL), SL_OK);
    /* Sheddable borrows all 10 while the total is under 10. */
    for (int i = 0; i < 10; i++)
        assert_true(sl_partition_try_acquire(&p, 2, 10));
    assert_false(sl_partition_try_acquire(&p, 2, 10)); /* 10 >= 1 and total 10 */
    /* Critical still gets its 5 (above the limit), and takes back the 9
     * sheddable borrowed beyond its 1: 14, then no more. */
    for (int i = 0; i < 14; i++)
        assert_true(sl_partition_try_acquire(&p, 0, 10));
    assert_false(sl_partition_try_acquire(&p, 0, 10));
    /* Default its 3; what sheddable borrowed critical took back already. */
    for (int i = 0; i < 3; i++)
        assert_true(sl_partition_try_acquire(&p, 1, 10));
    assert_false(sl_partition_try_acquire(&p, 1, 10));
    assert_int_equal(p.inflight, 27); /* at most 2 x the limit */
    /* Sheddable drains: critical (9 over its share) can take no more until
     * less critical classes hold more than 9 beyond their shares. */
    for (int i = 0; i < 9; i++)
        assert_int_equal(sl_partition_release(&p, 2), SL_OK);
    assert_false(sl_partition_try_acquire(&p, 0, 10));
    assert_false(sl_partition_try_acquire(&p, 2, 10)); /* at its share, total 18 */
    for (int i = 0; i < 9; i++)
        assert_int_equal(sl_partition_release(&p, 0), SL_OK);
    assert_int_equal(p.inflight, 9);
    assert_true(sl_partition_try_acquire(&p, 2, 10)); /* borrowing: total 9 < 10 */
    assert_false(sl_partition_try_acquire(&p, 2, 10));
    /* sheddable holds 1 beyond its share: default, at its 3, takes it back */
    assert_true(sl_partition_try_acquire(&p, 1, 10));
    assert_false(sl_partition_try_acquire(&p, 1, 10));
    assert_int_equal(p.cls[0].inflight, 5);
    assert_int_equal(p.cls[0].admitted, 14);
    assert_int_equal(p.cls[0].shed, 2);
    assert_int_equal(p.cls[2].admitted, 11);
    assert_int_equal(p.cls[2].shed, 3);
    /* Errors. */
    assert_int_equal(sl_partition_release(&p, 3), SL_ENOENT);
    assert_false(sl_partition_try_acquire(&p, 3, 10));
    assert_int_equal(sl_partition_release(&p, 2), SL_OK);
    assert_int_equal(sl_partition_release(&p, 2), SL_OK);
    assert_int_equal(sl_partition_release(&p, 2), SL_ENOENT);
    /* Limit 0: nothing is guaranteed, nothing is admitted. */
    assert_int_equal(sl_partition_init(&p, &c, NULL), SL_OK);
    assert_false(sl_partition_try_acquire(&p, 0, 0));
}

/* Limit 20 (critical 10, default 7, sheddable 3). Requests hold a slot for
 * 5 steps; each step default and sheddable offer 6 each (3 x the limit in
 * all, arriving first), critical 2 (10 in flight: its share). Critical loses
 * none; a class is only ever shed at or above its share; the total stays
 * under 3 x the limit (default takes back what sheddable borrowed). */
static void partition_overload(void **unused)
{
    enum { D = 5, STEPS = 400, LIMIT = 20 };
    static const int offered[3] = {2, 6, 6};
    static const int order[3] = {2, 1, 0}; /* least critical first */
    struct sl_partition_config c;
    struct sl_partition p;
    int ends[D][3];
    uint64_t crit = 0;
    uint32_t peak = 0;

    (void)unused;
    sl_partition_config_init(&c);
    assert_int_equal(sl_partition_init(&p, &c, NULL), SL_OK);
    memset(ends, 0, sizeof(ends));
    for (int step = 0; step < STEPS; step++) {
        int *done = ends[step % D];
        for (int k = 0; k < 3; k++) {
            for (; done[k] > 0; done[k]--)
                assert_int_equal(sl_partition_release(&p, (uint32_t)k), SL_OK);
        }
        for (int o = 0; o < 3; o++) {
            int k = order[o];
            for (int i = 0; i < offered[k]; i++) {
                uint32_t in_k = p.cls[k].inflight;
                if (sl_partition_try_acquire(&p, (uint32_t)k, LIMIT))
                    done[k]++;
                else
                    assert_true(in_k >= sl_partition_guaranteed(&p, (uint32_t)k, LIMIT));
                if (k == 0)
                    crit++;
            }
            assert_true(p.inflight <= 3 * LIMIT);
            peak = p.inflight > peak ? p.inflight : peak;
        }
    }
    print_message("partition_overload: at most %u in flight for a limit of %d\n", peak, LIMIT);
    assert_int_equal(p.cls[0].admitted, crit);
    assert_int_equal(p.cls[0].shed, 0);
    assert_true(p.cls[1].shed > 0 && p.cls[2].shed > 0);
    /* The others share what critical leaves: default keeps its share. */
    assert_true(p.cls[1].inflight >= 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_parse),
        cmocka_unit_test(defaults),
        cmocka_unit_test(validation),
        cmocka_unit_test(aimd_trace),
        cmocka_unit_test(acquire_release),
        cmocka_unit_test(vegas_trace),
        cmocka_unit_test(vegas_probe),
        cmocka_unit_test(gradient2_trace),
        cmocka_unit_test(gradient_trace),
        cmocka_unit_test(gradient_jitter),
        cmocka_unit_test(gradient_reservoir),
        cmocka_unit_test(limit_stays_in_bounds),
        cmocka_unit_test(higher_latency_never_raises),
        cmocka_unit_test(gradient_does_not_grow_an_unused_limit),
        cmocka_unit_test(steady_latency_grows_to_max),
        cmocka_unit_test(rising_latency_drives_to_min),
        cmocka_unit_test(extreme_latencies_and_clock),
        cmocka_unit_test(partition_config),
        cmocka_unit_test(partition_rule),
        cmocka_unit_test(partition_overload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
