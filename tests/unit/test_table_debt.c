/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_table_debt.c - eviction never forgives: what an evicted entry owes is
 * kept in the table's summary and restored when its key returns.
 *
 * - A property test, for every algorithm and its variants: random traces of
 *   a few keys through a small table that a stream of other keys keeps
 *   evicting them from, beside an exact reference (the bare algorithm on a
 *   private state per key that is never evicted, recording what the table
 *   admitted). No decision of the table is ever more permissive than the
 *   reference's (verdict, delay, remaining).
 * - Blocked clients stay blocked through a flood, of another limit or of
 *   their own; a flood in another limit never touches this limit's new
 *   clients; in the flooded limit, the share of new clients that start
 *   restricted stays under the sizing formula (docs/security.md).
 * - Held concurrency leases are never evicted: a table full of them refuses
 *   new keys (SL_EFULL) until they are released.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "algo/algo.h"
#include "sluice.h"

#define T0   (INT64_C(1700000000) * SL_NS_PER_S)
#define SEC  SL_NS_PER_S
#define HOUR (3600 * SL_NS_PER_S)

/* ------------------------------------------------------------- helpers */

struct variant {
    const char *name;
    enum sl_algo algo;
    uint64_t requests;
    int64_t period_ns;
    int64_t burst;
    int64_t delay;
    int64_t warmup_ns;
    int64_t min_interval_ns;
    uint16_t buckets;
};

static const struct variant variants[] = {
    {"token_bucket", SL_ALGO_TOKEN_BUCKET, 6, 12 * SEC, -1, 0, 0, 0, 0},
    {"token_bucket warm-up", SL_ALGO_TOKEN_BUCKET, 6, 12 * SEC, -1, 0, 30 * SEC, 0, 0},
    {"gcra", SL_ALGO_GCRA, 6, 12 * SEC, 3, 0, 0, 0, 0},
    {"leaky_bucket policing", SL_ALGO_LEAKY_BUCKET, 6, 12 * SEC, 3, 0, 0, 0, 0},
    {"leaky_bucket shaping", SL_ALGO_LEAKY_BUCKET, 6, 12 * SEC, 5, 2, 0, 0, 0},
    {"fixed_window", SL_ALGO_FIXED_WINDOW, 6, 12 * SEC, -1, 0, 0, 0, 0},
    {"sliding_window", SL_ALGO_SLIDING_WINDOW, 6, 12 * SEC, -1, 0, 0, 0, 0},
    {"sliding_window 4 buckets", SL_ALGO_SLIDING_WINDOW, 6, 12 * SEC, -1, 0, 0, 0, 4},
    {"sliding_log", SL_ALGO_SLIDING_LOG, 6, 12 * SEC, -1, 0, 0, 0, 0},
    {"sliding_log min_interval", SL_ALGO_SLIDING_LOG, 6, 12 * SEC, -1, 0, 0, SEC / 2, 0},
    {"concurrency", SL_ALGO_CONCURRENCY, 3, SEC, -1, 0, 0, 0, 0},
};

static void limit_from(struct sl_limit *l, const struct variant *v)
{
    const char *why = NULL;

    sl_limit_init(l);
    l->algo = v->algo;
    l->requests = v->requests;
    l->period_ns = v->period_ns;
    l->burst = v->burst;
    l->delay = v->delay;
    l->warmup_ns = v->warmup_ns;
    l->min_interval_ns = v->min_interval_ns;
    l->buckets = v->buckets;
    if (v->algo == SL_ALGO_CONCURRENCY)
        l->lease_ns = 20 * SEC;
    if (sl_limit_validate(l, &why) != SL_OK)
        fail_msg("%s: %s", v->name, why);
    sl_limit_finish(l);
}

static void simple_limit(struct sl_limit *l, enum sl_algo algo, uint64_t requests, int64_t period)
{
    struct variant v = {"simple", algo, requests, period, -1, 0, 0, 0, 0};

    limit_from(l, &v);
}

static sl_table *table_of(size_t max_bytes, unsigned shards)
{
    struct sl_table_config c;
    sl_table *t;

    sl_table_config_init(&c);
    c.max_bytes = max_bytes;
    c.shards = shards;
    memset(c.secret, 5, sizeof(c.secret));
    assert_int_equal(sl_table_new(&c, &t), SL_OK);
    return t;
}

static int check(sl_table *t, const char *prefix, unsigned k, const struct sl_limit *l, int64_t now,
                 uint64_t cost, struct sl_decision *d)
{
    char key[48];
    int n = snprintf(key, sizeof(key), "%s-%u", prefix, k);

    return sl_table_check(t, key, (size_t)n, l, now, cost, d);
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* allow > delay > deny: how much a decision lets through. */
static int rank(const struct sl_decision *d, int rc)
{
    if (rc != SL_OK || d->verdict == SL_DENY)
        return 0;
    return d->verdict == SL_DELAY ? 1 : 2;
}

/* ------------------------------------------------------- property test */

#define KEYS  12
#define STEPS 2500

struct ref {
    uint64_t st[64];
};

/* One variant: STEPS requests on KEYS keys, and after each a random number
 * of other keys of the same limit, so that the table (one shard of 32 KiB)
 * keeps evicting the tracked keys. */
static void trace(const struct variant *v, uint64_t seed)
{
    const struct sl__algo_ops *ops = sl__algo_ops(v->algo);
    struct ref ref[KEYS];
    struct sl_limit l;
    struct sl_table_stats s;
    sl_table *t = table_of(32 << 10, 1);
    int64_t now = T0;
    unsigned filler = 0;

    limit_from(&l, v);
    assert_true(ops->state_size(&l) <= sizeof(ref[0].st));
    for (int k = 0; k < KEYS; k++)
        ops->init(ref[k].st, &l, now);
    for (int i = 0; i < STEPS; i++) {
        unsigned k = (unsigned)(xorshift(&seed) % KEYS);
        uint64_t cost = 1 + xorshift(&seed) % 2;
        uint64_t r = xorshift(&seed) % 16;
        struct sl_decision dt, dr;
        int rc;

        /* Time only moves forward here: a state treats an earlier `now` as
         * its own last time, so two states with different histories (the
         * reference's, and a restored one whose last time is its restore)
         * read a backward step differently. test_peek_sees_the_debt steps
         * back over a restored key. */
        if (r < 6)
            now += (int64_t)(xorshift(&seed) % (uint64_t)(v->period_ns / 4));
        ops->check(ref[k].st, &l, now, cost, &dr);
        rc = check(t, "tracked", k, &l, now, cost, &dt);
        assert_true(rc == SL_OK || (rc == SL_EFULL && v->algo == SL_ALGO_CONCURRENCY));
        if (rank(&dt, rc) > rank(&dr, SL_OK) ||
            (rank(&dt, rc) == 1 && rank(&dr, SL_OK) == 1 && dt.delay_ns < dr.delay_ns) ||
            (rank(&dt, rc) > 0 && dt.remaining > dr.remaining))
            fail_msg("%s, step %d, key %u, cost %llu: the table said %s (remaining %lld, "
                     "delay %lld) where the exact answer is %s (remaining %lld, delay %lld)",
                     v->name, i, k, (unsigned long long)cost, sl_verdict_name(dt.verdict),
                     (long long)dt.remaining, (long long)dt.delay_ns, sl_verdict_name(dr.verdict),
                     (long long)dr.remaining, (long long)dr.delay_ns);
        if (rank(&dt, rc) > 0) /* record what the table admitted */
            ops->commit(ref[k].st, &l, now, cost, &dr);
        if (v->algo == SL_ALGO_CONCURRENCY && rank(&dt, rc) > 0 && xorshift(&seed) % 2) {
            char key[48];
            int n = snprintf(key, sizeof(key), "tracked-%u", k);
            ops->release(ref[k].st, &l, now, dr.lease, -1);
            sl_table_release(t, key, (size_t)n, &l, now, dt.lease);
        }
        for (uint64_t f = xorshift(&seed) % 200; f > 0; f--) {
            rc = check(t, "filler", filler++, &l, now, 1, &dt);
            assert_true(rc == SL_OK || (rc == SL_EFULL && v->algo == SL_ALGO_CONCURRENCY));
        }
    }
    sl_table_stats(t, &s);
    assert_true(s.evictions > 0);
    if (v->algo == SL_ALGO_CONCURRENCY) {
        assert_int_equal(s.summary_restores, 0);
    } else if (s.summary_restores == 0) {
        fail_msg("%s: no key was ever restored: the trace did not test the summary", v->name);
    }
    sl_table_free(t);
}

static void test_never_more_permissive(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        for (uint64_t seed = 1; seed <= 3; seed++)
            trace(&variants[i], seed * 0x9e3779b97f4a7c15);
    }
}

/* -------------------------------------------------------------- floods */

#define VICTIMS 20

/* Block VICTIMS keys of `l` (each checked until denied). */
static void block_victims(sl_table *t, const struct sl_limit *l, int64_t now)
{
    for (unsigned k = 0; k < VICTIMS; k++) {
        struct sl_decision d;
        int i;
        for (i = 0; i < 100; i++) {
            assert_int_equal(check(t, "victim", k, l, now, 1, &d), SL_OK);
            if (d.verdict == SL_DENY)
                break;
        }
        assert_true(i < 100);
    }
}

static unsigned victims_allowed(sl_table *t, const struct sl_limit *l, int64_t now)
{
    unsigned n = 0;

    for (unsigned k = 0; k < VICTIMS; k++) {
        struct sl_decision d;
        assert_int_equal(check(t, "victim", k, l, now, 1, &d), SL_OK);
        n += d.verdict != SL_DENY;
    }
    return n;
}

/* `n` new keys of `l`, each sent twice (out of quota for a 1-request limit). */
static void flood(sl_table *t, const struct sl_limit *l, const char *prefix, unsigned n,
                  int64_t now)
{
    for (unsigned k = 0; k < n; k++) {
        struct sl_decision d;
        assert_int_equal(check(t, prefix, k, l, now, 1, &d), SL_OK);
        assert_int_equal(check(t, prefix, k, l, now, 1, &d), SL_OK);
    }
}

/* How many of `n` new keys of `l` would start restricted: a peek (which
 * creates nothing, so the count does not feed itself) that differs from a
 * fresh key's. */
static unsigned restricted(sl_table *t, const struct sl_limit *l, const char *prefix, unsigned n,
                           int64_t now)
{
    struct sl_decision fresh;
    sl_table *empty = table_of(64 << 10, 1);
    unsigned r = 0;

    assert_int_equal(sl_table_peek(empty, "x", 1, l, now, &fresh), SL_OK);
    sl_table_free(empty);
    for (unsigned k = 0; k < n; k++) {
        char key[48];
        int len = snprintf(key, sizeof(key), "%s-%u", prefix, k);
        struct sl_decision d;
        assert_int_equal(sl_table_peek(t, key, (size_t)len, l, now, &d), SL_OK);
        r += d.verdict != fresh.verdict || d.remaining != fresh.remaining ||
             d.retry_after_ns != fresh.retry_after_ns;
    }
    return r;
}

/* The sizing formula (docs/security.md): F debts in an array of C cells,
 * two cells of one 8-cell line each, leave a new key's two cells both taken
 * with probability 1 - 2 e^(-2F/C) + e^(-26F/7C). */
static double formula(double folds, double cells)
{
    double x = folds / cells;

    return 1 - 2 * exp(-2 * x) + exp(-26 * x / 7);
}

/* Victims of every algorithm: a flood of another limit, then of their own,
 * in a table of 2 MiB; no victim is allowed again. New clients of the
 * unflooded limit are never restricted; of the flooded one, at most what
 * the formula says (plus the sampling error of 2,000 keys). */
static void test_flood_never_forgives(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        const struct variant *v = &variants[i];
        struct sl_limit l, other, third;
        struct sl_table_stats s0, s;
        int64_t now = T0;
        sl_table *t;

        if (v->algo == SL_ALGO_CONCURRENCY)
            continue; /* test_leases_never_evicted */
        t = table_of(2 << 20, 0);
        limit_from(&l, v);
        l.period_ns = HOUR; /* the flood must not outlast a window */
        l.warmup_ns = v->warmup_ns ? HOUR : 0;
        assert_int_equal(sl_limit_validate(&l, NULL), SL_OK);
        sl_limit_finish(&l);
        simple_limit(&other, SL_ALGO_FIXED_WINDOW, 1, HOUR);
        simple_limit(&third, SL_ALGO_GCRA, 5, HOUR);
        block_victims(t, &l, now);

        flood(t, &other, "other", 60000, now);
        sl_table_stats(t, &s);
        assert_true(s.evictions > 20000);
        assert_int_equal(victims_allowed(t, &l, now), 0);
        /* new clients of a limit with no evicted debt: never restricted */
        unsigned r = restricted(t, &third, "new", 2000, now);
        assert_int_equal(r, 0);
        /* of the victims' limit: only by the victims' own debts */
        r = restricted(t, &l, "new", 2000, now);
        double bound = formula(VICTIMS, (double)s.summary_cells / 8);
        print_message("%-26s flood of another limit: 0 of 2000 new clients of a third limit "
                      "restricted, %u of 2000 of the victims' (formula %.1f)\n",
                      v->name, r, 2000 * bound);
        assert_true(r <= 2000 * bound + 3);

        sl_table_stats(t, &s0);
        flood(t, &l, "own", 60000, now);
        sl_table_stats(t, &s);
        assert_int_equal(victims_allowed(t, &l, now), 0);
        r = restricted(t, &l, "fresh", 2000, now);
        bound = formula((double)(s.summary_folds - s0.summary_folds), (double)s.summary_cells / 8);
        print_message("%-26s flood of its own limit: %u of 2000 new clients restricted "
                      "(formula: at most %.0f)\n",
                      v->name, r, 2000 * bound);
        assert_true(r <= 2000 * bound + 100);
        sl_table_free(t);
    }
}

/* A smaller flood of its own limit, where the formula is well below 1: the
 * measured share stays under it. */
static void test_formula_bounds_the_innocent(void **st)
{
    struct sl_limit l;
    struct sl_table_stats s;
    struct sl_decision d;
    sl_table *t = table_of(4 << 20, 0);
    int64_t now = T0;
    unsigned k = 0;

    (void)st;
    simple_limit(&l, SL_ALGO_FIXED_WINDOW, 1, HOUR);
    do { /* fill the table (its shards one after another): 1,000 evictions */
        assert_int_equal(check(t, "fill", k, &l, now, 1, &d), SL_OK);
        assert_int_equal(check(t, "fill", k++, &l, now, 1, &d), SL_OK);
        sl_table_stats(t, &s);
    } while (s.evictions < 1000);
    double cells = (double)s.summary_cells / 8, folds = (double)s.summary_folds;
    double bound = formula(folds, cells);
    unsigned r = restricted(t, &l, "fresh", 4000, now);
    print_message("%u keys: %.0f debts in %.0f cells: %u of 4000 new clients restricted "
                  "(formula %.3f)\n",
                  k, folds, cells, r, bound);
    assert_true(folds >= 1000);
    assert_true(bound > 0.05 && bound < 0.5);
    assert_true((double)r / 4000 <= bound + 0.03);
    assert_true(r > 0);
    sl_table_free(t);
}

/* Held leases are never evicted: a table full of them answers new keys
 * SL_EFULL, and once they are released new keys fit again. */
static void test_leases_never_evicted(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(64 << 10, 1);
    uint64_t leases[4096];
    unsigned n = 0;
    int rc;
    int64_t now = T0;

    (void)st;
    simple_limit(&l, SL_ALGO_CONCURRENCY, 2, SEC);
    while ((rc = check(t, "holder", n, &l, now, 1, &d)) == SL_OK) {
        assert_true(n < 4096);
        leases[n++] = d.lease;
    }
    assert_int_equal(rc, SL_EFULL);
    sl_table_stats(t, &s);
    assert_int_equal(s.evictions, 0);
    assert_int_equal(s.entries, n);
    /* every holder still holds its lease */
    for (unsigned k = 0; k < n; k++) {
        char key[48];
        int len = snprintf(key, sizeof(key), "holder-%u", k);
        assert_int_equal(sl_table_release(t, key, (size_t)len, &l, now, leases[k]), SL_OK);
    }
    /* released: their entries are fresh, evicted for new keys */
    assert_int_equal(check(t, "new", 0, &l, now, 1, &d), SL_OK);
    sl_table_free(t);
}

/* A peek at an evicted key reports what its next check will find. */
static void test_peek_sees_the_debt(void **st)
{
    struct sl_limit l, filler;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(64 << 10, 1);
    int64_t now = T0;

    (void)st;
    simple_limit(&l, SL_ALGO_GCRA, 1, HOUR);
    /* out of quota after one request, as the victim: eviction spares
     * neither */
    simple_limit(&filler, SL_ALGO_FIXED_WINDOW, 1, HOUR);
    assert_int_equal(check(t, "victim", 0, &l, now, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_ALLOW);
    for (unsigned k = 0; k < 20000; k++) /* evicts the victim */
        assert_int_equal(check(t, "filler", k, &filler, now, 1, &d), SL_OK);
    assert_int_equal(sl_table_peek(t, "victim-0", 8, &l, now, &d), SL_OK);
    assert_int_equal(d.remaining, 0);
    assert_int_equal(check(t, "victim", 0, &l, now, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_DENY);
    /* evicted again, then back with the clock stepped back 10 s */
    for (unsigned k = 20000; k < 40000; k++)
        assert_int_equal(check(t, "filler", k, &filler, now, 1, &d), SL_OK);
    assert_int_equal(check(t, "victim", 0, &l, now - 10 * SEC, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_DENY);
    sl_table_stats(t, &s);
    assert_true(s.summary_restores >= 2);
    sl_table_free(t);
}

/* Limits a request brings (Envoy's override, CL.THROTTLE: ad_hoc) share
 * one array: a client that sends thousands of distinct ones fills neither
 * the registry nor the pool, so the rules' limits stay apart - a flood in
 * one still never restricts another's new clients. */
static void test_ad_hoc_limits_share_one_array(void **st)
{
    struct sl_limit a, b;
    struct sl_decision d;
    sl_table *t = table_of(2 << 20, 0);
    int64_t now = T0;

    (void)st;
    for (unsigned k = 0; k < 20000; k++) { /* 20,000 limits, one key each */
        struct sl_limit adhoc;
        simple_limit(&adhoc, SL_ALGO_FIXED_WINDOW, 1 + k, HOUR);
        adhoc.ad_hoc = true;
        assert_int_equal(check(t, "adhoc", k, &adhoc, now, 1, &d), SL_OK);
        assert_int_equal(check(t, "adhoc", k, &adhoc, now, 1, &d), SL_OK);
    }
    simple_limit(&a, SL_ALGO_FIXED_WINDOW, 3, HOUR);
    simple_limit(&b, SL_ALGO_FIXED_WINDOW, 1, HOUR);
    assert_int_equal(check(t, "a", 0, &a, now, 1, &d), SL_OK);
    flood(t, &b, "b", 60000, now);
    assert_int_equal(restricted(t, &a, "a-new", 2000, now), 0);
    sl_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_more_permissive),
        cmocka_unit_test(test_flood_never_forgives),
        cmocka_unit_test(test_formula_bounds_the_innocent),
        cmocka_unit_test(test_leases_never_evicted),
        cmocka_unit_test(test_peek_sees_the_debt),
        cmocka_unit_test(test_ad_hoc_limits_share_one_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
