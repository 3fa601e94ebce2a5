/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_table_batch.c - sl_table_check_batch gives exactly what the same
 * checks through sl_table_check give, in the same order: two tables with
 * the same secret, one fed by batches, one by single calls, compared item by
 * item (decisions and results), over repeated keys, several algorithms,
 * peeks, errors inside a batch, batches that grow the index and evict, and
 * batch sizes that do not divide the internal group.
 *
 * Speed is bench/'s business; nothing here times anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"

/* The algorithms a bare sl_limit can be (adaptive_concurrency is the limit
 * of a struct sl_adaptive_limit: test_algo_adaptive_concurrency.c). */
#define SL_ALGO_BARE_N SL_ALGO_ADAPTIVE_CONCURRENCY

#define T0 (INT64_C(1700000000) * SL_NS_PER_S)
#define N  53 /* items per batch: not a multiple of 16 */

static sl_table *table_of(size_t max_bytes, unsigned shards)
{
    struct sl_table_config c;
    sl_table *t;

    sl_table_config_init(&c);
    c.max_bytes = max_bytes;
    c.shards = shards;
    memset(c.secret, 7, sizeof(c.secret));
    assert_int_equal(sl_table_new(&c, &t), SL_OK);
    return t;
}

static void limit_of(struct sl_limit *l, enum sl_algo algo, uint64_t requests)
{
    sl_limit_init(l);
    l->algo = algo;
    l->requests = requests;
    l->period_ns = SL_NS_PER_S;
    if (algo == SL_ALGO_CONCURRENCY)
        l->lease_ns = SL_NS_PER_S;
    assert_int_equal(sl_limit_validate(l, NULL), SL_OK);
    sl_limit_finish(l);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Feed `rounds` batches of N random items (keys among `nkeys`, limits among
 * `lims`, now advancing by up to `step_ns` an item, costs 0..3) to `a` as batches and to `b` one by
 * one; every item must agree. Returns how many items were denied (so that a
 * caller can check the run really reached the limits). */
static unsigned compare(sl_table *a, sl_table *b, const struct sl_limit *lims, int nlims,
                        unsigned nkeys, int rounds, int64_t step_ns, uint64_t seed)
{
    struct sl_table_item it[N];
    char keys[N][24];
    int64_t now = T0;
    unsigned denied = 0;

    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < N; i++) {
            uint64_t x = rnd(&seed);
            int n = snprintf(keys[i], sizeof(keys[i]), "k%u", (unsigned)(x % nkeys));
            now += (int64_t)(x >> 40) % step_ns;
            it[i] = (struct sl_table_item){
                keys[i], (size_t)n, &lims[(x >> 20) % (unsigned)nlims], now, (x >> 8) % 4,
                {0},     12345};
        }
        assert_int_equal(sl_table_check_batch(a, it, N), SL_OK);
        for (int i = 0; i < N; i++) {
            struct sl_decision d;
            memset(&d, 0, sizeof(d));
            int rc = sl_table_check(b, it[i].key, it[i].key_len, it[i].limit, it[i].now_ns,
                                    it[i].cost, &d);
            assert_int_equal(it[i].rc, rc);
            if (rc != SL_OK)
                continue;
            assert_int_equal(it[i].decision.verdict, d.verdict);
            assert_int_equal(it[i].decision.remaining, d.remaining);
            assert_int_equal(it[i].decision.reset_ns, d.reset_ns);
            assert_int_equal(it[i].decision.retry_after_ns, d.retry_after_ns);
            assert_int_equal(it[i].decision.delay_ns, d.delay_ns);
            assert_int_equal(it[i].decision.lease, d.lease);
            denied += d.verdict == SL_DENY;
        }
    }
    return denied;
}

static void test_batch_equals_single_calls(void **st)
{
    struct sl_limit lims[SL_ALGO_BARE_N];

    (void)st;
    for (int a = 0; a < SL_ALGO_BARE_N; a++)
        limit_of(&lims[a], (enum sl_algo)a, 20);
    for (int a = 0; a < SL_ALGO_BARE_N; a++) {
        sl_table *x = table_of(8 << 20, 8), *y = table_of(8 << 20, 8);
        /* Few keys: a key often appears several times in one batch. */
        assert_true(compare(x, y, &lims[a], 1, 40, 200, 5 * SL_NS_PER_MS, 0x1234 + (uint64_t)a) >
                    0);
        sl_table_free(x);
        sl_table_free(y);
    }
}

/* Mixed algorithms on the same keys (an entry of another algorithm starts
 * over) and many new keys per batch (the index doubles mid-batch). */
static void test_batch_mixed_and_growing(void **st)
{
    struct sl_limit lims[SL_ALGO_BARE_N];
    sl_table *x = table_of(32 << 20, 4), *y = table_of(32 << 20, 4);
    struct sl_table_stats s;

    (void)st;
    for (int a = 0; a < SL_ALGO_BARE_N; a++)
        limit_of(&lims[a], (enum sl_algo)a, 5);
    compare(x, y, lims, SL_ALGO_BARE_N, 50, 100, 5 * SL_NS_PER_MS, 99);
    compare(x, y, lims, 2, 100000, 300, 1000, 7);
    sl_table_stats(x, &s);
    assert_true(s.entries > 10000);
    sl_table_free(x);
    sl_table_free(y);
}

/* A small table: batches that evict agree with single calls too. */
static void test_batch_under_eviction(void **st)
{
    struct sl_limit l;
    sl_table *x = table_of(64 << 10, 2), *y = table_of(64 << 10, 2);
    struct sl_table_stats s;

    (void)st;
    limit_of(&l, SL_ALGO_GCRA, 3);
    compare(x, y, &l, 1, 20000, 100, 1000, 5);
    sl_table_stats(x, &s);
    assert_true(s.evictions > 0);
    assert_true(s.bytes <= 64 << 10);
    sl_table_free(x);
    sl_table_free(y);
}

/* Bad items get their own error; their neighbours are still decided. */
static void test_batch_errors(void **st)
{
    static char longkey[SL_KEY_MAX + 1];
    struct sl_limit l, bad;
    sl_table *t = table_of(1 << 20, 4);
    struct sl_table_item it[4];

    (void)st;
    limit_of(&l, SL_ALGO_FIXED_WINDOW, 1);
    bad = l;
    bad.algo = (enum sl_algo)SL_ALGO_COUNT;
    it[0] = (struct sl_table_item){"a", 1, &l, T0, 1, {0}, 1};
    it[1] = (struct sl_table_item){longkey, sizeof(longkey), &l, T0, 1, {0}, 1};
    it[2] = (struct sl_table_item){"a", 1, NULL, T0, 1, {0}, 1};
    it[3] = (struct sl_table_item){"a", 1, &bad, T0, 1, {0}, 1};
    assert_int_equal(sl_table_check_batch(t, it, 4), SL_OK);
    assert_int_equal(it[0].rc, SL_OK);
    assert_int_equal(it[0].decision.verdict, SL_ALLOW);
    assert_int_equal(it[1].rc, SL_ETOOBIG);
    assert_int_equal(it[2].rc, SL_EINVAL);
    assert_int_equal(it[3].rc, SL_EINVAL);
    /* The same key again in a later batch: the limit of 1 is spent. */
    it[0].now_ns = T0 + 1;
    assert_int_equal(sl_table_check_batch(t, it, 1), SL_OK);
    assert_int_equal(it[0].decision.verdict, SL_DENY);
    assert_int_equal(sl_table_check_batch(NULL, it, 1), SL_EINVAL);
    assert_int_equal(sl_table_check_batch(t, NULL, 1), SL_EINVAL);
    assert_int_equal(sl_table_check_batch(t, NULL, 0), SL_OK);
    sl_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_equals_single_calls),
        cmocka_unit_test(test_batch_mixed_and_growing),
        cmocka_unit_test(test_batch_under_eviction),
        cmocka_unit_test(test_batch_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
