/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_refund.c - sl__state_refund (lib/internal/sluice_state.h), the
 * give-back a Redis Cluster check uses when another slot denied: after an
 * admitted request and its refund at the same time, every later decision
 * (random costs at random later times, peeks included) equals the one the
 * state would have given without that request, for the windows, the log
 * and the backlog algorithms, on random limits and histories. Also: a
 * refund after the window is over gives nothing back, a backlog that
 * drained in between gives back no more than the cost, and warm-up buckets
 * and concurrency refuse (state unchanged).
 *
 * Does not: test the Redis side (tests/redis_cluster/test_cluster_store.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sluice_state.h"

#define S  SL_NS_PER_S
#define MS SL_NS_PER_MS
#define T0 (INT64_C(1700000000) * S)

static uint64_t rng = 0x2545F4914F6CDD1Du;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t between(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static struct sl_limit rand_limit(enum sl_algo a)
{
    struct sl_limit l;
    const char *why = NULL;

    sl_limit_init(&l);
    l.algo = a;
    l.requests = (uint64_t)between(1, 20);
    l.period_ns = between(1, 5000) * MS;
    if (a == SL_ALGO_TOKEN_BUCKET && rnd() % 2)
        l.burst = between(1, 30);
    if (a == SL_ALGO_GCRA || a == SL_ALGO_LEAKY_BUCKET)
        l.burst = between(0, 20);
    if (a == SL_ALGO_SLIDING_LOG && rnd() % 2)
        l.min_interval_ns = between(0, 500) * MS;
    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
    sl_limit_finish(&l);
    return l;
}

/* The decisions of a copy of `st` over the same probes (time, cost). */
static void probe(const void *st, const struct sl_limit *l, size_t size, const int64_t *t,
                  const uint64_t *cost, size_t n, struct sl_decision *out)
{
    void *copy = test_malloc(size);

    memcpy(copy, st, size);
    for (size_t i = 0; i < n; i++)
        sl_algo_decide(copy, l, t[i], cost[i], &out[i]);
    test_free(copy);
}

static void assert_same(const struct sl_decision *a, const struct sl_decision *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(a[i].verdict, b[i].verdict);
        assert_int_equal(a[i].remaining, b[i].remaining);
        assert_int_equal(a[i].reset_ns, b[i].reset_ns);
        assert_int_equal(a[i].retry_after_ns, b[i].retry_after_ns);
        assert_int_equal(a[i].delay_ns, b[i].delay_ns);
    }
}

/* A random history, then at time `t` a request that is admitted and
 * refunded at once: later decisions are those without it. */
static void refund_is_undone(enum sl_algo a)
{
    for (int trace = 0; trace < 300; trace++) {
        struct sl_limit l = rand_limit(a);
        size_t size = sl_algo_state_size(&l);
        void *st = test_malloc(size), *before = test_malloc(size);
        int64_t t = T0, pt[12];
        uint64_t pc[12];
        struct sl_decision d, want[12], got[12];

        sl_algo_init(st, &l, t);
        for (int i = 0; i < 20; i++) {
            t += between(0, l.period_ns / 3);
            sl_algo_decide(st, &l, t, (uint64_t)between(0, 2), &d);
        }
        t += between(0, l.period_ns);
        memcpy(before, st, size);
        sl__state_check(st, &l, t, 1, &d);
        if (d.verdict == SL_DENY) { /* nothing recorded: nothing to refund */
            test_free(st);
            test_free(before);
            continue;
        }
        sl__state_commit(st, &l, t, 1, &d);
        assert_true(sl__state_refund(st, &l, t, 1));
        for (size_t i = 0; i < 12; i++) {
            pt[i] = t + (i == 0 ? 0 : between(0, 2 * l.period_ns));
            pc[i] = (uint64_t)between(0, 3);
        }
        probe(before, &l, size, pt, pc, 12, want);
        probe(st, &l, size, pt, pc, 12, got);
        assert_same(want, got, 12);
        test_free(st);
        test_free(before);
    }
}

static void windows_and_log(void **unused)
{
    (void)unused;
    refund_is_undone(SL_ALGO_FIXED_WINDOW);
    refund_is_undone(SL_ALGO_SLIDING_WINDOW);
    refund_is_undone(SL_ALGO_SLIDING_LOG);
}

static void backlogs(void **unused)
{
    (void)unused;
    refund_is_undone(SL_ALGO_TOKEN_BUCKET);
    refund_is_undone(SL_ALGO_GCRA);
    refund_is_undone(SL_ALGO_LEAKY_BUCKET);
}

/* Counted in one window, refunded once the next has begun: the count
 * already left with its window, nothing more is given back. */
static void window_over_gives_nothing(void **unused)
{
    struct sl_limit l;
    struct sl__fw_state st;
    struct sl_decision d;

    (void)unused;
    sl_limit_init(&l);
    l.algo = SL_ALGO_FIXED_WINDOW;
    l.requests = 5;
    l.period_ns = 10 * S;
    sl_algo_init(&st, &l, T0);
    sl_algo_decide(&st, &l, T0, 2, &d);
    sl_algo_decide(&st, &l, T0 + 10 * S, 3, &d); /* the next window */
    assert_true(sl__state_refund(&st, &l, T0, 2));
    assert_int_equal(st.count, 3);
    assert_true(sl__state_refund(&st, &l, T0 + 10 * S, 7)); /* never below 0 */
    assert_int_equal(st.count, 0);
}

/* A bucket that drained between the check and the refund: the deficit
 * goes to 0 at most, never below (no extra tokens). */
static void drained_bucket_stops_at_zero(void **unused)
{
    struct sl_limit l;
    struct sl__backlog st;
    struct sl_decision d;

    (void)unused;
    sl_limit_init(&l);
    l.algo = SL_ALGO_TOKEN_BUCKET;
    l.requests = 10;
    l.period_ns = S;
    sl_algo_init(&st, &l, T0);
    sl_algo_decide(&st, &l, T0, 3, &d);
    assert_true(sl__state_refund(&st, &l, T0, 5));
    assert_int_equal(st.lo, 0);
    assert_int_equal(st.hi, 0);
    sl__state_check(&st, &l, T0, 0, &d);
    assert_int_equal(d.remaining, 10);
}

static void warmup_and_concurrency_refuse(void **unused)
{
    struct sl_limit l;
    uint64_t st[512], copy[512];
    struct sl_decision d;

    (void)unused;
    sl_limit_init(&l);
    l.algo = SL_ALGO_TOKEN_BUCKET;
    l.requests = 2;
    l.period_ns = S;
    l.warmup_ns = 4 * S;
    sl_algo_init(st, &l, T0);
    sl_algo_decide(st, &l, T0, 1, &d);
    memcpy(copy, st, sl_algo_state_size(&l));
    assert_false(sl__state_refund(st, &l, T0, 1));
    assert_memory_equal(copy, st, sl_algo_state_size(&l));

    sl_limit_init(&l);
    l.algo = SL_ALGO_CONCURRENCY;
    l.requests = 3;
    l.lease_ns = S;
    assert_true(sl_algo_state_size(&l) <= sizeof(st));
    sl_algo_init(st, &l, T0);
    sl_algo_decide(st, &l, T0, 1, &d);
    memcpy(copy, st, sl_algo_state_size(&l));
    assert_false(sl__state_refund(st, &l, T0, 1));
    assert_memory_equal(copy, st, sl_algo_state_size(&l));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(windows_and_log),
        cmocka_unit_test(backlogs),
        cmocka_unit_test(window_over_gives_nothing),
        cmocka_unit_test(drained_bucket_stops_at_zero),
        cmocka_unit_test(warmup_and_concurrency_refuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
