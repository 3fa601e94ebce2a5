/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_sliding_window.c - reference traces for sliding_window:
 * Cloudflare's worked example (42 in the previous minute, 18 in the current
 * one, 15 s into it: estimate 49.5) with the exact wait derived by hand,
 * waits that cross into later windows, peeks, a backward clock step, huge
 * costs and quotas, requests = 1, count_rejected, and periods of 1 ns and
 * of INT64_MAX ns.
 *
 * Does not: compare against a model on random traces (test_diff_windows.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "algo/algo.h"
#include "support/windows_trace.h"

#define S  SL_NS_PER_S
#define T0 (INT64_C(1700000040) * S) /* a minute boundary */

static void limit(struct sl_limit *l, uint64_t requests, int64_t period_ns)
{
    sl_limit_init(l);
    l->algo = SL_ALGO_SLIDING_WINDOW;
    l->requests = requests;
    l->period_ns = period_ns;
}

static void run(const struct sl_limit *l, const struct wt_row *rows, size_t n)
{
    void *st = wt_state_new(l, rows[0].t_ns);
    wt_run(st, l, rows, n);
    test_free(st);
}

/* 50 per minute. 42 requests in the minute from T0; at T0 + 75 s (15 s into
 * the next minute) 18 more: estimate 42 * 45/60 + 18 = 49.5 <= 50. One more
 * makes 50.5: denied until 42 * (45 - w)/60 + 19 <= 50, w = 30/42 s. */
static void cloudflare_example(void **unused)
{
    struct sl_limit l;
    const int64_t t = T0 + 75 * S;
    const int64_t w = 714285715; /* ceil(30 s / 42) in ns */
    const struct wt_row rows[] = {
        {T0 + 10 * S, 42, SL_ALLOW, 8, 0, 110 * S},
        {t, 0, SL_ALLOW, 18, 0, 45 * S}, /* 31.5 + 18 <= 50 < 31.5 + 19 */
        {t, 18, SL_ALLOW, 0, 0, 105 * S},
        {t, 1, SL_DENY, 0, w, 105 * S},
        {t + w - 1, 1, SL_DENY, 0, 1, 105 * S - w + 1},
        {t + w, 1, SL_ALLOW, 0, 0, 105 * S - w},
        /* now 42 * (45 s - w') / 60 + 20 <= 50: w' = 90 s / 42 - w, rounded up */
        {t + w, 1, SL_DENY, 0, 1428571428, 105 * S - w},
    };

    (void)unused;
    limit(&l, 50, 60 * S);
    run(&l, rows, WT_N(rows));
}

/* When the current window alone is over the quota the wait runs into the
 * next window (and, for a large cost, to the one after). */
static void waits_crossing_windows(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {5, 4, SL_ALLOW, 0, 0, 15},  {6, 2, SL_DENY, 0, 9, 14}, /* at 15: 4 * 5/10 + 2 = 4 */
        {14, 2, SL_DENY, 1, 1, 6},                              /* at 14: 4 * 6/10 + 2 = 4.4 */
        {15, 2, SL_ALLOW, 0, 0, 15}, {15, 0, SL_ALLOW, 0, 0, 15},
        {15, 4, SL_DENY, 0, 15, 15}, /* window [20, 30) is empty: 30 */
        {3, 0, SL_ALLOW, 0, 0, 15},  /* backward step: seen as 15 */
        {29, 4, SL_DENY, 3, 1, 1},   /* 2 * 1/10 + 4 > 4 */
        {30, 4, SL_ALLOW, 0, 0, 20},
    };

    (void)unused;
    limit(&l, 4, 10);
    run(&l, rows, WT_N(rows));
}

static void requests_one_period_one_ns(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, 1, SL_ALLOW, 0, 0, 2}, {1, 1, SL_DENY, 0, 1, 1}, /* previous window still weighs 1/1 */
        {2, 1, SL_ALLOW, 0, 0, 2}, {2, UINT64_MAX, SL_DENY, 0, -1, 2}, {9, 2, SL_DENY, 1, -1, 0},
    };

    (void)unused;
    limit(&l, 1, 1);
    run(&l, rows, WT_N(rows));
}

/* count_rejected: the denied request weighs on the next window too. */
static void count_rejected(void **unused)
{
    struct sl_limit l;
    const struct wt_row counted[] = {
        {0, 2, SL_ALLOW, 0, 0, 20},
        {1, 1, SL_DENY, 0, 16, 19}, /* cur 3: at 17, 3 * 3/10 + 1 <= 2 */
        {16, 0, SL_ALLOW, 0, 0, 4}, /* 3 * 4/10 = 1.2: no room for 1 */
        {17, 1, SL_ALLOW, 0, 0, 13},
        /* counted: cur 2, so 3 * (3 - w)/10 + 3 <= 2 never in this window;
         * in the next, 2 * (10 - e)/10 + 1 <= 2 from e = 5: 3 + 5 */
        {17, 1, SL_DENY, 0, 8, 13},
    };
    const struct wt_row plain[] = {
        {0, 2, SL_ALLOW, 0, 0, 20},
        {1, 1, SL_DENY, 0, 14, 19}, /* at 15: 2 * 5/10 + 1 <= 2 */
        {15, 1, SL_ALLOW, 0, 0, 15},
    };

    (void)unused;
    limit(&l, 2, 10);
    l.count_rejected = true;
    run(&l, counted, WT_N(counted));
    l.count_rejected = false;
    run(&l, plain, WT_N(plain));
}

/* period INT64_MAX and quota 2^63: products need 127 bits, resets
 * saturate at INT64_MAX, waits stay exact. */
static void extreme_period_and_quota(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, UINT64_MAX, SL_DENY, INT64_MAX, -1, 0},
        {0, (uint64_t)1 << 63, SL_ALLOW, 0, 0, INT64_MAX},
        /* 1 ns before the window ends: cur alone is over, next window at
         * +1, and there 2^63 * (P - e2)/P + 1 <= 2^63 needs e2 = 1. */
        {INT64_MAX - 1, 1, SL_DENY, 0, 2, INT64_MAX},
    };

    (void)unused;
    limit(&l, (uint64_t)1 << 63, INT64_MAX);
    run(&l, rows, WT_N(rows));
}

static void state_is_inline_and_whole_at(void **unused)
{
    struct sl_limit l;
    struct sl_decision d;
    void *st;

    (void)unused;
    limit(&l, 3, 10);
    assert_true(sl_algo_state_size(&l) <= SL__STATE_INLINE);
    st = wt_state_new(&l, 0);
    assert_int_equal(sl__algo_sliding_window.whole_at(st, &l), INT64_MIN);
    sl_algo_decide(st, &l, 13, 1, &d);
    assert_int_equal(sl__algo_sliding_window.whole_at(st, &l), 30);
    sl_algo_decide(st, &l, 13, 0, &d);
    assert_int_equal(d.reset_ns, 30 - 13);
    test_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cloudflare_example),
        cmocka_unit_test(waits_crossing_windows),
        cmocka_unit_test(requests_one_period_one_ns),
        cmocka_unit_test(count_rejected),
        cmocka_unit_test(extreme_period_and_quota),
        cmocka_unit_test(state_is_inline_and_whole_at),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
