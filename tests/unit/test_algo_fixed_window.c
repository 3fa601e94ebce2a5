/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_fixed_window.c - reference traces for fixed_window: epoch-aligned
 * windows (a boundary at a round epoch time, times far from 0 and before
 * 1970), peeks, backward clock steps, huge costs and quotas, requests = 1,
 * count_rejected, extreme periods, validation and whole_at.
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

#define S SL_NS_PER_S
/* 1,700,000,040 s after the epoch: a multiple of 60 s, so a minute starts. */
#define T0 (INT64_C(1700000040) * S)

static void limit(struct sl_limit *l, uint64_t requests, int64_t period_ns)
{
    sl_limit_init(l);
    l->algo = SL_ALGO_FIXED_WINDOW;
    l->requests = requests;
    l->period_ns = period_ns;
}

/* Three per minute across the minute that starts at T0 (as envoyproxy's
 * ratelimit counts: per calendar minute, not per 60 s since the first). */
static void epoch_aligned_minute(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {T0 - 2 * S, 1, SL_ALLOW, 2, 0, 2 * S},
        {T0 - S, 2, SL_ALLOW, 0, 0, S},
        {T0 - 1, 1, SL_DENY, 0, 1, 1},       /* full until the boundary */
        {T0, 1, SL_ALLOW, 2, 0, 60 * S},     /* new window at T0 exactly */
        {T0 + 59 * S, 3, SL_DENY, 2, S, S},  /* 1 + 3 > 3 */
        {T0 + 59 * S, 0, SL_ALLOW, 2, 0, S}, /* peek */
        {T0 + 60 * S, 3, SL_ALLOW, 0, 0, 60 * S},
        {T0 + 60 * S, 4, SL_DENY, 0, -1, 60 * S}, /* 4 > 3 never fits */
        /* Backward step: treated as T0 + 60 s, still full. */
        {T0 + 10 * S, 1, SL_DENY, 0, 60 * S, 60 * S},
        {T0 + 10 * S, 0, SL_ALLOW, 0, 0, 60 * S},
    };
    void *st;

    (void)unused;
    limit(&l, 3, 60 * S);
    st = wt_state_new(&l, T0 - 2 * S);
    wt_run(st, &l, rows, WT_N(rows));
    test_free(st);
}

/* Windows before 1970 are aligned too: [-10, 0) and [0, 10). */
static void negative_times(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {-10, 0, SL_ALLOW, 2, 0, 0}, {-10, 2, SL_ALLOW, 0, 0, 10}, {-1, 1, SL_DENY, 0, 1, 1},
        {0, 1, SL_ALLOW, 1, 0, 10},  {9, 1, SL_ALLOW, 0, 0, 1},
    };
    void *st;

    (void)unused;
    limit(&l, 2, 10);
    st = wt_state_new(&l, -10);
    wt_run(st, &l, rows, WT_N(rows));
    test_free(st);
}

static void requests_one_and_period_one_ns(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] =
        {
            {5, 1, SL_ALLOW, 0, 0, 1}, {5, 1, SL_DENY, 0, 1, 1},
            {6, 1, SL_ALLOW, 0, 0, 1}, {6, UINT64_MAX, SL_DENY, 0, -1, 1},
            {7, 2, SL_DENY, 1, -1, 0}, /* empty window: remaining 1, reset 0 */
        };
    void *st;

    (void)unused;
    limit(&l, 1, 1);
    st = wt_state_new(&l, 5);
    wt_run(st, &l, rows, WT_N(rows));
    test_free(st);
}

/* Quotas up to 2^63 and costs up to 2^64 - 1 neither wrap nor crash. */
static void huge_quota_and_costs(void **unused)
{
    struct sl_limit l;
    const int64_t big = INT64_MAX;
    const struct wt_row rows[] = {
        {0, UINT64_MAX, SL_DENY, big, -1, 0},
        {0, (uint64_t)1 << 62, SL_ALLOW, (int64_t)1 << 62, 0, S},
        {1, (uint64_t)1 << 62, SL_ALLOW, 0, 0, S - 1},
        {2, 2, SL_DENY, 0, S - 2, S - 2},
        {S, (uint64_t)1 << 63, SL_ALLOW, 0, 0, S},
    };
    void *st;

    (void)unused;
    /* remaining = 2^63 - cost is reported saturated at INT64_MAX = 2^63 - 1 */
    limit(&l, (uint64_t)1 << 63, S);
    st = wt_state_new(&l, 0);
    wt_run(st, &l, rows, WT_N(rows));
    test_free(st);
}

/* A period of ~100 years with times near INT64_MAX: the window's end lies
 * past INT64_MAX, the distances to it do not overflow. */
static void period_of_a_century_near_int64_max(void **unused)
{
    struct sl_limit l;
    const int64_t p = INT64_C(3153600000) * S; /* 100 * 365 days */
    const int64_t t = INT64_MAX - 5;
    const int64_t end_dist = (int64_t)((__int128)(t / p + 1) * p - t);
    const struct wt_row rows[] = {
        {t, 1, SL_ALLOW, 0, 0, end_dist},
        {t + 5, 1, SL_DENY, 0, end_dist - 5, end_dist - 5},
    };
    void *st;

    (void)unused;
    limit(&l, 1, p);
    st = wt_state_new(&l, t);
    wt_run(st, &l, rows, WT_N(rows));
    assert_int_equal(sl__algo_fixed_window.whole_at(st, &l), INT64_MAX);
    test_free(st);
}

/* count_rejected: a denied request is counted, so a smaller one that would
 * have fitted is denied too, until the window ends. */
static void count_rejected(void **unused)
{
    struct sl_limit l;
    const struct wt_row counted[] = {
        {0, 2, SL_ALLOW, 1, 0, 10},
        {1, 2, SL_DENY, 0, 9, 9}, /* counted: remaining reported after it */
        {2, 1, SL_DENY, 0, 8, 8},
        {10, 3, SL_ALLOW, 0, 0, 10},
    };
    const struct wt_row plain[] = {
        {0, 2, SL_ALLOW, 1, 0, 10},
        {1, 2, SL_DENY, 1, 9, 9},
        {2, 1, SL_ALLOW, 0, 0, 8},
    };
    void *st;

    (void)unused;
    limit(&l, 3, 10);
    l.count_rejected = true;
    st = wt_state_new(&l, 0);
    wt_run(st, &l, counted, WT_N(counted));
    test_free(st);
    l.count_rejected = false;
    st = wt_state_new(&l, 0);
    wt_run(st, &l, plain, WT_N(plain));
    test_free(st);
}

static void state_validation_and_whole_at(void **unused)
{
    struct sl_limit l;
    struct sl_decision d;
    const char *why = NULL;
    void *st;

    (void)unused;
    limit(&l, 5, 0);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(why);
    limit(&l, 0, S);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    limit(&l, 5, 10);
    assert_true(sl_algo_state_size(&l) <= SL__STATE_INLINE);
    st = wt_state_new(&l, 0);
    assert_int_equal(sl__algo_fixed_window.whole_at(st, &l), INT64_MIN);
    sl_algo_decide(st, &l, 23, 1, &d);
    assert_int_equal(sl__algo_fixed_window.whole_at(st, &l), 30);
    assert_int_equal(sl_algo_release(st, &l, 23, 1), SL_EINVAL);
    test_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(epoch_aligned_minute),
        cmocka_unit_test(negative_times),
        cmocka_unit_test(requests_one_and_period_one_ns),
        cmocka_unit_test(huge_quota_and_costs),
        cmocka_unit_test(period_of_a_century_near_int64_max),
        cmocka_unit_test(count_rejected),
        cmocka_unit_test(state_validation_and_whole_at),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
