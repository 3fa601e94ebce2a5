/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_token_bucket.c - token_bucket in both forms.
 *
 * Plain (bucket4j greedy refill): bursts up to the capacity, continuous
 * refill, exact fractional refill, the default burst, huge costs,
 * count_rejected debt, a clock stepping backwards.
 * Warm-up (Guava SmoothWarmingUp, coldFactor 3, tryAcquire(n, 0)): the
 * docs/contracts.md §Algorithms trace (2 per 1 s, warmup 4 s: allowed at 0, 1.375, 2.5,
 * 3.375, 4.0, 4.5, 5.0, 5.5 s; each 1 ms earlier denied), cooling down
 * again after idling, pay-later for big costs (never -1), count_rejected.
 *
 * Does not: check the burst invariant over random traces (test_diff_buckets).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algo/algo.h"
#include "support/buckets_trace.h"

#define T0 INT64_C(1700000000000000000) /* an arbitrary Unix time, ns */

static struct sl_limit guava_2_per_s_warmup_4s(void)
{
    struct sl_limit l = bk_limit(SL_ALGO_TOKEN_BUCKET, 2, BK_S(1), -1);

    l.warmup_ns = BK_S(4);
    sl_limit_finish(&l);
    return l;
}

/* docs/contracts.md §Algorithms / Guava: each allowed time, and 1 ms before it a denial that
 * says to come back in 1 ms. reset is when the limiter is fully cold again:
 * the next free time plus 0.5 s per missing stored permit (of 8). */
static void guava_warmup_trace(void **unused)
{
    struct sl_limit l = guava_2_per_s_warmup_4s();
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 0, 0, BK_MS(1875), 0},
        {T0 + BK_MS(1374), 1, SL_DENY, 0, BK_MS(1), BK_MS(501), 0},
        {T0 + BK_MS(1375), 1, SL_ALLOW, 0, 0, BK_MS(2125), 0},
        {T0 + BK_MS(2499), 1, SL_DENY, 0, BK_MS(1), BK_MS(1001), 0},
        {T0 + BK_MS(2500), 1, SL_ALLOW, 0, 0, BK_MS(2375), 0},
        {T0 + BK_MS(3374), 1, SL_DENY, 0, BK_MS(1), BK_MS(1501), 0},
        {T0 + BK_MS(3375), 1, SL_ALLOW, 0, 0, BK_MS(2625), 0},
        {T0 + BK_MS(3999), 1, SL_DENY, 0, BK_MS(1), BK_MS(2001), 0},
        {T0 + BK_MS(4000), 1, SL_ALLOW, 0, 0, BK_MS(3000), 0},
        {T0 + BK_MS(4499), 1, SL_DENY, 0, BK_MS(1), BK_MS(2501), 0},
        {T0 + BK_MS(4500), 1, SL_ALLOW, 0, 0, BK_MS(3500), 0},
        {T0 + BK_MS(4999), 1, SL_DENY, 0, BK_MS(1), BK_MS(3001), 0},
        {T0 + BK_MS(5000), 1, SL_ALLOW, 0, 0, BK_MS(4000), 0},
        {T0 + BK_MS(5499), 1, SL_DENY, 0, BK_MS(1), BK_MS(3501), 0},
        {T0 + BK_MS(5500), 1, SL_ALLOW, 0, 0, BK_MS(4500), 0},
        /* a peek when free says one more is allowed now */
        {T0 + BK_MS(6000), 0, SL_ALLOW, 1, 0, BK_MS(4000), 0},
        /* idle for long: cold again, the first wait is 1.375 s again */
        {T0 + BK_S(20), 1, SL_ALLOW, 0, 0, BK_MS(1875), 0},
        {T0 + BK_S(20) + BK_MS(1374), 1, SL_DENY, 0, BK_MS(1), BK_MS(501), 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* Pay-later: any cost passes once the next free time has come, and pushes
 * it forward by what the permits cost (4 s for the 4 cold permits above the
 * threshold, 0.5 s each for the rest); never -1. */
static void warmup_big_costs_pay_later(void **unused)
{
    struct sl_limit l = guava_2_per_s_warmup_4s();
    struct bk_state st;
    const int64_t t = T0 + BK_S(100);
    const struct bk_row rows[] = {
        /* 100 permits, cold: 4 s + 4 * 0.5 s + 92 * 0.5 s = 52 s */
        {t, 100, SL_ALLOW, 0, 0, BK_S(56), 0},
        {t + BK_S(1), 1, SL_DENY, 0, BK_S(51), BK_S(55), 0},
        {t + BK_S(52), UINT64_MAX, SL_ALLOW, 0, 0, INT64_MAX - (t + BK_S(52)), 0},
        {t + BK_S(60), 1, SL_DENY, 0, INT64_MAX - (t + BK_S(60)), INT64_MAX - (t + BK_S(60)), 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* count_rejected with warm-up: a counted denial reserves its permits as
 * Guava's reserve() would, pushing the next free time. */
static void warmup_count_rejected(void **unused)
{
    struct sl_limit l = guava_2_per_s_warmup_4s();
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 0, 0, BK_MS(1875), 0},
        /* the counted denial reserves 1.125 s: free at 2.5 s, not 1.375 s,
         * and its fields say so */
        {T0 + BK_S(1), 1, SL_DENY, 0, BK_MS(1500), BK_MS(2500), 0},
        /* counted again (0.875 s more): free at 3.375 s */
        {T0 + BK_MS(1375), 1, SL_DENY, 0, BK_S(2), BK_MS(3500), 0},
        {T0 + BK_MS(3375), 1, SL_ALLOW, 0, 0, BK_MS(2625), 0},
    };

    l.count_rejected = true;
    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* Capacity 10, 5 per second: a token every 200 ms, exact fractions. */
static void plain_burst_and_refill(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_TOKEN_BUCKET, 5, BK_S(1), 10);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 0, SL_ALLOW, 10, 0, 0, 0},
        {T0, 10, SL_ALLOW, 0, 0, BK_S(2), 0},
        {T0, 1, SL_DENY, 0, BK_MS(200), BK_S(2), 0},
        /* 2.5 tokens back */
        {T0 + BK_MS(500), 3, SL_DENY, 2, BK_MS(100), BK_MS(1500), 0},
        {T0 + BK_MS(500), 2, SL_ALLOW, 0, 0, BK_MS(1900), 0},
        {T0 + BK_MS(600), 0, SL_ALLOW, 1, 0, BK_MS(1800), 0},
        {T0 + BK_MS(600), 11, SL_DENY, 1, -1, BK_MS(1800), 0},
        {T0 + BK_MS(600), UINT64_MAX, SL_DENY, 1, -1, BK_MS(1800), 0},
        /* full again; more rest adds nothing */
        {T0 + BK_S(10), 0, SL_ALLOW, 10, 0, 0, 0},
        {T0 + BK_S(10), 10, SL_ALLOW, 0, 0, BK_S(2), 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* The default capacity is `requests`; 3 per second refills a token every
 * 333333333.3 ns, kept exactly. */
static void plain_default_burst_fractional(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_TOKEN_BUCKET, 3, BK_S(1), -1);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 3, SL_ALLOW, 0, 0, BK_S(1), 0},
        {T0 + 333333333, 1, SL_DENY, 0, 1, 666666667, 0},
        {T0 + 333333334, 1, SL_ALLOW, 0, 0, BK_S(1), 0},
        {T0 + 666666666, 1, SL_DENY, 0, 1, 666666668, 0},
        {T0 + 666666667, 1, SL_ALLOW, 0, 0, BK_S(1), 0},
        {T0 + BK_S(1), 1, SL_ALLOW, 0, 0, BK_S(1), 0},
    };

    assert_int_equal(sl_limit_quota(&l), 3);
    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* A time before the last one recorded is treated as that time. */
static void clock_backwards_is_last_time(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_TOKEN_BUCKET, 1, BK_S(1), 2);
    struct sl_limit w = guava_2_per_s_warmup_4s();
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0 + BK_S(10), 2, SL_ALLOW, 0, 0, BK_S(2), 0},
        {T0 + BK_S(5), 1, SL_DENY, 0, BK_S(1), BK_S(2), 0},
        {INT64_MIN, 0, SL_ALLOW, 0, 0, BK_S(2), 0},
        {T0 + BK_S(11), 1, SL_ALLOW, 0, 0, BK_S(2), 0},
    };
    const struct bk_row warm_rows[] = {
        {T0 + BK_S(10), 1, SL_ALLOW, 0, 0, BK_MS(1875), 0},
        {T0 + BK_S(9), 1, SL_DENY, 0, BK_MS(1375), BK_MS(1875), 0},
        {INT64_MIN, 0, SL_ALLOW, 0, 0, BK_MS(1875), 0},
    };

    bk_init(&st, &l, T0 + BK_S(10));
    bk_run(&st, &l, rows, BK_N(rows));
    bk_init(&st, &w, T0 + BK_S(10));
    bk_run(&st, &w, warm_rows, BK_N(warm_rows));
}

/* count_rejected: a counted denial takes its tokens anyway (a debt that
 * refill repays before anything passes again). */
static void plain_count_rejected_debt(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_TOKEN_BUCKET, 1, BK_S(1), 1);
    struct bk_state st;
    struct sl_decision d;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 0, 0, BK_S(1), 0},
        /* counted: the debt (and the fields) include the denial */
        {T0 + BK_MS(500), 1, SL_DENY, 0, BK_MS(1500), BK_MS(1500), 0},
        {T0 + BK_S(1), 1, SL_DENY, 0, BK_S(2), BK_S(2), 0},
        {T0 + BK_S(3), 1, SL_ALLOW, 0, 0, BK_S(1), 0},
    };

    l.count_rejected = true;
    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
    /* an impossible cost, counted, saturates at INT64_MAX ns of debt */
    sl_algo_decide(&st, &l, T0 + BK_S(3), UINT64_MAX, &d);
    assert_int_equal(d.retry_after_ns, -1);
    sl_algo_decide(&st, &l, T0 + BK_S(3), 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.reset_ns, INT64_MAX);
    assert_int_equal(sl__algo_token_bucket.whole_at(&st, &l), INT64_MAX);
}

/* Huge parameters: nothing wraps; a capacity beyond INT64_MAX ns of refill
 * is kept exactly. */
static void extreme_parameters(void **unused)
{
    struct sl_limit fast = bk_limit(SL_ALGO_TOKEN_BUCKET, UINT64_MAX, 1, -1);
    struct sl_limit slow = bk_limit(SL_ALGO_TOKEN_BUCKET, 1, INT64_MAX, INT64_MAX);
    struct bk_state st;
    struct sl_decision d;

    bk_init(&st, &fast, T0);
    sl_algo_decide(&st, &fast, T0, UINT64_MAX, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.quota, INT64_MAX);
    assert_int_equal(d.reset_ns, 1);
    sl_algo_decide(&st, &fast, T0, 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    sl_algo_decide(&st, &fast, T0 + 1, UINT64_MAX, &d);
    assert_int_equal(d.verdict, SL_ALLOW);

    bk_init(&st, &slow, T0);
    sl_algo_decide(&st, &slow, T0, (uint64_t)INT64_MAX, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.reset_ns, INT64_MAX);
    sl_algo_decide(&st, &slow, T0 + BK_S(1), 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.retry_after_ns, INT64_MAX - BK_S(1));
}

static void validation(void **unused)
{
    struct sl_limit l = guava_2_per_s_warmup_4s();
    const char *why = NULL;

    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
    assert_int_equal(sl_limit_quota(&l), 2);
    assert_true(sl_algo_state_size(&l) <= SL__STATE_INLINE);
    l.burst = 5;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "warmup and burst"));
    l.burst = -1;
    l.requests = 1000000;
    l.warmup_ns = BK_S(86400) * 365;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "shorten the warmup"));
    l = bk_limit(SL_ALGO_TOKEN_BUCKET, 5, BK_S(1), 0);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "burst must be at least 1"));
    l.burst = 1;
    l.delay = 1;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "leaky_bucket"));
    l.delay = 0;
    l.lease_ns = 1;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(guava_warmup_trace),
        cmocka_unit_test(warmup_big_costs_pay_later),
        cmocka_unit_test(warmup_count_rejected),
        cmocka_unit_test(plain_burst_and_refill),
        cmocka_unit_test(plain_default_burst_fractional),
        cmocka_unit_test(clock_backwards_is_last_time),
        cmocka_unit_test(plain_count_rejected_debt),
        cmocka_unit_test(extreme_parameters),
        cmocka_unit_test(validation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
