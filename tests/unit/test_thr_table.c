/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_thr_table.c - the table and the limiter under threads (also run under
 * ThreadSanitizer by `make test-sanitize`): several threads hammering one key
 * never get more than the limit admitted; multi-descriptor requests listing
 * shards in opposite orders neither deadlock nor overshoot; sweeps, stats
 * and evictions running alongside stay consistent; batches (whose index
 * prefetch reads no lock) overshoot nothing while other keys grow the index.
 *
 * It asserts counts, never timings.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"

#define T0      (INT64_C(1700000000) * SL_NS_PER_S)
#define THREADS 4
#define ROUNDS  3000
#define LIMIT   1000

struct shared {
    sl_table *t;
    sl_limiter *lim;
    struct sl_limit l, l2;
    atomic_uint allowed;
    atomic_int errors;
    atomic_int stop;
};

static void *hammer_one_key(void *arg)
{
    struct shared *sh = arg;
    struct sl_decision d;

    for (int i = 0; i < ROUNDS; i++) {
        if (sl_table_check(sh->t, "hot", 3, &sh->l, T0 + i, 1, &d) != SL_OK)
            atomic_fetch_add(&sh->errors, 1);
        else if (d.verdict != SL_DENY)
            atomic_fetch_add(&sh->allowed, 1);
    }
    return NULL;
}

/* Churns other keys (brief ones, until the table is full) and sweeps them
 * away while others hammer: removals shift entries of the hot key's shard. */
static void *churn(void *arg)
{
    struct shared *sh = arg;
    struct sl_decision d;
    struct sl_table_stats s;

    for (unsigned i = 0; !atomic_load(&sh->stop); i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "churn-%u", i);
        int rc = sl_table_check(sh->t, key, (size_t)n, &sh->l2, T0, 1, &d);
        if (rc != SL_OK && rc != SL_EFULL)
            atomic_fetch_add(&sh->errors, 1);
        if (i % 512 == 0) {
            sl_table_sweep(sh->t, T0 + 5 * SL_NS_PER_S);
            sl_table_stats(sh->t, &s);
        }
    }
    return NULL;
}

static void limit_of(struct sl_limit *l, uint64_t requests, int64_t period_ns)
{
    sl_limit_init(l);
    l->algo = SL_ALGO_FIXED_WINDOW;
    l->requests = requests;
    l->period_ns = period_ns;
    assert_int_equal(sl_limit_validate(l, NULL), SL_OK);
    sl_limit_finish(l);
}

static void run(void *(*worker)(void *), struct shared *sh, bool with_churn)
{
    pthread_t th[THREADS], ch;

    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, sh), 0);
    if (with_churn)
        assert_int_equal(pthread_create(&ch, NULL, churn, sh), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&sh->stop, 1);
    if (with_churn)
        pthread_join(ch, NULL);
}

static void test_one_key_many_threads(void **st)
{
    static struct shared sh;
    struct sl_table_config c;
    struct sl_table_stats s;

    (void)st;
    memset(&sh, 0, sizeof(sh));
    sl_table_config_init(&c);
    c.max_bytes = 1 << 20;
    c.shards = 4;
    /* Deny, not evict: evicting the hot key would legitimately restart it. */
    c.on_full = SL_ON_FULL_DENY;
    assert_int_equal(sl_table_new(&c, &sh.t), SL_OK);
    limit_of(&sh.l, LIMIT, 3600 * SL_NS_PER_S);
    limit_of(&sh.l2, 10, SL_NS_PER_S);
    run(hammer_one_key, &sh, true);
    assert_int_equal(atomic_load(&sh.errors), 0);
    assert_int_equal(atomic_load(&sh.allowed), LIMIT);
    sl_table_stats(sh.t, &s);
    assert_true(s.bytes <= c.max_bytes);
    sl_table_free(sh.t);
}

/* New keys of the hot key's own limit, forever: with a small table, every
 * one evicts another, whose debt two such threads fold into the limit's
 * summary (shared by the shards, updated by compare-and-swap) while new
 * keys are restored from it. */
static atomic_uint same_next; /* the next key of churn_same_limit */

static void *churn_same_limit(void *arg)
{
    struct shared *sh = arg;
    struct sl_decision d;

    while (!atomic_load(&sh->stop)) {
        char key[32];
        int n = snprintf(key, sizeof(key), "same-%u", atomic_fetch_add(&same_next, 1));
        if (sl_table_check(sh->t, key, (size_t)n, &sh->l, T0, 1, &d) != SL_OK)
            atomic_fetch_add(&sh->errors, 1);
    }
    return NULL;
}

/* The hot key under eviction (on_full evict, the default): whatever is
 * evicted, its debt is restored, so the limit still bounds the hot key. */
static void test_one_key_under_eviction(void **st)
{
    static struct shared sh;
    struct sl_table_config c;
    struct sl_table_stats s;
    pthread_t ch[2], th[THREADS];

    (void)st;
    memset(&sh, 0, sizeof(sh));
    sl_table_config_init(&c);
    c.max_bytes = 256 << 10;
    c.shards = 4;
    assert_int_equal(sl_table_new(&c, &sh.t), SL_OK);
    limit_of(&sh.l, LIMIT, 3600 * SL_NS_PER_S);
    /* Full before the threads start (whatever the scheduler does, keys
     * are evicted and their debts folded from here on). */
    atomic_store(&same_next, 0);
    for (unsigned k = 0;; k++) {
        struct sl_decision d;
        char key[32];
        int n = snprintf(key, sizeof(key), "fill-%u", k);
        assert_int_equal(sl_table_check(sh.t, key, (size_t)n, &sh.l, T0, 1, &d), SL_OK);
        sl_table_stats(sh.t, &s);
        if (s.summary_folds > 0)
            break;
        assert_true(k < 1000000);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&ch[i], NULL, churn_same_limit, &sh), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer_one_key, &sh), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    /* and the churn has run beside it, at least a little */
    while (atomic_load(&same_next) < 2000)
        sched_yield();
    atomic_store(&sh.stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(ch[i], NULL);
    assert_int_equal(atomic_load(&sh.errors), 0);
    assert_true(atomic_load(&sh.allowed) <= LIMIT);
    sl_table_stats(sh.t, &s);
    assert_true(s.bytes <= c.max_bytes);
    assert_true(s.summary_folds > 0);
    sl_table_free(sh.t);
}

/* Two descriptors on two keys, listed in opposite orders by alternate
 * threads: ascending lock order means no deadlock; all-or-nothing means the
 * tighter limit bounds both. */
static void *hammer_two_keys(void *arg)
{
    struct shared *sh = arg;
    struct sl_match m[2];
    struct sl_request req;
    struct sl_result res;
    static atomic_int turn;
    int flip = atomic_fetch_add(&turn, 1) & 1;

    memset(m, 0, sizeof(m));
    for (int i = 0; i < 2; i++) {
        const char *key = (i ^ flip) ? "dom|b" : "dom|a";
        m[i].key_len = strlen(key);
        memcpy(m[i].key, key, m[i].key_len);
        m[i].limits[0] = (i ^ flip) ? &sh->l2 : &sh->l;
        m[i].n_limits = 1;
    }
    memset(&req, 0, sizeof(req));
    req.hits = 1;
    for (int i = 0; i < ROUNDS; i++) {
        req.now_ns = T0 + i;
        if (sl_limiter_check_matched(sh->lim, m, 2, &req, &res) != SL_OK)
            atomic_fetch_add(&sh->errors, 1);
        else if (res.verdict != SL_DENY)
            atomic_fetch_add(&sh->allowed, 1);
    }
    return NULL;
}

static void test_limiter_many_threads(void **st)
{
    static struct shared sh;
    struct sl_limiter_config c;
    struct sl_match m;
    struct sl_request req;
    struct sl_result res;

    (void)st;
    memset(&sh, 0, sizeof(sh));
    sl_limiter_config_init(&c);
    c.table.max_bytes = 4 << 20;
    assert_int_equal(sl_limiter_new(&c, &sh.lim), SL_OK);
    limit_of(&sh.l, 5 * LIMIT, 3600 * SL_NS_PER_S);
    limit_of(&sh.l2, LIMIT, 3600 * SL_NS_PER_S);
    run(hammer_two_keys, &sh, false);
    assert_int_equal(atomic_load(&sh.errors), 0);
    assert_int_equal(atomic_load(&sh.allowed), LIMIT);
    /* The looser limit counted only the admitted requests. */
    memset(&m, 0, sizeof(m));
    m.key_len = 5;
    memcpy(m.key, "dom|a", 5);
    m.limits[0] = &sh.l;
    m.n_limits = 1;
    memset(&req, 0, sizeof(req));
    req.now_ns = T0 + ROUNDS;
    assert_int_equal(sl_limiter_check_matched(sh.lim, &m, 1, &req, &res), SL_OK);
    assert_int_equal(res.statuses[0].d.remaining, 4 * LIMIT);
    sl_limiter_free(sh.lim);
}

/* Batches of 16: every other item the hot key, the rest new keys, so that
 * the index grows (and its prefetch address changes) under the readers. */
static void *hammer_batches(void *arg)
{
    struct shared *sh = arg;
    static atomic_int next_thread;
    int me = atomic_fetch_add(&next_thread, 1);
    struct sl_table_item it[16];
    char keys[16][32];

    for (int i = 0; i < ROUNDS; i += 8) {
        for (int j = 0; j < 16; j++) {
            int n = snprintf(keys[j], sizeof(keys[j]), "new-%d-%d", me, i + j);
            bool hot = (j & 1) == 0;
            it[j] = (struct sl_table_item){hot ? "hot" : keys[j],
                                           hot ? 3 : (size_t)n,
                                           hot ? &sh->l : &sh->l2,
                                           T0 + i,
                                           1,
                                           {0},
                                           0};
        }
        assert_int_equal(sl_table_check_batch(sh->t, it, 16), SL_OK);
        for (int j = 0; j < 16; j++) {
            if (it[j].rc != SL_OK)
                atomic_fetch_add(&sh->errors, 1);
            else if ((j & 1) == 0 && it[j].decision.verdict != SL_DENY)
                atomic_fetch_add(&sh->allowed, 1);
        }
    }
    return NULL;
}

static void test_batches_many_threads(void **st)
{
    static struct shared sh;
    struct sl_table_config c;

    (void)st;
    memset(&sh, 0, sizeof(sh));
    sl_table_config_init(&c);
    c.max_bytes = 16 << 20; /* room for every new key: none is refused */
    c.shards = 4;
    c.on_full = SL_ON_FULL_DENY;
    assert_int_equal(sl_table_new(&c, &sh.t), SL_OK);
    limit_of(&sh.l, LIMIT, 3600 * SL_NS_PER_S);
    limit_of(&sh.l2, 10, SL_NS_PER_S);
    run(hammer_batches, &sh, false);
    assert_int_equal(atomic_load(&sh.errors), 0);
    /* THREADS x ROUNDS hot checks, far above the limit: exactly LIMIT. */
    assert_int_equal(atomic_load(&sh.allowed), LIMIT);
    sl_table_free(sh.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_key_many_threads),
        cmocka_unit_test(test_one_key_under_eviction),
        cmocka_unit_test(test_limiter_many_threads),
        cmocka_unit_test(test_batches_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
