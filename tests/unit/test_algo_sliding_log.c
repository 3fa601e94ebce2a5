/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_sliding_log.c - reference traces for sliding_log, including the
 * documented sequences of rolling-rate-limiter (src/index.test.ts), which
 * records blocked actions and so behaves like count_rejected: true. Its
 * wouldLimit() is a peek here (remaining >= 1); where it reports
 * millisecondsUntilAllowed for a blocked action, our retry_after agrees.
 * Also: the log_cap bound, huge costs, backward steps, 1 ns periods.
 *
 * Known difference, by contract (contracts §Decisions): rolling's actionsRemaining ignores
 * minDifference; our `remaining` is 0 while min_interval blocks, and a peek
 * reports requests still allowed now (rolling counts the peeked one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "algo/algo.h"
#include "support/windows_trace.h"

#define M SL_NS_PER_MS

static void limit(struct sl_limit *l, uint64_t requests, int64_t period_ns)
{
    sl_limit_init(l);
    l->algo = SL_ALGO_SLIDING_LOG;
    l->requests = requests;
    l->period_ns = period_ns;
}

static void run(const struct sl_limit *l, const struct wt_row *rows, size_t n)
{
    void *st = wt_state_new(l, rows[0].t_ns);
    wt_run(st, l, rows, n);
    test_free(st);
}

/* "prevents more than maxInInterval actions within interval" (10 ms, 2). */
static void rolling_max_in_interval(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, 1, SL_ALLOW, 1, 0, 10 * M},     {1 * M, 0, SL_ALLOW, 1, 0, 9 * M},
        {1 * M, 1, SL_ALLOW, 0, 0, 10 * M}, {9 * M, 0, SL_ALLOW, 0, 0, 2 * M},
        {10 * M, 0, SL_ALLOW, 1, 0, 1 * M}, {10 * M, 1, SL_ALLOW, 0, 0, 10 * M},
    };

    (void)unused;
    limit(&l, 2, 10 * M);
    l.count_rejected = true;
    run(&l, rows, WT_N(rows));
}

/* "blocked actions count as actions" (10 ms, 3). */
static void rolling_blocked_actions_count(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, 1, SL_ALLOW, 2, 0, 10 * M},         {0, 1, SL_ALLOW, 1, 0, 10 * M},
        {0, 1, SL_ALLOW, 0, 0, 10 * M},         {9 * M, 1, SL_DENY, 0, 1 * M, 10 * M},
        {9 * M, 1, SL_DENY, 0, 1 * M, 10 * M},  {10 * M, 1, SL_ALLOW, 0, 0, 10 * M},
        {10 * M, 1, SL_DENY, 0, 9 * M, 10 * M},
    };

    (void)unused;
    limit(&l, 3, 10 * M);
    l.count_rejected = true;
    run(&l, rows, WT_N(rows));
}

/* "prevents actions less than minDistance apart" (10 ms, 4, 2 ms). */
static void rolling_min_difference(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, 1, SL_ALLOW, 0, 0, 10 * M},        {0, 1, SL_DENY, 0, 2 * M, 10 * M},
        {1 * M, 1, SL_DENY, 0, 2 * M, 10 * M}, {3 * M, 1, SL_ALLOW, 0, 0, 10 * M},
        {3 * M, 1, SL_DENY, 0, 7 * M, 10 * M},
    };

    (void)unused;
    limit(&l, 4, 10 * M);
    l.min_interval_ns = 2 * M;
    l.count_rejected = true;
    run(&l, rows, WT_N(rows));
}

/* "returns info about limiting" (10 ms, 3), without and with minDifference
 * 2 ms: rolling's millisecondsUntilAllowed for the blocked actions at 5 and
 * 8 ms is 5 and 6; ours is the same. */
static void rolling_info(void **unused)
{
    struct sl_limit l;
    const struct wt_row plain[] = {
        {0, 1, SL_ALLOW, 2, 0, 10 * M},     {4 * M, 1, SL_ALLOW, 1, 0, 10 * M},
        {5 * M, 1, SL_ALLOW, 0, 0, 10 * M}, {8 * M, 1, SL_DENY, 0, 6 * M, 10 * M},
        {11 * M, 0, SL_ALLOW, 0, 0, 7 * M}, {17 * M, 0, SL_ALLOW, 2, 0, 1 * M},
    };
    const struct wt_row spaced[] = {
        {0, 1, SL_ALLOW, 0, 0, 10 * M},        {4 * M, 1, SL_ALLOW, 0, 0, 10 * M},
        {5 * M, 1, SL_DENY, 0, 5 * M, 10 * M}, {8 * M, 1, SL_DENY, 0, 6 * M, 10 * M},
        {11 * M, 0, SL_ALLOW, 0, 0, 7 * M},    {17 * M, 0, SL_ALLOW, 2, 0, 1 * M},
    };

    (void)unused;
    limit(&l, 3, 10 * M);
    l.count_rejected = true;
    run(&l, plain, WT_N(plain));
    l.min_interval_ns = 2 * M;
    run(&l, spaced, WT_N(spaced));
}

/* Without count_rejected a denial records nothing. */
static void plain_denials_are_not_logged(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, 2, SL_ALLOW, 0, 0, 10},
        {5, 1, SL_DENY, 0, 5, 5},
        {5, 3, SL_DENY, 0, -1, 5},
        /* Earlier than 5 but not than the last recorded time (0): the
         * denials at 5 changed nothing, so 2 is taken as it is. */
        {2, 1, SL_DENY, 0, 8, 8},
        {10, 2, SL_ALLOW, 0, 0, 10},
        {3, 1, SL_DENY, 0, 10, 10}, /* backward step: seen as 10 */
    };

    (void)unused;
    limit(&l, 2, 10);
    run(&l, rows, WT_N(rows));
}

/* A counted huge cost fills the ring (its bound is `requests` entries) and
 * keeps the key blocked for one period. */
static void counted_huge_cost_fills_ring(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, UINT64_MAX, SL_DENY, 0, -1, 10},
        {5, 1, SL_DENY, 0, 5, 10}, /* counted: log 0, 0, 5 */
        {10, 1, SL_ALLOW, 1, 0, 10},
        {10, 0, SL_ALLOW, 1, 0, 10},
    };

    (void)unused;
    limit(&l, 3, 10);
    l.count_rejected = true;
    run(&l, rows, WT_N(rows));
}

static void requests_one_period_one_ns(void **unused)
{
    struct sl_limit l;
    const struct wt_row rows[] = {
        {0, 1, SL_ALLOW, 0, 0, 1},        {0, 1, SL_DENY, 0, 1, 1},
        {1, 1, SL_ALLOW, 0, 0, 1},        {INT64_MAX, 1, SL_ALLOW, 0, 0, 1},
        {INT64_MAX, 1, SL_DENY, 0, 1, 1},
    };

    (void)unused;
    limit(&l, 1, 1);
    run(&l, rows, WT_N(rows));
}

static void cap_and_state_size(void **unused)
{
    struct sl_limit l;
    const char *why = NULL;

    (void)unused;
    limit(&l, SL_LOG_CAP_DEFAULT, 10);
    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
    assert_int_equal(sl_algo_state_size(&l), 8 + 8 * (size_t)SL_LOG_CAP_DEFAULT);
    limit(&l, SL_LOG_CAP_DEFAULT + 1, 10);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(why);
    l.log_cap = SL_LOG_CAP_DEFAULT + 1;
    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
}

static void whole_at_is_newest_plus_period(void **unused)
{
    struct sl_limit l;
    struct sl_decision d;
    void *st;

    (void)unused;
    limit(&l, 3, 10);
    st = wt_state_new(&l, 0);
    assert_int_equal(sl__algo_sliding_log.whole_at(st, &l), INT64_MIN);
    sl_algo_decide(st, &l, 4, 1, &d);
    sl_algo_decide(st, &l, 7, 1, &d);
    assert_int_equal(sl__algo_sliding_log.whole_at(st, &l), 17);
    test_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rolling_max_in_interval),
        cmocka_unit_test(rolling_blocked_actions_count),
        cmocka_unit_test(rolling_min_difference),
        cmocka_unit_test(rolling_info),
        cmocka_unit_test(plain_denials_are_not_logged),
        cmocka_unit_test(counted_huge_cost_fills_ring),
        cmocka_unit_test(requests_one_period_one_ns),
        cmocka_unit_test(cap_and_state_size),
        cmocka_unit_test(whole_at_is_newest_plus_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
