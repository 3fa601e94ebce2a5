/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_table.c - the keyed state table: lookup and creation, peek, reset,
 * expiry (amortised and by sweep), the memory cap, drained-first and CLOCK
 * eviction, on_full deny, out-of-line states, concurrency release, and hash
 * flooding measured in probes.
 *
 * Decisions themselves are the algorithms' (tests/unit/test_algo_*); here
 * the table's results are compared with the bare algorithm on a private
 * state. Threads are in test_thr_table.c.
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
#include "table.h"

#define T0 (INT64_C(1700000000) * SL_NS_PER_S)

static void limit_of(struct sl_limit *l, enum sl_algo algo, uint64_t requests, int64_t period_ns)
{
    sl_limit_init(l);
    l->algo = algo;
    l->requests = requests;
    l->period_ns = period_ns;
    if (algo == SL_ALGO_CONCURRENCY)
        l->lease_ns = 10 * SL_NS_PER_S;
    assert_int_equal(sl_limit_validate(l, NULL), SL_OK);
    sl_limit_finish(l);
}

static sl_table *table_of(size_t max_bytes, unsigned shards, enum sl_on_full on_full,
                          uint8_t secret_byte)
{
    struct sl_table_config c;
    sl_table *t;

    sl_table_config_init(&c);
    c.max_bytes = max_bytes;
    c.shards = shards;
    c.on_full = on_full;
    memset(c.secret, secret_byte, sizeof(c.secret));
    assert_int_equal(sl_table_new(&c, &t), SL_OK);
    return t;
}

static int check_key(sl_table *t, unsigned k, const struct sl_limit *l, int64_t now,
                     struct sl_decision *d)
{
    char key[32];
    int n = snprintf(key, sizeof(key), "client-%u", k);
    return sl_table_check(t, key, (size_t)n, l, now, 1, d);
}

static uint64_t entries(const sl_table *t)
{
    struct sl_table_stats s;
    sl_table_stats(t, &s);
    return s.entries;
}

/* Every algorithm through the table decides exactly as the bare algorithm
 * on a state of its own, over a trace with repeats and a clock step back. */
static void test_check_equals_bare_algorithm(void **st)
{
    static const int64_t dt_ms[] = {0, 0, 0, 100, 100, 250, 400, -300, 900, 0, 5000, 1};
    uint64_t bare[4096 / 8];
    (void)st;
    for (int a = 0; a < SL_ALGO_BARE_N; a++) {
        struct sl_limit l;
        limit_of(&l, (enum sl_algo)a, 3, SL_NS_PER_S);
        assert_true(sl_algo_state_size(&l) <= sizeof(bare));
        sl_table *t = table_of(1 << 20, 4, SL_ON_FULL_EVICT, 7);
        int64_t now = T0;
        sl_algo_init(bare, &l, now);
        for (size_t i = 0; i < sizeof(dt_ms) / sizeof(dt_ms[0]); i++) {
            struct sl_decision want, got;
            now += dt_ms[i] * SL_NS_PER_MS;
            sl_algo_decide(bare, &l, now, 1, &want);
            assert_int_equal(sl_table_check(t, "k", 1, &l, now, 1, &got), SL_OK);
            assert_int_equal(got.verdict, want.verdict);
            assert_int_equal(got.remaining, want.remaining);
            assert_int_equal(got.retry_after_ns, want.retry_after_ns);
            assert_int_equal(got.reset_ns, want.reset_ns);
        }
        sl_table_free(t);
    }
}

static void test_keys_are_independent(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    sl_table *t = table_of(1 << 20, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_FIXED_WINDOW, 2, 60 * SL_NS_PER_S);
    for (int i = 0; i < 3; i++)
        assert_int_equal(check_key(t, 1, &l, T0, &d), SL_OK);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(check_key(t, 2, &l, T0, &d), SL_OK);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(entries(t), 2);
    sl_table_free(t);
}

static void test_argument_errors(void **st)
{
    static char key[SL_KEY_MAX + 1];
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_config c;
    sl_table *t = table_of(1 << 20, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_GCRA, 3, SL_NS_PER_S);
    assert_int_equal(sl_table_check(t, key, SL_KEY_MAX + 1, &l, T0, 1, &d), SL_ETOOBIG);
    assert_int_equal(sl_table_check(t, key, SL_KEY_MAX, &l, T0, 1, &d), SL_OK);
    assert_int_equal(sl_table_peek(t, key, SL_KEY_MAX + 1, &l, T0, &d), SL_ETOOBIG);
    assert_int_equal(sl_table_reset(t, key, SL_KEY_MAX + 1), SL_ETOOBIG);
    assert_int_equal(sl_table_check(t, NULL, 3, &l, T0, 1, &d), SL_EINVAL);
    assert_int_equal(sl_table_check(t, "k", 1, NULL, T0, 1, &d), SL_EINVAL);
    sl_table_free(t);

    sl_table_config_init(&c);
    c.shards = 3;
    assert_int_equal(sl_table_new(&c, &t), SL_EINVAL);
    assert_null(t);
    sl_table_config_init(&c);
    c.max_bytes = 1024;
    assert_int_equal(sl_table_new(&c, &t), SL_EINVAL);
}

static void test_peek_creates_nothing(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    sl_table *t = table_of(1 << 20, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_TOKEN_BUCKET, 5, SL_NS_PER_S);
    assert_int_equal(sl_table_peek(t, "k", 1, &l, T0, &d), SL_OK);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(d.remaining, sl_limit_quota(&l));
    assert_int_equal(sl_table_check(t, "k", 1, &l, T0, 0, &d), SL_OK);
    assert_int_equal(entries(t), 0);
    /* After a real check, a peek reports the consumed state and keeps it. */
    assert_int_equal(sl_table_check(t, "k", 1, &l, T0, 1, &d), SL_OK);
    int64_t after = d.remaining;
    assert_int_equal(sl_table_peek(t, "k", 1, &l, T0, &d), SL_OK);
    assert_int_equal(d.remaining, after);
    assert_int_equal(sl_table_peek(t, "k", 1, &l, T0, &d), SL_OK);
    assert_int_equal(d.remaining, after);
    sl_table_free(t);
}

static void test_reset_starts_fresh(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    sl_table *t = table_of(1 << 20, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_FIXED_WINDOW, 1, 60 * SL_NS_PER_S);
    assert_int_equal(sl_table_check(t, "k", 1, &l, T0, 1, &d), SL_OK);
    assert_int_equal(sl_table_check(t, "k", 1, &l, T0, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(sl_table_reset(t, "k", 1), SL_OK);
    assert_int_equal(entries(t), 0);
    assert_int_equal(sl_table_check(t, "k", 1, &l, T0, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_int_equal(sl_table_reset(t, "absent", 6), SL_ENOENT);
    sl_table_free(t);
}

static void test_sweep_drops_only_drained(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(4 << 20, 8, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_FIXED_WINDOW, 10, SL_NS_PER_S);
    for (unsigned k = 0; k < 1000; k++)
        assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
    assert_int_equal(sl_table_sweep(t, T0), 0);
    assert_int_equal(entries(t), 1000);
    assert_int_equal(sl_table_sweep(t, T0 + 2 * SL_NS_PER_S), 1000);
    sl_table_stats(t, &s);
    assert_int_equal(s.entries, 0);
    assert_int_equal(s.expired, 1000);
    assert_int_equal(s.evictions, 0);
    sl_table_free(t);
}

/* Inserting new keys drops drained ones on the way, without a sweep. */
static void test_amortised_expiry(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(16 << 20, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_GCRA, 10, SL_NS_PER_S);
    for (unsigned k = 0; k < 2000; k++)
        assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
    for (unsigned k = 2000; k < 4000; k++)
        assert_int_equal(check_key(t, k, &l, T0 + 10 * SL_NS_PER_S, &d), SL_OK);
    sl_table_stats(t, &s);
    assert_true(s.expired > 0);
    assert_int_equal(s.evictions, 0);
    assert_int_equal(s.entries + s.expired, 4000);
    sl_table_free(t);
}

/* The step on inserts leaves an entry drained for less than 4 s (its key
 * may come back: a new entry would cost more than keeping it); the sweep
 * does not wait. */
static void test_amortised_expiry_waits(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(16 << 20, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_GCRA, 10, SL_NS_PER_S); /* drained from T0 + 1 s */
    for (unsigned k = 0; k < 2000; k++)
        assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
    for (unsigned k = 2000; k < 4000; k++)
        assert_int_equal(check_key(t, k, &l, T0 + 4 * SL_NS_PER_S, &d), SL_OK);
    sl_table_stats(t, &s);
    assert_int_equal(s.expired, 0);
    assert_int_equal(s.entries, 4000);
    for (unsigned k = 4000; k < 6000; k++)
        assert_int_equal(check_key(t, k, &l, T0 + 5 * SL_NS_PER_S + 1, &d), SL_OK);
    sl_table_stats(t, &s);
    assert_true(s.expired > 0);
    assert_int_equal(s.entries + s.expired, 6000);
    assert_int_equal(sl_table_sweep(t, T0 + 7 * SL_NS_PER_S), s.entries);
    sl_table_free(t);
}

/* The cap is never exceeded, whatever is inserted, and every key that
 * left is accounted for as evicted or expired. */
static void test_memory_cap_never_exceeded(void **st)
{
    const size_t cap = 256 << 10;
    struct sl_limit l, log;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(cap, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_FIXED_WINDOW, 10, 3600 * SL_NS_PER_S);
    limit_of(&log, SL_ALGO_SLIDING_LOG, 50, 3600 * SL_NS_PER_S);
    for (unsigned k = 0; k < 50000; k++) {
        int rc = check_key(t, k, (k % 7 == 0) ? &log : &l, T0, &d);
        assert_int_equal(rc, SL_OK);
        sl_table_stats(t, &s);
        assert_true(s.bytes <= cap);
    }
    assert_true(s.evictions > 0);
    assert_int_equal(s.entries + s.evictions + s.expired, 50000);
    sl_table_free(t);
}

/* shards = 0 picks the count from the cap (up to 2048 for a large cap,
 * at least 64): whatever it picks, every key keeps its own state and the
 * cap holds. */
static void test_default_shard_count(void **st)
{
    static const size_t caps[] = {1 << 20, 64 << 20, 256 << 20};
    struct sl_table_config c;
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;

    (void)st;
    sl_table_config_init(&c);
    assert_int_equal(c.shards, 0);
    limit_of(&l, SL_ALGO_GCRA, 1, 3600 * SL_NS_PER_S);
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        sl_table *t;
        c.max_bytes = caps[i];
        assert_int_equal(sl_table_new(&c, &t), SL_OK);
        for (unsigned k = 0; k < 5000; k++) {
            assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
            assert_int_equal(d.verdict, SL_ALLOW);
        }
        for (unsigned k = 0; k < 5000; k++) {
            assert_int_equal(check_key(t, k, &l, T0 + 1, &d), SL_OK);
            assert_int_equal(d.verdict, SL_DENY);
        }
        sl_table_stats(t, &s);
        assert_int_equal(s.entries, 5000);
        assert_int_equal(s.evictions, 0);
        assert_true(s.bytes <= caps[i]);
        sl_table_free(t);
    }
    /* Too small for even the fewest automatic shards. */
    c.max_bytes = 4096;
    sl_table *t = NULL;
    assert_int_equal(sl_table_new(&c, &t), SL_EINVAL);
    assert_null(t);
}

/* How many live keys a one-shard table holds before evicting. */
static unsigned capacity_of(size_t max_bytes)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(max_bytes, 1, SL_ON_FULL_EVICT, 1);
    unsigned k = 0;

    limit_of(&l, SL_ALGO_FIXED_WINDOW, 10, 3600 * SL_NS_PER_S);
    for (;; k++) {
        assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
        sl_table_stats(t, &s);
        if (s.evictions > 0)
            break;
    }
    sl_table_free(t);
    return k;
}

static void test_drained_entries_go_first(void **st)
{
    const size_t cap = 64 << 10;
    unsigned n = capacity_of(cap);
    struct sl_limit brief, lasting;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(cap, 1, SL_ON_FULL_EVICT, 1);

    (void)st;
    assert_true(n > 100);
    limit_of(&brief, SL_ALGO_FIXED_WINDOW, 10, SL_NS_PER_S);
    limit_of(&lasting, SL_ALGO_FIXED_WINDOW, 10, 3600 * SL_NS_PER_S);
    for (unsigned k = 0; k < n; k++)
        assert_int_equal(check_key(t, k, (k & 1) ? &lasting : &brief, T0, &d), SL_OK);
    /* Later, the brief ones are drained: new keys replace them, not the
     * lasting ones. The search for a drained entry is bounded (a flood of
     * new keys must not make every insert scan the shard), so "first" is
     * approximate: allow a rare eviction, no more. */
    for (unsigned k = n; k < n + n / 2; k++)
        assert_int_equal(check_key(t, k, &lasting, T0 + 5 * SL_NS_PER_S, &d), SL_OK);
    sl_table_stats(t, &s);
    assert_true(s.evictions <= n / 100);
    assert_true(s.expired >= n / 2 - s.evictions);
    unsigned kept = 0;
    for (unsigned k = 1; k < n; k += 2) {
        char key[32];
        int len = snprintf(key, sizeof(key), "client-%u", k);
        assert_int_equal(sl_table_peek(t, key, (size_t)len, &lasting, T0, &d), SL_OK);
        kept += d.remaining == sl_limit_quota(&lasting) - 1; /* still counted */
    }
    assert_true(kept >= n / 2 - s.evictions);
    sl_table_free(t);
}

/* Full of live keys: each new key evicts one (counted); a key in constant
 * use survives CLOCK. */
static void test_clock_eviction_counted(void **st)
{
    const size_t cap = 64 << 10;
    unsigned n = capacity_of(cap);
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(cap, 1, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_FIXED_WINDOW, 1000000, 3600 * SL_NS_PER_S);
    for (unsigned k = 0; k < n; k++)
        assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
    for (unsigned k = n; k < 3 * n; k++) {
        assert_int_equal(check_key(t, 0, &l, T0, &d), SL_OK); /* the hot key */
        assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
    }
    sl_table_stats(t, &s);
    assert_int_equal(s.evictions, 2 * n);
    assert_int_equal(s.entries, n);
    assert_int_equal(sl_table_peek(t, "client-0", 8, &l, T0, &d), SL_OK);
    assert_int_equal(d.remaining, sl_limit_quota(&l) - (1 + 2 * (int64_t)n));
    sl_table_free(t);
}

static void test_on_full_deny(void **st)
{
    const size_t cap = 64 << 10;
    unsigned n = capacity_of(cap);
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats s;
    sl_table *t = table_of(cap, 1, SL_ON_FULL_DENY, 1);

    (void)st;
    limit_of(&l, SL_ALGO_FIXED_WINDOW, 1, 60 * SL_NS_PER_S);
    for (unsigned k = 0; k < n; k++)
        assert_int_equal(check_key(t, k, &l, T0, &d), SL_OK);
    assert_int_equal(check_key(t, n, &l, T0, &d), SL_EFULL);
    assert_int_equal(check_key(t, n + 1, &l, T0, &d), SL_EFULL);
    sl_table_stats(t, &s);
    assert_int_equal(s.full_denials, 2);
    assert_int_equal(s.evictions, 0);
    /* Blocked keys stay blocked: nothing was evicted to admit newcomers. */
    assert_int_equal(check_key(t, 0, &l, T0, &d), SL_OK);
    assert_int_equal(d.verdict, SL_DENY);
    /* Once drained, old keys make room again. */
    assert_int_equal(check_key(t, n, &l, T0 + 120 * SL_NS_PER_S, &d), SL_OK);
    assert_int_equal(d.verdict, SL_ALLOW);
    sl_table_free(t);
}

static void test_out_of_line_state_counted(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats before, after;
    sl_table *t = table_of(4 << 20, 1, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_SLIDING_LOG, 1000, 60 * SL_NS_PER_S);
    sl_table_stats(t, &before);
    assert_int_equal(sl_table_check(t, "log", 3, &l, T0, 1, &d), SL_OK);
    sl_table_stats(t, &after);
    assert_true(after.bytes - before.bytes >= sl_algo_state_size(&l));
    before = after;
    assert_int_equal(sl_table_reset(t, "log", 3), SL_OK);
    sl_table_stats(t, &after);
    assert_true(before.bytes - after.bytes >= sl_algo_state_size(&l));
    /* A state larger than a shard's share of the cap is refused. */
    limit_of(&l, SL_ALGO_SLIDING_LOG, 10000, 60 * SL_NS_PER_S);
    sl_table_free(t);
    t = table_of(64 << 10, 1, SL_ON_FULL_EVICT, 1);
    assert_int_equal(sl_table_check(t, "big", 3, &l, T0, 1, &d), SL_ETOOBIG);
    sl_table_free(t);
}

/* A peek at an absent key with a large fresh state creates nothing and,
 * after the shard's scratch buffer exists, allocates nothing more. */
static void test_peek_absent_large_state(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats z, a, b;
    sl_table *t = table_of(4 << 20, 1, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_SLIDING_LOG, 5000, 60 * SL_NS_PER_S);
    assert_true(sl_algo_state_size(&l) > 2048);
    sl_table_stats(t, &z);
    assert_int_equal(sl_table_peek(t, "p1", 2, &l, T0, &d), SL_OK);
    assert_int_equal(d.remaining, sl_limit_quota(&l));
    sl_table_stats(t, &a);
    assert_int_equal(a.entries, 0);
    /* The fresh state lives in the shard's scratch buffer, under the cap. */
    assert_true(a.bytes >= z.bytes + sl_algo_state_size(&l));
    for (int i = 0; i < 10; i++) {
        char key[16];
        int n = snprintf(key, sizeof(key), "p%d", i);
        assert_int_equal(sl_table_peek(t, key, (size_t)n, &l, T0, &d), SL_OK);
        assert_int_equal(d.remaining, sl_limit_quota(&l));
    }
    sl_table_stats(t, &b);
    assert_int_equal(b.entries, 0);
    assert_int_equal(b.bytes, a.bytes);
    assert_true(b.bytes <= 4 << 20);
    sl_table_free(t);
}

static void test_release_lease(void **st)
{
    struct sl_limit l;
    struct sl_decision d;
    sl_table *t = table_of(1 << 20, 4, SL_ON_FULL_EVICT, 1);

    (void)st;
    limit_of(&l, SL_ALGO_CONCURRENCY, 1, 0);
    assert_int_equal(sl_table_check(t, "c", 1, &l, T0, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_ALLOW);
    uint64_t lease = d.lease;
    assert_int_equal(sl_table_check(t, "c", 1, &l, T0, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(sl_table_release(t, "c", 1, &l, T0, lease + 1), SL_ENOENT);
    assert_int_equal(sl_table_release(t, "c", 1, &l, T0, lease), SL_OK);
    assert_int_equal(sl_table_release(t, "c", 1, &l, T0, lease), SL_ENOENT);
    assert_int_equal(sl_table_release(t, "absent", 6, &l, T0, lease), SL_ENOENT);
    assert_int_equal(sl_table_check(t, "c", 1, &l, T0, 1, &d), SL_OK);
    assert_int_equal(d.verdict, SL_ALLOW);
    sl_table_free(t);
}

/* ------------------------------------------------------- hash flooding */

#define FLOOD_KEYS 300
#define FLOOD_BITS 10 /* crafted keys share their low 10 home bits */

static void flood_key(unsigned i, char *out, size_t *len)
{
    *len = (size_t)snprintf(out, 32, "attacker-%u", i);
}

/* Keys that all land on the same home slot under `secret_byte`'s secret:
 * what an attacker who knew the secret could send. */
static void craft(uint8_t secret_byte, unsigned *out)
{
    struct sl_table_config c;
    sl_table *t;
    unsigned n = 0;

    sl_table_config_init(&c);
    c.shards = 1;
    memset(c.secret, secret_byte, sizeof(c.secret));
    assert_int_equal(sl_table_new(&c, &t), SL_OK);
    for (unsigned i = 0; n < FLOOD_KEYS; i++) {
        char key[32];
        size_t len;
        struct sl__fp fp;
        flood_key(i, key, &len);
        sl__table_hash(t, key, len, &fp);
        if ((fp.w[0] & ((1u << FLOOD_BITS) - 1)) == 0)
            out[n++] = i;
    }
    sl_table_free(t);
}

static uint64_t probes_inserting(uint8_t secret_byte, const unsigned *ids, bool crafted)
{
    sl_table *t = table_of(8 << 20, 1, SL_ON_FULL_EVICT, secret_byte);
    struct sl_limit l;
    struct sl_decision d;
    uint64_t before;

    limit_of(&l, SL_ALGO_GCRA, 10, SL_NS_PER_S);
    before = sl__table_probes(t);
    for (unsigned i = 0; i < FLOOD_KEYS; i++) {
        char key[32];
        size_t len;
        flood_key(crafted ? ids[i] : 1000000000u + i, key, &len);
        assert_int_equal(sl_table_check(t, key, len, &l, T0, 1, &d), SL_OK);
    }
    uint64_t n = sl__table_probes(t) - before;
    sl_table_free(t);
    return n;
}

static void test_hash_flooding_needs_the_secret(void **st)
{
    static unsigned ids[FLOOD_KEYS];

    (void)st;
    craft(0xA5, ids);
    uint64_t known = probes_inserting(0xA5, ids, true);
    uint64_t unknown = probes_inserting(0x5A, ids, true);
    uint64_t random = probes_inserting(0x5A, ids, false);
    /* With the secret, the keys pile up (quadratic probing cost)... */
    assert_true(known > 20 * random);
    /* ...without it they cost what random keys cost. */
    assert_true(unknown < 2 * random);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_equals_bare_algorithm),
        cmocka_unit_test(test_default_shard_count),
        cmocka_unit_test(test_keys_are_independent),
        cmocka_unit_test(test_argument_errors),
        cmocka_unit_test(test_peek_creates_nothing),
        cmocka_unit_test(test_reset_starts_fresh),
        cmocka_unit_test(test_sweep_drops_only_drained),
        cmocka_unit_test(test_amortised_expiry),
        cmocka_unit_test(test_amortised_expiry_waits),
        cmocka_unit_test(test_memory_cap_never_exceeded),
        cmocka_unit_test(test_drained_entries_go_first),
        cmocka_unit_test(test_clock_eviction_counted),
        cmocka_unit_test(test_on_full_deny),
        cmocka_unit_test(test_out_of_line_state_counted),
        cmocka_unit_test(test_peek_absent_large_state),
        cmocka_unit_test(test_release_lease),
        cmocka_unit_test(test_hash_flooding_needs_the_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
