/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_limiter.c - sl_limiter_check_matched and sl_limiter_release over
 * hand-built matches: all-or-nothing across limits and descriptors (no
 * counter pollution, envoyproxy/ratelimit#1060), reporting per docs/contracts.md §Decisions,
 * state kept or restarted across a limit change (contracts §Rules), caps, shadow limits,
 * peeks, per-descriptor costs, count_rejected, leases and a full table.
 *
 * Rule matching is not exercised here (lib/rules' tests do that through
 * sl_limiter_check); threads are in test_thr_table.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"

#define T0  (INT64_C(1700000000) * SL_NS_PER_S)
#define MIN (60 * SL_NS_PER_S)

static struct sl_limit limit_of(enum sl_algo algo, uint64_t requests, int64_t period_ns)
{
    struct sl_limit l;

    sl_limit_init(&l);
    l.algo = algo;
    l.requests = requests;
    l.period_ns = period_ns;
    if (algo == SL_ALGO_CONCURRENCY)
        l.lease_ns = MIN;
    assert_int_equal(sl_limit_validate(&l, NULL), SL_OK);
    sl_limit_finish(&l);
    return l;
}

static void match_of(struct sl_match *m, const char *key, const struct sl_limit *a,
                     const struct sl_limit *b)
{
    memset(m, 0, sizeof(*m));
    m->key_len = strlen(key);
    memcpy(m->key, key, m->key_len);
    if (a)
        m->limits[m->n_limits++] = a;
    if (b)
        m->limits[m->n_limits++] = b;
}

static sl_limiter *limiter(enum sl_on_full on_full, size_t max_bytes)
{
    struct sl_limiter_config c;
    sl_limiter *lim;

    sl_limiter_config_init(&c);
    c.table.on_full = on_full;
    c.table.max_bytes = max_bytes;
    c.table.shards = 4;
    memset(c.table.secret, 0x42, sizeof(c.table.secret));
    assert_int_equal(sl_limiter_new(&c, &lim), SL_OK);
    return lim;
}

static int check(sl_limiter *lim, const struct sl_match *m, size_t n, uint64_t hits, int64_t now,
                 struct sl_result *res)
{
    struct sl_request req;

    memset(&req, 0, sizeof(req));
    req.hits = hits;
    req.now_ns = now;
    return sl_limiter_check_matched(lim, m, n, &req, res);
}

/* What a lone limit reports for `key` right now, without consuming. */
static int64_t remaining_of(sl_limiter *lim, const char *key, const struct sl_limit *l, int64_t now)
{
    struct sl_match m;
    struct sl_result res;

    match_of(&m, key, l, NULL);
    assert_int_equal(check(lim, &m, 1, 0, now, &res), SL_OK);
    return res.statuses[0].d.remaining;
}

static void test_all_or_nothing_across_limits(void **st)
{
    struct sl_limit wide = limit_of(SL_ALGO_FIXED_WINDOW, 10, MIN);
    struct sl_limit narrow = limit_of(SL_ALGO_FIXED_WINDOW, 2, MIN);
    struct sl_match m;
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    match_of(&m, "d|user=a", &wide, &narrow);
    for (int i = 0; i < 5; i++)
        assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_ptr_equal(res.statuses[0].limit, &narrow);
    /* Only the two admitted requests were counted by the wide limit. */
    assert_int_equal(remaining_of(lim, "d|user=a", &wide, T0), 8);
    sl_limiter_free(lim);
}

/* envoyproxy/ratelimit#1060: requests blocked by a granular descriptor must
 * not eat the broad descriptor's quota. */
static void test_no_counter_pollution_across_descriptors(void **st)
{
    struct sl_limit broad = limit_of(SL_ALGO_FIXED_WINDOW, 100, MIN);
    struct sl_limit granular = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_match m[2];
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    match_of(&m[0], "api|policy=broad", &broad, NULL);
    match_of(&m[1], "api|policy=granular|user=99", &granular, NULL);
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
        assert_int_equal(res.verdict, SL_DENY);
        assert_int_equal(res.n_statuses, 2);
        assert_int_equal(res.statuses[1].d.verdict, SL_DENY);
        assert_ptr_equal(res.statuses[1].limit, &granular);
        /* The broad descriptor reports its unchanged state. */
        assert_int_equal(res.statuses[0].d.verdict, SL_ALLOW);
        assert_int_equal(res.statuses[0].d.remaining, 99);
    }
    assert_int_equal(remaining_of(lim, "api|policy=broad", &broad, T0), 99);
    sl_limiter_free(lim);
}

static void test_status_picks_per_c2(void **st)
{
    struct sl_limit sec = limit_of(SL_ALGO_FIXED_WINDOW, 5, SL_NS_PER_S);
    struct sl_limit min = limit_of(SL_ALGO_FIXED_WINDOW, 5, MIN);
    struct sl_limit tight = limit_of(SL_ALGO_FIXED_WINDOW, 3, MIN);
    struct sl_limit one_s = limit_of(SL_ALGO_FIXED_WINDOW, 1, SL_NS_PER_S);
    struct sl_limit one_m = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_limit gcra = limit_of(SL_ALGO_GCRA, 1, MIN);
    struct sl_match m;
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    /* Equal remaining: the longer period is reported. */
    match_of(&m, "tie", &sec, &min);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_ptr_equal(res.statuses[0].limit, &min);
    assert_int_equal(res.statuses[0].d.remaining, 4);
    /* Otherwise the lowest remaining. */
    match_of(&m, "low", &min, &tight);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_ptr_equal(res.statuses[0].limit, &tight);
    assert_int_equal(res.statuses[0].d.remaining, 2);
    /* Two denials: the longer retry. */
    match_of(&m, "deny", &one_s, &one_m);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_ptr_equal(res.statuses[0].limit, &one_m);
    assert_true(res.statuses[0].d.retry_after_ns > SL_NS_PER_S);
    /* A cost no limit can ever grant (-1) ranks longest. */
    match_of(&m, "never", &one_m, &gcra);
    assert_int_equal(check(lim, &m, 1, 1000, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_int_equal(res.statuses[0].d.retry_after_ns, -1);
    sl_limiter_free(lim);
}

static void test_delay_is_longest(void **st)
{
    struct sl_limit a = limit_of(SL_ALGO_LEAKY_BUCKET, 1, SL_NS_PER_S);
    struct sl_limit b = limit_of(SL_ALGO_LEAKY_BUCKET, 1, 2 * SL_NS_PER_S);
    struct sl_match m[2];
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    a.burst = 5;
    b.burst = 5;
    sl_limit_finish(&a);
    sl_limit_finish(&b);
    match_of(&m[0], "a", &a, NULL);
    match_of(&m[1], "b", &b, NULL);
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DELAY);
    assert_int_equal(res.statuses[0].d.verdict, SL_DELAY);
    assert_int_equal(res.statuses[1].d.verdict, SL_DELAY);
    assert_true(res.statuses[1].d.delay_ns > res.statuses[0].d.delay_ns);
    assert_int_equal(res.delay_ns, res.statuses[1].d.delay_ns);
    sl_limiter_free(lim);
}

/* contracts §Rules: an unchanged limit (even a new struct, renamed) keeps its state; a
 * changed one starts fresh. */
static void test_limit_change_restarts_state(void **st)
{
    struct sl_limit old = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_limit same = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_limit changed = limit_of(SL_ALGO_FIXED_WINDOW, 2, MIN);
    struct sl_match m;
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    same.name = "renamed";
    match_of(&m, "k", &old, NULL);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    match_of(&m, "k", &same, NULL);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    match_of(&m, "k", &changed, NULL);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[0].d.remaining, 1);
    sl_limiter_free(lim);
}

static void test_caps_and_errors(void **st)
{
    static struct sl_match m[SL_MAX_DESCRIPTORS + 1];
    struct sl_limit l = limit_of(SL_ALGO_GCRA, 10, MIN);
    struct sl_limit cc = limit_of(SL_ALGO_CONCURRENCY, 10, 0);
    struct sl_entry entries[SL_MAX_ENTRIES + 1];
    struct sl_descriptor desc = {entries, SL_MAX_ENTRIES + 1, -1, NULL};
    struct sl_request req;
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    memset(entries, 0, sizeof(entries));
    for (size_t i = 0; i <= SL_MAX_DESCRIPTORS; i++)
        match_of(&m[i], "k", &l, NULL);
    assert_int_equal(check(lim, m, SL_MAX_DESCRIPTORS + 1, 1, T0, &res), SL_ETOOBIG);
    assert_int_equal(check(lim, m, SL_MAX_DESCRIPTORS, 1, T0, &res), SL_OK);
    m[0].n_limits = SL_MAX_LIMITS + 1;
    assert_int_equal(check(lim, m, 1, 1, T0, &res), SL_ETOOBIG);
    match_of(&m[0], "k", &l, NULL);
    m[0].limits[0] = NULL;
    assert_int_equal(check(lim, m, 1, 1, T0, &res), SL_EINVAL);
    for (size_t i = 0; i <= SL_MAX_LEASES; i++)
        match_of(&m[i], "c", &cc, NULL);
    assert_int_equal(check(lim, m, SL_MAX_LEASES + 1, 1, T0, &res), SL_ETOOBIG);
    match_of(&m[0], "k", &l, NULL);
    memset(&req, 0, sizeof(req));
    req.descriptors = &desc;
    req.n_descriptors = 1;
    req.hits = 1;
    req.now_ns = T0;
    assert_int_equal(sl_limiter_check_matched(lim, m, 1, &req, &res), SL_ETOOBIG);
    desc.n_entries = SL_MAX_ENTRIES;
    assert_int_equal(sl_limiter_check_matched(lim, m, 1, &req, &res), SL_OK);
    assert_int_equal(sl_limiter_check_matched(NULL, m, 1, &req, &res), SL_EINVAL);
    sl_limiter_free(lim);
}

static void test_shadow_never_denies(void **st)
{
    struct sl_limit shadow = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_match m;
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    shadow.shadow = true;
    match_of(&m, "s", &shadow, NULL);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_false(res.statuses[0].shadow_denied);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
        assert_int_equal(res.verdict, SL_ALLOW);
        assert_true(res.statuses[0].shadow_denied);
        assert_int_equal(res.statuses[0].d.remaining, 0);
        assert_int_equal(res.statuses[0].d.retry_after_ns, 0);
    }
    sl_limiter_free(lim);
}

static void test_peek_and_costs(void **st)
{
    struct sl_limit l = limit_of(SL_ALGO_FIXED_WINDOW, 5, MIN);
    struct sl_match m[2];
    struct sl_descriptor d[2] = {{NULL, 0, 3, NULL}, {NULL, 0, -1, NULL}};
    struct sl_request req;
    struct sl_result res;
    struct sl_table_stats s;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    match_of(&m[0], "a", &l, NULL);
    match_of(&m[1], "b", &l, NULL);
    assert_int_equal(check(lim, m, 2, 0, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[0].d.remaining, 5);
    sl_table_stats(sl_limiter_table(lim), &s);
    assert_int_equal(s.entries, 0);
    memset(&req, 0, sizeof(req));
    req.descriptors = d;
    req.n_descriptors = 2;
    req.hits = 2;
    req.now_ns = T0;
    assert_int_equal(sl_limiter_check_matched(lim, m, 2, &req, &res), SL_OK);
    assert_int_equal(res.statuses[0].d.remaining, 2); /* its own hits: 3 */
    assert_int_equal(res.statuses[1].d.remaining, 3); /* the request's: 2 */
    sl_limiter_free(lim);
}

static void test_unlimited_and_unmatched(void **st)
{
    struct sl_limit l = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_match m[2];
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    match_of(&m[0], "u", &l, NULL);
    m[0].unlimited = true;
    match_of(&m[1], "none", NULL, NULL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
        assert_int_equal(res.verdict, SL_ALLOW);
        assert_null(res.statuses[0].limit);
        assert_null(res.statuses[1].limit);
    }
    sl_limiter_free(lim);
}

/* Identical descriptors count twice, never overshoot. */
static void test_duplicate_descriptors_sum(void **st)
{
    struct sl_limit l = limit_of(SL_ALGO_FIXED_WINDOW, 3, MIN);
    struct sl_match m[2];
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    match_of(&m[0], "dup", &l, NULL);
    match_of(&m[1], "dup", &l, NULL);
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_int_equal(remaining_of(lim, "dup", &l, T0), 1);
    sl_limiter_free(lim);
}

static void test_count_rejected_records_denial(void **st)
{
    struct sl_limit penal = limit_of(SL_ALGO_FIXED_WINDOW, 10, MIN);
    struct sl_limit plain = limit_of(SL_ALGO_FIXED_WINDOW, 10, MIN);
    struct sl_limit block = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_match m[3];
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    penal.count_rejected = true;
    sl_limit_finish(&penal);
    match_of(&m[0], "p", &penal, NULL);
    match_of(&m[1], "q", &plain, NULL);
    match_of(&m[2], "b", &block, NULL);
    for (int i = 0; i < 4; i++)
        assert_int_equal(check(lim, m, 3, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_int_equal(remaining_of(lim, "p", &penal, T0), 6);
    assert_int_equal(remaining_of(lim, "q", &plain, T0), 9);
    sl_limiter_free(lim);
}

static void test_leases_release(void **st)
{
    struct sl_limit c1 = limit_of(SL_ALGO_CONCURRENCY, 1, 0);
    struct sl_limit c2 = limit_of(SL_ALGO_CONCURRENCY, 2, 0);
    struct sl_match m[2];
    struct sl_result res;
    char token[SL_LEASE_MAX];
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 4 << 20);

    (void)st;
    match_of(&m[0], "conn|a", &c1, NULL);
    match_of(&m[1], "conn|b", &c2, NULL);
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_non_null(strchr(res.lease, '.'));
    memcpy(token, res.lease, sizeof(token));
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_string_equal(res.lease, "");
    /* Nothing consumed by the denied request: b still has one slot. */
    assert_int_equal(remaining_of(lim, "conn|b", &c2, T0), 1);
    assert_int_equal(sl_limiter_release(lim, token, strlen(token), T0), SL_OK);
    assert_int_equal(remaining_of(lim, "conn|a", &c1, T0), 1);
    assert_int_equal(remaining_of(lim, "conn|b", &c2, T0), 2);
    assert_int_equal(sl_limiter_release(lim, token, strlen(token), T0), SL_ENOENT);
    assert_int_equal(check(lim, m, 2, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    /* Malformed tokens. */
    assert_int_equal(sl_limiter_release(lim, "", 0, T0), SL_EINVAL);
    assert_int_equal(sl_limiter_release(lim, "xyz", 3, T0), SL_EINVAL);
    assert_int_equal(sl_limiter_release(lim, token, strlen(token) - 1, T0), SL_EINVAL);
    token[3] = 'g';
    assert_int_equal(sl_limiter_release(lim, token, strlen(token), T0), SL_EINVAL);
    sl_limiter_free(lim);
}

static void test_full_table_denies_new_keys(void **st)
{
    struct sl_limit l = limit_of(SL_ALGO_FIXED_WINDOW, 10, MIN);
    struct sl_match m;
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_DENY, 64 << 10);
    int rc = SL_OK;
    unsigned k;

    (void)st;
    for (k = 0; k < 100000 && rc == SL_OK; k++) {
        char key[32];
        snprintf(key, sizeof(key), "key-%u", k);
        match_of(&m, key, &l, NULL);
        rc = check(lim, &m, 1, 1, T0, &res);
    }
    assert_int_equal(rc, SL_EFULL);
    assert_int_equal(res.verdict, SL_DENY);
    /* Keys already tracked keep working. */
    match_of(&m, "key-0", &l, NULL);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.statuses[0].d.remaining, 8);
    sl_limiter_free(lim);
}

static void test_reset_forgets_every_limit(void **st)
{
    struct sl_limit a = limit_of(SL_ALGO_FIXED_WINDOW, 1, MIN);
    struct sl_limit b = limit_of(SL_ALGO_GCRA, 1, MIN);
    struct sl_match m;
    struct sl_result res;
    sl_limiter *lim = limiter(SL_ON_FULL_EVICT, 1 << 20);

    (void)st;
    match_of(&m, "r", &a, &b);
    assert_int_equal(sl_limiter_reset(lim, &m, 1), SL_ENOENT);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_int_equal(sl_limiter_reset(lim, &m, 1), SL_OK);
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    m.key_len = SL_KEY_MAX; /* the longest key still has room for the id */
    assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
    assert_int_equal(sl_limiter_reset(lim, &m, 1), SL_OK);
    m.key_len = SL_KEY_MAX + 1;
    assert_int_equal(sl_limiter_reset(lim, &m, 1), SL_ETOOBIG);
    sl_limiter_free(lim);
}

/* In a full table, making room for one limit of a request never evicts
 * another limit of the same request (they are pinned): every limit of the
 * admitted request is counted. */
static void test_own_entries_survive_eviction(void **st)
{
    struct sl_limiter_config c;
    struct sl_limit ls[SL_MAX_LIMITS];
    struct sl_match m;
    struct sl_result res;
    struct sl_table_stats s;
    sl_limiter *lim;

    (void)st;
    sl_limiter_config_init(&c);
    c.table.max_bytes = 64 << 10;
    c.table.shards = 1;
    assert_int_equal(sl_limiter_new(&c, &lim), SL_OK);
    memset(&m, 0, sizeof(m));
    for (int i = 0; i < SL_MAX_LIMITS; i++) {
        ls[i] = limit_of(SL_ALGO_FIXED_WINDOW, 10 + (uint64_t)i, MIN);
        m.limits[m.n_limits++] = &ls[i];
    }
    /* Fill the table with other live keys, of another limit (the summary
     * of what they owe, once evicted, is that limit's alone), until it
     * evicts. */
    struct sl_limit filler = limit_of(SL_ALGO_FIXED_WINDOW, 1000, MIN);
    s.evictions = 0;
    for (unsigned k = 0; s.evictions == 0; k++) {
        struct sl_match other;
        char key[32];
        snprintf(key, sizeof(key), "filler-%u", k);
        match_of(&other, key, &filler, NULL);
        assert_int_equal(check(lim, &other, 1, 1, T0, &res), SL_OK);
        sl_table_stats(sl_limiter_table(lim), &s);
    }
    for (unsigned r = 0; r < 20; r++) {
        char key[32];
        snprintf(key, sizeof(key), "req-%u", r);
        m.key_len = strlen(key);
        memcpy(m.key, key, m.key_len);
        assert_int_equal(check(lim, &m, 1, 1, T0, &res), SL_OK);
        assert_int_equal(res.verdict, SL_ALLOW);
        for (int i = 0; i < SL_MAX_LIMITS; i++)
            assert_int_equal(remaining_of(lim, key, &ls[i], T0), sl_limit_quota(&ls[i]) - 1);
    }
    sl_limiter_free(lim);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_or_nothing_across_limits),
        cmocka_unit_test(test_no_counter_pollution_across_descriptors),
        cmocka_unit_test(test_status_picks_per_c2),
        cmocka_unit_test(test_delay_is_longest),
        cmocka_unit_test(test_limit_change_restarts_state),
        cmocka_unit_test(test_caps_and_errors),
        cmocka_unit_test(test_shadow_never_denies),
        cmocka_unit_test(test_peek_and_costs),
        cmocka_unit_test(test_unlimited_and_unmatched),
        cmocka_unit_test(test_duplicate_descriptors_sum),
        cmocka_unit_test(test_count_rejected_records_denial),
        cmocka_unit_test(test_leases_release),
        cmocka_unit_test(test_full_table_denies_new_keys),
        cmocka_unit_test(test_reset_forgets_every_limit),
        cmocka_unit_test(test_own_entries_survive_eviction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
