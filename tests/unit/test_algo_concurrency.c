/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_concurrency.c - reference traces for concurrency (nginx
 * limit_conn, Stripe's concurrent request limiter): acquire, release,
 * expiry of unreleased leases, waits estimated from the hold times seen
 * (bounded by the lease's expiry), lease ids,
 * peeks, backward clock steps, huge costs, validation.
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

static void limit(struct sl_limit *l, uint64_t max_in_flight, int64_t lease_ns)
{
    sl_limit_init(l);
    l->algo = SL_ALGO_CONCURRENCY;
    l->requests = max_in_flight;
    l->lease_ns = lease_ns;
}

/* Two in flight, leases of 10 s. */
static void acquire_release_expire(void **unused)
{
    struct sl_limit l;
    struct sl_decision d;
    uint64_t a, b, c;
    void *st;

    (void)unused;
    limit(&l, 2, 10 * S);
    st = wt_state_new(&l, 0);
    sl_algo_decide(st, &l, 0, 1, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.remaining, 1);
    assert_int_equal(d.reset_ns, 10 * S);
    a = d.lease;
    sl_algo_decide(st, &l, 1 * S, 1, &d);
    assert_int_equal(d.remaining, 0);
    b = d.lease;
    assert_true(a != 0 && b != 0 && a != b);

    const struct wt_row full[] = {
        {2 * S, 1, SL_DENY, 0, 8 * S, 9 * S}, /* a expires at 10 s */
        {2 * S, 0, SL_ALLOW, 0, 0, 9 * S},
        {2 * S, 3, SL_DENY, 0, -1, 9 * S},
    };
    wt_run(st, &l, full, WT_N(full));

    assert_int_equal(sl_algo_release(st, &l, 3 * S, a), SL_OK);
    assert_int_equal(sl_algo_release(st, &l, 3 * S, a), SL_ENOENT);
    assert_int_equal(sl_algo_release(st, &l, 3 * S, 0), SL_ENOENT);
    const struct wt_row after_release[] = {
        /* a was held 3 s: b (taken at 1 s, expires at 11 s) is expected
         * to end at 4 s, not at its expiry */
        {3 * S, 2, SL_DENY, 1, 1 * S, 8 * S},
        {1 * S, 0, SL_ALLOW, 1, 0, 8 * S}, /* backward step: seen as 3 s */
    };
    wt_run(st, &l, after_release, WT_N(after_release));
    sl_algo_decide(st, &l, 3 * S, 1, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    c = d.lease;
    assert_true(c != 0 && c != a && c != b);

    /* b expired unreleased at 11 s: its slot is free and it cannot be
     * released any more; c (until 13 s) is still held. */
    const struct wt_row expired[] = {
        {12 * S, 0, SL_ALLOW, 1, 0, 1 * S},
        {13 * S, 0, SL_ALLOW, 2, 0, 0},
    };
    assert_int_equal(sl_algo_release(st, &l, 11 * S, b), SL_ENOENT);
    wt_run(st, &l, expired, WT_N(expired));
    assert_int_equal(sl_algo_release(st, &l, 13 * S, c), SL_ENOENT);
    test_free(st);
}

/* A cost takes that many slots under one lease, freed together; the wait
 * for a larger cost runs until enough leases have expired. */
static void cost_takes_slots_under_one_lease(void **unused)
{
    struct sl_limit l;
    struct sl_decision d;
    uint64_t big;
    void *st;

    (void)unused;
    limit(&l, 5, 100);
    st = wt_state_new(&l, 1000);
    sl_algo_decide(st, &l, 1000, 3, &d);
    big = d.lease;
    assert_int_equal(d.remaining, 2);
    sl_algo_decide(st, &l, 1010, 1, &d);
    sl_algo_decide(st, &l, 1020, 1, &d);
    assert_int_equal(d.remaining, 0);
    const struct wt_row rows[] = {
        {1030, 1, SL_DENY, 0, 70, 90}, /* the 3 expire at 1100 */
        {1030, 4, SL_DENY, 0, 80, 90}, /* 3 + the one of 1010, at 1110 */
        {1030, 5, SL_DENY, 0, 90, 90}, /* everything, at 1120 */
        {1030, UINT64_MAX, SL_DENY, 0, -1, 90},
    };
    wt_run(st, &l, rows, WT_N(rows));
    assert_int_equal(sl_algo_release(st, &l, 1030, big), SL_OK);
    const struct wt_row freed[] = {{1030, 3, SL_ALLOW, 0, 0, 100}};
    wt_run(st, &l, freed, WT_N(freed));
    test_free(st);
}

/* A denied acquisition takes nothing, even with count_rejected. */
static void denials_take_nothing(void **unused)
{
    struct sl_limit l;
    struct sl_decision d;
    void *st;

    (void)unused;
    limit(&l, 1, 10);
    l.count_rejected = true;
    st = wt_state_new(&l, 0);
    sl_algo_decide(st, &l, 0, 1, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    const struct wt_row rows[] = {
        {5, 1, SL_DENY, 0, 5, 5},
        {5, 1, SL_DENY, 0, 5, 5},
        {10, 1, SL_ALLOW, 0, 0, 10},
    };
    wt_run(st, &l, rows, WT_N(rows));
    test_free(st);
}

/* Times near INT64_MAX: a lease's expiry saturates, nothing wraps. */
static void lease_near_int64_max(void **unused)
{
    struct sl_limit l;
    void *st;

    (void)unused;
    limit(&l, 1, INT64_MAX);
    st = wt_state_new(&l, INT64_MAX - 10);
    const struct wt_row rows[] = {
        {INT64_MAX - 10, 1, SL_ALLOW, 0, 0, 10},
        {INT64_MAX - 1, 1, SL_DENY, 0, 1, 1},
        {INT64_MAX, 1, SL_ALLOW, 0, 0, 0}, /* the lease ended at INT64_MAX */
    };
    wt_run(st, &l, rows, WT_N(rows));
    assert_int_equal(sl__algo_concurrency.whole_at(st, &l), INT64_MAX);
    test_free(st);
}

/* A denial's retry follows the hold times of released leases (a moving
 * average, weight 1/4), at least 1 s, never beyond the lease's expiry;
 * with none released yet it is the expiry. */
static void retry_follows_the_hold_times(void **unused)
{
    struct sl_limit l;
    struct sl_decision d;
    uint64_t a, b;
    void *st;

    (void)unused;
    limit(&l, 2, 60 * S);
    st = wt_state_new(&l, 0);
    sl_algo_decide(st, &l, 0, 1, &d);
    a = d.lease;
    sl_algo_decide(st, &l, 0, 1, &d);
    b = d.lease;
    const struct wt_row none_seen[] = {{1 * S, 1, SL_DENY, 0, 59 * S, 59 * S}};
    wt_run(st, &l, none_seen, WT_N(none_seen));
    assert_int_equal(sl_algo_release(st, &l, 2 * S, a), SL_OK); /* held 2 s */
    sl_algo_decide(st, &l, 2 * S, 1, &d);
    const struct wt_row one_seen[] = {
        /* b, taken at 0, is already held longer than 2 s: one more 2 s */
        {2 * S, 1, SL_DENY, 0, 2 * S, 60 * S},
    };
    wt_run(st, &l, one_seen, WT_N(one_seen));
    assert_int_equal(sl_algo_release(st, &l, 3 * S, b), SL_OK); /* held 3 s: 2.25 s */
    sl_algo_decide(st, &l, 3 * S, 1, &d);
    const struct wt_row two_seen[] = {
        /* the lease of 2 s is expected to end at 4.25 s */
        {3 * S, 1, SL_DENY, 0, 1250 * S / 1000, 60 * S},
        /* 0.75 s away: at least 1 s */
        {3500 * S / 1000, 1, SL_DENY, 0, 1 * S, 59500 * S / 1000},
        /* its expiry 0.5 s away bounds the estimate */
        {61500 * S / 1000, 1, SL_DENY, 0, S / 2, 1500 * S / 1000},
    };
    wt_run(st, &l, two_seen, WT_N(two_seen));
    test_free(st);
}

static void validation_and_state_size(void **unused)
{
    struct sl_limit l;
    const char *why = NULL;

    (void)unused;
    limit(&l, 3, 0);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(why);
    limit(&l, 10001, S);
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    limit(&l, 10000, S); /* no period needed */
    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
    assert_true(sl_algo_state_size(&l) <= 32 + 24 * (size_t)10000);
    assert_int_equal(sl_algo_state_size(&l) % 8, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(acquire_release_expire),
        cmocka_unit_test(cost_takes_slots_under_one_lease),
        cmocka_unit_test(denials_take_nothing),
        cmocka_unit_test(lease_near_int64_max),
        cmocka_unit_test(retry_follows_the_hold_times),
        cmocka_unit_test(validation_and_state_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
