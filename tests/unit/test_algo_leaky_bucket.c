/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_leaky_bucket.c - leaky_bucket against nginx limit_req: burst=5
 * with and without nodelay, burst=12 delay=8 (all at 5 r/s), the bucket
 * leaking between requests, then peeks, a clock stepping backwards, huge
 * costs, count_rejected, validation and whole_at.
 *
 * The expected rows are nginx's: 1 + burst requests pass at one instant (a
 * new key starts with excess 0), a request's excess above `delay` waits
 * (excess - delay) / rate, and the rest are rejected. Checked against a real
 * nginx 1.22 (burst=12 delay=8 at 5r/s: 9 at once, 4 delayed by 0.2, 0.4,
 * 0.6, 0.8 s, 2 rejected; burst=5: 1 at once, 5 delayed by 0.2 .. 1.0 s, the
 * rest rejected). nginx's documentation counts "the first 8" beyond the
 * request that the rate itself admits.
 *
 * Does not: hold requests for their delay (the caller does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algo/algo.h"
#include "support/buckets_trace.h"

#define T0   INT64_C(1700000000000000000) /* an arbitrary Unix time, ns */
#define TICK BK_MS(200)                   /* 1 / rate at 5 r/s */

static struct sl_limit five_per_s(int64_t burst, int64_t delay, bool nodelay)
{
    struct sl_limit l = bk_limit(SL_ALGO_LEAKY_BUCKET, 5, BK_S(1), burst);

    l.delay = delay;
    l.nodelay = nodelay;
    sl_limit_finish(&l);
    return l;
}

/* limit_req burst=5: the first passes, 5 wait 1..5 ticks, the rest fail;
 * later the bucket has leaked and requests pass again. */
static void nginx_burst5(void **unused)
{
    struct sl_limit l = five_per_s(5, 0, false);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 5, 0, 1 * TICK, 0},
        {T0, 1, SL_DELAY, 4, 0, 2 * TICK, 1 * TICK},
        {T0, 1, SL_DELAY, 3, 0, 3 * TICK, 2 * TICK},
        {T0, 1, SL_DELAY, 2, 0, 4 * TICK, 3 * TICK},
        {T0, 1, SL_DELAY, 1, 0, 5 * TICK, 4 * TICK},
        {T0, 1, SL_DELAY, 0, 0, 6 * TICK, 5 * TICK},
        {T0, 1, SL_DENY, 0, TICK, 6 * TICK, 0},
        {T0, 1, SL_DENY, 0, TICK, 6 * TICK, 0},
        /* one tick later one slot has leaked out */
        {T0 + TICK, 1, SL_DELAY, 0, 0, 6 * TICK, 5 * TICK},
        {T0 + TICK + TICK / 2, 1, SL_DENY, 0, TICK / 2, 5 * TICK + TICK / 2, 0},
        /* fully drained 6 ticks after the last admission */
        {T0 + 7 * TICK, 1, SL_ALLOW, 5, 0, TICK, 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* limit_req burst=5 nodelay: the same admissions, none delayed. */
static void nginx_burst5_nodelay(void **unused)
{
    struct sl_limit l = five_per_s(5, 0, true);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 5, 0, 1 * TICK, 0},   {T0, 1, SL_ALLOW, 4, 0, 2 * TICK, 0},
        {T0, 1, SL_ALLOW, 3, 0, 3 * TICK, 0},   {T0, 1, SL_ALLOW, 2, 0, 4 * TICK, 0},
        {T0, 1, SL_ALLOW, 1, 0, 5 * TICK, 0},   {T0, 1, SL_ALLOW, 0, 0, 6 * TICK, 0},
        {T0, 1, SL_DENY, 0, TICK, 6 * TICK, 0}, {T0 + TICK, 1, SL_ALLOW, 0, 0, 6 * TICK, 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* limit_req burst=12 delay=8: excess 0..8 pass at once (9 requests), excess
 * 9..12 wait 1..4 ticks, the rest are rejected. */
static void nginx_burst12_delay8(void **unused)
{
    struct sl_limit l = five_per_s(12, 8, false);
    struct bk_state st;
    struct bk_row rows[15];

    for (int i = 0; i < 15; i++) {
        int64_t excess = i; /* the i-th request at one instant */
        rows[i] = (struct bk_row){T0, 1, SL_ALLOW, 12 - i, 0, (i + 1) * TICK, 0};
        if (excess > 8) {
            rows[i].verdict = SL_DELAY;
            rows[i].delay_ns = (excess - 8) * TICK;
        }
        if (excess > 12) {
            rows[i] = (struct bk_row){T0, 1, SL_DENY, 0, TICK, 13 * TICK, 0};
        }
    }
    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* Costs: a cost of c adds c requests of water; above burst + 1 never. */
static void costs_and_peeks(void **unused)
{
    struct sl_limit l = five_per_s(5, 0, true);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 0, SL_ALLOW, 6, 0, 0, 0},
        {T0, 7, SL_DENY, 6, -1, 0, 0},
        {T0, UINT64_MAX, SL_DENY, 6, -1, 0, 0},
        {T0, 6, SL_ALLOW, 0, 0, 6 * TICK, 0},
        {T0 + TICK, 0, SL_ALLOW, 1, 0, 5 * TICK, 0},
        {T0 + TICK, 2, SL_DENY, 1, TICK, 5 * TICK, 0},
    };

    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* A time before the last one recorded is treated as that time (nginx: a
 * negative elapsed time counts as 0): stepping back leaks nothing. */
static void clock_backwards_is_last_time(void **unused)
{
    struct sl_limit l = five_per_s(1, 0, true);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0 + BK_S(10), 2, SL_ALLOW, 0, 0, 2 * TICK, 0},
        {T0, 1, SL_DENY, 0, TICK, 2 * TICK, 0},
        {INT64_MIN, 0, SL_ALLOW, 0, 0, 2 * TICK, 0},
        {T0 + BK_S(10) + TICK, 1, SL_ALLOW, 0, 0, 2 * TICK, 0},
    };

    bk_init(&st, &l, T0 + BK_S(10));
    bk_run(&st, &l, rows, BK_N(rows));
}

/* count_rejected: a counted denial adds its water (past the capacity), and
 * it leaks out like an admitted request. */
static void count_rejected_adds_water(void **unused)
{
    struct sl_limit l = bk_limit(SL_ALGO_LEAKY_BUCKET, 1, BK_S(1), 1);
    struct bk_state st;
    const struct bk_row rows[] = {
        {T0, 1, SL_ALLOW, 1, 0, BK_S(1), 0},
        {T0, 1, SL_DELAY, 0, 0, BK_S(2), BK_S(1)},
        /* counted: the water (and the fields) include the denial */
        {T0 + BK_MS(500), 1, SL_DENY, 0, BK_MS(1500), BK_MS(2500), 0},
        {T0 + BK_S(1), 1, SL_DENY, 0, BK_S(2), BK_S(3), 0},
        /* without count_rejected the bucket would be empty by now */
        {T0 + BK_S(3), 1, SL_DELAY, 0, 0, BK_S(2), BK_S(1)},
    };

    l.count_rejected = true;
    bk_init(&st, &l, T0);
    bk_run(&st, &l, rows, BK_N(rows));
}

/* Huge parameters: nothing wraps; the water saturates at INT64_MAX ns. */
static void extreme_parameters(void **unused)
{
    struct sl_limit slow = bk_limit(SL_ALGO_LEAKY_BUCKET, 1, INT64_MAX, INT64_MAX);
    struct sl_limit fast = bk_limit(SL_ALGO_LEAKY_BUCKET, UINT64_MAX, 1, 0);
    struct bk_state st;
    struct sl_decision d;

    slow.nodelay = true;
    bk_init(&st, &slow, T0);
    sl_algo_decide(&st, &slow, T0, (uint64_t)INT64_MAX, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.remaining, 1);
    assert_int_equal(d.reset_ns, INT64_MAX); /* saturated */
    /* the water is kept exactly beyond INT64_MAX ns: a second one fails */
    sl_algo_decide(&st, &slow, T0 + BK_S(1), (uint64_t)INT64_MAX, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.retry_after_ns, INT64_MAX);
    sl_algo_decide(&st, &slow, T0, UINT64_MAX, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.retry_after_ns, -1);

    bk_init(&st, &fast, T0);
    sl_algo_decide(&st, &fast, T0, 1, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.reset_ns, 1);
    sl_algo_decide(&st, &fast, T0, 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(d.retry_after_ns, 1);
    sl_algo_decide(&st, &fast, T0 + 1, 1, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
}

static void whole_at_matches_reset(void **unused)
{
    struct sl_limit l = five_per_s(12, 8, false);
    struct bk_state st;
    struct sl_decision d;
    int64_t at;

    bk_init(&st, &l, T0);
    for (int i = 0; i < 11; i++)
        sl_algo_decide(&st, &l, T0 + i * BK_MS(7), 1, &d);
    at = sl__algo_leaky_bucket.whole_at(&st, &l);
    assert_int_equal(at, T0 + 10 * BK_MS(7) + d.reset_ns);
    sl_algo_decide(&st, &l, at - 1, 0, &d);
    assert_int_equal(d.reset_ns, 1);
    sl_algo_decide(&st, &l, at, 0, &d);
    assert_int_equal(d.reset_ns, 0);
    assert_int_equal(d.remaining, 13);
}

static void validation(void **unused)
{
    struct sl_limit l = five_per_s(5, 6, false);
    const char *why = NULL;

    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "delay must not exceed burst"));
    l = five_per_s(5, 2, true);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "nodelay"));
    l = five_per_s(-1, 0, false);
    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
    assert_int_equal(sl_limit_quota(&l), 1);
    assert_true(sl_algo_state_size(&l) <= SL__STATE_INLINE);
    l.warmup_ns = BK_S(1);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "warmup"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nginx_burst5),
        cmocka_unit_test(nginx_burst5_nodelay),
        cmocka_unit_test(nginx_burst12_delay8),
        cmocka_unit_test(costs_and_peeks),
        cmocka_unit_test(clock_backwards_is_last_time),
        cmocka_unit_test(count_rejected_adds_water),
        cmocka_unit_test(extreme_parameters),
        cmocka_unit_test(whole_at_matches_reset),
        cmocka_unit_test(validation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
