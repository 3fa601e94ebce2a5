/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_table_evict.c - what eviction takes when the table is full: a flood
 * of new keys, far more than the table holds, never evicts a client that is
 * being denied (through sl_table_check and through the limiter), the cap
 * holds throughout, and the count of denying entries evicted moves only
 * when every entry was denying. Also: the algorithms' "out of quota" answer
 * agrees with the remaining their decisions report.
 *
 * The rest of eviction (drained first, CLOCK, on_full deny) is in
 * test_table.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "algo/algo.h"
#include "sluice.h"

/* The algorithms a bare sl_limit can be (adaptive_concurrency is the limit
 * of a struct sl_adaptive_limit: test_algo_adaptive_concurrency.c). */
#define SL_ALGO_BARE_N SL_ALGO_ADAPTIVE_CONCURRENCY

#define T0     (INT64_C(1700000000) * SL_NS_PER_S)
#define HOUR   (3600 * SL_NS_PER_S)
#define CAP    ((size_t)256 << 10)
#define SHARDS 4u

/* `requests` per hour; the bucket algorithms hold as many at once (their
 * default burst would leave a fresh key out of quota after one request). */
static void limit_of(struct sl_limit *l, enum sl_algo algo, uint64_t requests)
{
    sl_limit_init(l);
    l->algo = algo;
    l->requests = requests;
    l->period_ns = HOUR;
    if (algo == SL_ALGO_GCRA || algo == SL_ALGO_LEAKY_BUCKET)
        l->burst = (int64_t)requests - 1;
    if (algo == SL_ALGO_CONCURRENCY)
        l->lease_ns = HOUR;
    assert_int_equal(sl_limit_validate(l, NULL), SL_OK);
    sl_limit_finish(l);
}

static sl_table *small_table(void)
{
    struct sl_table_config c;
    sl_table *t;

    sl_table_config_init(&c);
    c.max_bytes = CAP;
    c.shards = SHARDS;
    memset(c.secret, 9, sizeof(c.secret));
    assert_int_equal(sl_table_new(&c, &t), SL_OK);
    return t;
}

static int check_key(sl_table *t, const char *prefix, unsigned k, const struct sl_limit *l,
                     struct sl_decision *d)
{
    char key[48];
    int n = snprintf(key, sizeof(key), "%s-%u", prefix, k);
    return sl_table_check(t, key, (size_t)n, l, T0, 1, d);
}

/* Check key `k` until it is denied. */
static void block(sl_table *t, unsigned k, const struct sl_limit *l)
{
    struct sl_decision d;

    for (int i = 0; i < 10; i++) {
        assert_int_equal(check_key(t, "blocked", k, l, &d), SL_OK);
        if (d.verdict == SL_DENY)
            return;
    }
    fail_msg("key %u never denied", k);
}

/* Fresh keys until the table has evicted `evictions` entries, asserting
 * the cap after every one. Returns how many keys were sent. */
static unsigned flood(sl_table *t, const struct sl_limit *l, uint64_t evictions)
{
    struct sl_table_stats s;
    struct sl_decision d;
    unsigned k = 0;

    do {
        assert_int_equal(check_key(t, "flood", k++, l, &d), SL_OK);
        sl_table_stats(t, &s);
        assert_true(s.bytes <= CAP);
    } while (s.evictions < evictions);
    return k;
}

/* Ten blocked clients, then fresh keys (each allowed, so not out of quota)
 * until the table has evicted twenty times what it holds: every blocked
 * client is still denied. For every algorithm but concurrency, whose held
 * leases are never evicted (test_table_debt.c), inline and out-of-line
 * states. Denying entries may go once the flood's own keys, restored from
 * the summary, are denying too: what they owed is restored on return. */
static void test_flood_keeps_blocked_clients(void **st)
{
    (void)st;
    for (int a = 0; a < SL_ALGO_BARE_N; a++) {
        struct sl_limit l;
        struct sl_table_stats s;
        struct sl_decision d;
        sl_table *t;

        if (a == SL_ALGO_CONCURRENCY)
            continue;
        t = small_table();
        limit_of(&l, (enum sl_algo)a, 3);
        for (unsigned k = 0; k < 10; k++)
            block(t, k, &l);
        flood(t, &l, 1); /* fills it */
        sl_table_stats(t, &s);
        unsigned sent = flood(t, &l, 20 * s.entries);
        assert_true(sent > 20 * s.entries);
        for (unsigned k = 0; k < 10; k++) {
            assert_int_equal(check_key(t, "blocked", k, &l, &d), SL_OK);
            assert_int_equal(d.verdict, SL_DENY);
        }
        sl_table_free(t);
    }
}

/* When every entry is out of quota (one request per hour: each key is
 * denying after its first), new keys still find room, by evicting denying
 * entries, and each such eviction is counted. */
static void test_all_denying_evictions_counted(void **st)
{
    struct sl_limit l;
    struct sl_table_stats s;
    sl_table *t = small_table();

    (void)st;
    limit_of(&l, SL_ALGO_GCRA, 1); /* burst 0: one request, then out of quota */
    flood(t, &l, 1);
    sl_table_stats(t, &s);
    uint64_t held = s.entries;
    flood(t, &l, 3 * held);
    sl_table_stats(t, &s);
    assert_true(s.evictions >= 3 * held);
    assert_int_equal(s.evictions_denying, s.evictions);
    sl_table_free(t);
}

/* A mixed table: half the keys are out of quota. New keys take the others'
 * places; the denying half stays and the count stays at 0 until only
 * denying entries are left to evict. */
static void test_denying_evicted_last(void **st)
{
    struct sl_limit one, many;
    struct sl_table_stats s;
    struct sl_decision d;
    sl_table *t = small_table();
    unsigned n;

    (void)st;
    limit_of(&one, SL_ALGO_FIXED_WINDOW, 1);
    limit_of(&many, SL_ALGO_FIXED_WINDOW, 100);
    for (n = 0;; n++) { /* alternate until the table first evicts */
        assert_int_equal(
            check_key(t, (n & 1) ? "allowing" : "blocked", n, (n & 1) ? &many : &one, &d), SL_OK);
        sl_table_stats(t, &s);
        if (s.evictions > 0)
            break;
    }
    assert_int_equal(s.evictions_denying, 0);
    /* Half as many new one-request keys as there were allowing entries:
     * allowing ones make room (the new keys become denying themselves). */
    for (unsigned k = 0; k < n / 4; k++)
        assert_int_equal(check_key(t, "new", k, &one, &d), SL_OK);
    sl_table_stats(t, &s);
    assert_int_equal(s.evictions_denying, 0);
    for (unsigned k = 0; k < n; k += 2) {
        assert_int_equal(check_key(t, "blocked", k, &one, &d), SL_OK);
        assert_int_equal(d.verdict, SL_DENY);
    }
    sl_table_free(t);
}

/* The same flood through the limiter (its own path: pinned entries, put
 * after the decision). */
static void test_flood_through_limiter(void **st)
{
    struct sl_limiter_config c;
    struct sl_limit l;
    struct sl_match m;
    struct sl_request req;
    struct sl_result res;
    struct sl_table_stats s;
    sl_limiter *lim;

    (void)st;
    sl_limiter_config_init(&c);
    c.table.max_bytes = CAP;
    c.table.shards = SHARDS;
    memset(c.table.secret, 3, sizeof(c.table.secret));
    assert_int_equal(sl_limiter_new(&c, &lim), SL_OK);
    limit_of(&l, SL_ALGO_TOKEN_BUCKET, 5);
    memset(&req, 0, sizeof(req));
    req.hits = 1;
    req.now_ns = T0;
    memset(&m, 0, sizeof(m));
    m.limits[m.n_limits++] = &l;
    m.key_len = (size_t)snprintf(m.key, sizeof(m.key), "blocked");
    for (int i = 0; i < 6; i++)
        assert_int_equal(sl_limiter_check_matched(lim, &m, 1, &req, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    for (unsigned k = 0;; k++) {
        m.key_len = (size_t)snprintf(m.key, sizeof(m.key), "flood-%u", k);
        assert_int_equal(sl_limiter_check_matched(lim, &m, 1, &req, &res), SL_OK);
        sl_table_stats(sl_limiter_table(lim), &s);
        assert_true(s.bytes <= CAP);
        if (s.evictions > 20 * s.entries)
            break;
    }
    m.key_len = (size_t)snprintf(m.key, sizeof(m.key), "blocked");
    assert_int_equal(sl_limiter_check_matched(lim, &m, 1, &req, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    sl_limiter_free(lim);
}

/* ops->denying() is "a cost-1 check would find remaining 0", at every
 * step of a trace with admissions, denials and time passing, for every
 * algorithm (the table marks entries from either). */
static void test_denying_matches_remaining(void **st)
{
    static const int64_t dt_ms[] = {0, 0, 0, 0, 1, 100, 700, 0, 0, 1500, 20, 0, 4000, 0, 0, 0};
    uint64_t state[512];

    (void)st;
    for (int a = 0; a < SL_ALGO_BARE_N; a++) {
        const struct sl__algo_ops *ops = sl__algo_ops((enum sl_algo)a);
        struct sl_limit l;
        struct sl_decision d, peek;
        int64_t now = T0;

        sl_limit_init(&l);
        l.algo = (enum sl_algo)a;
        l.requests = 3;
        l.period_ns = 2 * SL_NS_PER_S;
        if (a == SL_ALGO_CONCURRENCY)
            l.lease_ns = SL_NS_PER_S;
        assert_int_equal(sl_limit_validate(&l, NULL), SL_OK);
        sl_limit_finish(&l);
        assert_true(sl_algo_state_size(&l) <= sizeof(state));
        sl_algo_init(state, &l, now);
        assert_false(ops->denying(state, &l, now));
        for (size_t i = 0; i < sizeof(dt_ms) / sizeof(dt_ms[0]); i++) {
            now += dt_ms[i] * SL_NS_PER_MS;
            sl_algo_decide(state, &l, now, 1, &d);
            assert_int_equal(ops->denying(state, &l, now), d.remaining == 0);
            ops->check(state, &l, now, 0, &peek);
            assert_int_equal(ops->denying(state, &l, now), peek.remaining == 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flood_keeps_blocked_clients),
        cmocka_unit_test(test_all_denying_evictions_counted),
        cmocka_unit_test(test_denying_evicted_last),
        cmocka_unit_test(test_flood_through_limiter),
        cmocka_unit_test(test_denying_matches_remaining),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
