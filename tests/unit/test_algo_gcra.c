/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_gcra.c - gcra against redis-cell's CL.THROTTLE: its README
 * example and the sequence of its unit test (brandur/redis-cell,
 * src/cell/mod.rs, it_rate_limits), then peeks, a clock stepping backwards,
 * huge costs and parameters, count_rejected, validation and whole_at.
 *
 * Does not: test the RESP mapping of the fields (redis-cell's -1 retry when
 * allowed, seconds); that is the server's.
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

/* CL.THROTTLE user123 15 30 60 1 -> 0, 16, 15, -1, 2 (retry 0 here). */
static void readme_example(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 30, BK_S(60), 15);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 15, 0, BK_S(2), 0},
    };

    assert_int_equal(sl_limit_quota(&l), 16);
    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* redis-cell's it_rate_limits: limit 5 (max_burst 4), 1 per second. Its
 * retry_after of -1 on allowed rows is 0 here; the denied rows keep theirs. */
static void redis_cell_unit_test(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 1, BK_S(1), 4);
    struct bk_state st;
    const struct bk_row rows[] = {
        /* 0: never more than the maximum */
        {T0, 6, SL_DENY, 5, -1, 0, 0},
        /* 1-6 */
        {T0, 1, SL_ALLOW, 4, 0, BK_S(1), 0},
        {T0, 1, SL_ALLOW, 3, 0, BK_S(2), 0},
        {T0, 1, SL_ALLOW, 2, 0, BK_S(3), 0},
        {T0, 1, SL_ALLOW, 1, 0, BK_S(4), 0},
        {T0, 1, SL_ALLOW, 0, 0, BK_S(5), 0},
        {T0, 1, SL_DENY, 0, BK_S(1), BK_S(5), 0},
        /* 7-11 */
        {T0 + BK_MS(3000), 1, SL_ALLOW, 2, 0, BK_MS(3000), 0},
        {T0 + BK_MS(3100), 1, SL_ALLOW, 1, 0, BK_MS(3900), 0},
        {T0 + BK_MS(4000), 1, SL_ALLOW, 1, 0, BK_MS(4000), 0},
        {T0 + BK_MS(8000), 1, SL_ALLOW, 4, 0, BK_MS(1000), 0},
        {T0 + BK_MS(9500), 1, SL_ALLOW, 4, 0, BK_MS(1000), 0},
        /* 12: zero volume peeks */
        {T0 + BK_MS(9500), 0, SL_ALLOW, 4, 0, BK_S(1), 0},
        /* 13: high volume uses more */
        {T0 + BK_MS(9500), 2, SL_ALLOW, 2, 0, BK_S(3), 0},
        /* 14: large requests cannot exceed limits */
        {T0 + BK_MS(9500), 5, SL_DENY, 2, BK_S(3), BK_S(3), 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* An emission interval that is not a whole number of ns (3 per 1 s) is kept
 * exactly: with burst 2 (a tolerance of exactly 1 s) the grid of allowed
 * times stays on k/3 s rounded up, and 1 ns earlier is denied. */
static void fractional_interval_is_exact(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 3, BK_S(1), 2);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 3, SL_ALLOW, 0, 0, BK_S(1), 0},
        {T0 + 333333333, 1, SL_DENY, 0, 1, 666666667, 0},
        {T0 + 333333334, 1, SL_ALLOW, 0, 0, BK_S(1), 0},
        {T0 + 666666666, 1, SL_DENY, 0, 1, 666666668, 0},
        {T0 + 666666667, 1, SL_ALLOW, 0, 0, BK_S(1), 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* A time before the last one recorded is treated as that time: no quota is
 * granted by stepping back, and what is reported is what the last time
 * would report. */
static void clock_backwards_is_last_time(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 1, BK_S(1), 1);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0 + BK_S(10), 1, SL_ALLOW, 1, 0, BK_S(1), 0},
        {T0 + BK_S(10), 1, SL_ALLOW, 0, 0, BK_S(2), 0},
        {T0 + BK_S(5), 1, SL_DENY, 0, BK_S(1), BK_S(2), 0},
        {T0, 0, SL_ALLOW, 0, 0, BK_S(2), 0},
        {INT64_MIN, 1, SL_DENY, 0, BK_S(1), BK_S(2), 0},
        {T0 + BK_S(11), 1, SL_ALLOW, 0, 0, BK_S(2), 0},
    };

    bk_init(&st, &l, T0 + BK_S(10));
    bk_run(&st, &l, rows, BK_N(rows));
}

/* Costs above the limit can never be granted (-1), whatever their size,
 * and leave the state alone; a cost equal to the limit is granted. */
static void huge_costs_never_granted(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 10, BK_S(1), 9);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, UINT64_MAX, SL_DENY, 10, -1, 0, 0},   {T0, (uint64_t)1 << 63, SL_DENY, 10, -1, 0, 0},
        {T0, 11, SL_DENY, 10, -1, 0, 0},           {T0, 10, SL_ALLOW, 0, 0, BK_S(1), 0},
        {T0, 10, SL_DENY, 0, BK_S(1), BK_S(1), 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* Extreme parameters: nothing overflows, nothing is granted beyond the
 * limit, reported durations saturate rather than wrap. */
static void extreme_parameters(void **unused)
{
    struct sl_limit slow = bk_limit(SL_ALGO_GCRA, 1, INT64_MAX, 0);
    struct sl_limit fast = bk_limit(SL_ALGO_GCRA, UINT64_MAX, 1, INT64_MAX);
    struct bk_state st;
    const struct bk_row slow_rows[] = {
        {T0, 1, SL_ALLOW, 0, 0, INT64_MAX, 0},
        {INT64_MAX, 1, SL_DENY, 0, T0, T0, 0},
        {T0, UINT64_MAX, SL_DENY, 0, -1, INT64_MAX, 0},
    };
    struct sl_decision d;

    bk_init(&st, &slow, T0);
    bk_run(&st, &slow, slow_rows, BK_N(slow_rows));

    /* A tolerance longer than INT64_MAX ns is kept exactly, not clipped:
     * after a burst of 2^62 the next 2^62 + 1 cells do not fit. */
    slow.burst = INT64_MAX;
    bk_init(&st, &slow, T0);
    sl_algo_decide(&st, &slow, T0, (uint64_t)1 << 62, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.reset_ns, INT64_MAX);
    sl_algo_decide(&st, &slow, T0, ((uint64_t)1 << 62) + 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.retry_after_ns, INT64_MAX);
    sl_algo_decide(&st, &slow, T0, (uint64_t)1 << 62, &d);
    assert_int_equal(d.verdict, SL_ALLOW);

    /* burst INT64_MAX: limit 2^63, so any cost up to 2^63 passes once. */
    bk_init(&st, &fast, T0);
    sl_algo_decide(&st, &fast, T0, (uint64_t)1 << 63, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.remaining, 0);
    assert_int_equal(d.reset_ns, 1); /* 2^63 cells at 2^64-1 per ns */
    sl_algo_decide(&st, &fast, T0, 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.retry_after_ns, 1);
    sl_algo_decide(&st, &fast, T0, UINT64_MAX, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.retry_after_ns, -1);
}

/* count_rejected: a counted denial pushes the TAT as an admission would,
 * so a client that keeps hammering stays out until it pauses. */
static void count_rejected_pushes_tat(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 1, BK_S(1), 0);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 0, 0, BK_S(1), 0},
        /* denied and counted: TAT T0+1s -> T0+2s; the fields say so */
        {T0 + BK_MS(500), 1, SL_DENY, 0, BK_MS(1500), BK_MS(1500), 0},
        /* without counting this would pass; counted, TAT -> T0+3s */
        {T0 + BK_S(1), 1, SL_DENY, 0, BK_S(2), BK_S(2), 0},
        /* waiting retry_after is enough */
        {T0 + BK_S(3), 1, SL_ALLOW, 0, 0, BK_S(1), 0},
    };

    l.count_rejected = true;
    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* A counted denial of a cost that can never pass saturates: the key stays
 * blocked for INT64_MAX ns at most, and nothing wraps. */
static void count_rejected_saturates(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 1, BK_S(1), 0);
    struct bk_state st;
    struct sl_decision d;

    l.count_rejected = true;
    bk_init(&st, &l, T0);
    for (int i = 0; i < 3; i++) {
        sl_algo_decide(&st, &l, T0, UINT64_MAX, &d);
        assert_int_equal(d.verdict, SL_DENY);
        assert_int_equal(d.retry_after_ns, -1);
    }
    sl_algo_decide(&st, &l, T0, 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.reset_ns, INT64_MAX);
    assert_int_equal(d.retry_after_ns, INT64_MAX);
    assert_int_equal(sl__algo_gcra.whole_at(&st, &l), INT64_MAX);
}

/* whole_at is when a peek reports reset 0 and the full limit. */
static void whole_at_matches_reset(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 7, BK_S(3), 4);
    struct bk_state st;
    struct sl_decision d;
    int64_t at;

    bk_init(&st, &l, T0);
    assert_int_equal(sl__algo_gcra.whole_at(&st, &l), T0);
    for (int i = 0; i < 4; i++)
        sl_algo_decide(&st, &l, T0 + i, 1, &d);
    at = sl__algo_gcra.whole_at(&st, &l);
    assert_int_equal(at, T0 + 3 + d.reset_ns);
    sl_algo_decide(&st, &l, at - 1, 0, &d);
    assert_int_equal(d.reset_ns, 1);
    sl_algo_decide(&st, &l, at, 0, &d);
    assert_int_equal(d.reset_ns, 0);
    assert_int_equal(d.remaining, 5);
}

static void validation(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_GCRA, 10, BK_S(1), -1);
    const char *why = NULL;

    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
    assert_int_equal(sl_limit_quota(&l), 1); /* default burst 0 */
    assert_true(sl_algo_state_size(&l) <= SL__STATE_INLINE);
    l.warmup_ns = BK_S(1);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "warmup"));
    l.warmup_ns = 0;
    l.nodelay = true;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "leaky_bucket"));
    l.nodelay = false;
    l.min_interval_ns = 1;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "min_interval"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(readme_example),
        cmocka_unit_test(redis_cell_unit_test),
        cmocka_unit_test(fractional_interval_is_exact),
        cmocka_unit_test(clock_backwards_is_last_time),
        cmocka_unit_test(huge_costs_never_granted),
        cmocka_unit_test(extreme_parameters),
        cmocka_unit_test(count_rejected_pushes_tat),
        cmocka_unit_test(count_rejected_saturates),
        cmocka_unit_test(whole_at_matches_reset),
        cmocka_unit_test(validation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
