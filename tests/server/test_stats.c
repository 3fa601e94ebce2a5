/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_stats.c - the operator's statistics (server/core/stats.h): the
 * per-second series merged over workers, seconds expiring as the ring
 * turns, the top limited keys (Space-Saving: the heavy key first, counts
 * never under the truth and over it by at most the error, windows
 * expiring), the privacy modes of keys, the keys of answers that came
 * after their start call (the ring, and losing them when it wrapped), the
 * cap on pairs, the store's round-trip quantiles, nothing allocated on the
 * writing side (the heap is counted through the linker's --wrap), and
 * writers racing a reader (under ThreadSanitizer too).
 */
#define _GNU_SOURCE /* memmem */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stats.h"

/* ------------------------------------------------------------ counting the heap */

static _Thread_local bool counting;
static unsigned long heap_calls;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n)
{
    heap_calls += counting;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    heap_calls += counting;
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    heap_calls += counting;
    return __real_realloc(p, n);
}

/* ------------------------------------------------------------ helpers */

#define T0 (INT64_C(1700000000) * SL_NS_PER_S) /* a second boundary */

static struct sl_limit user_limit = {.name = "api.user"};
static struct sl_limit path_limit = {.name = "api.path"};

static const uint8_t secret[16] = {1, 2, 3};

static struct sl__stats_config config(void)
{
    return (struct sl__stats_config){.enabled = true,
                                     .max_series = 8,
                                     .top_keys = 4,
                                     .top_window_ms = 60000,
                                     .keys = SL__STATS_KEYS_VALUES,
                                     .key_bytes = 4};
}

static struct sl__stats *make(struct sl__stats_config c, unsigned workers)
{
    struct sl__stats *s = NULL;

    assert_int_equal(sl__stats_new(&c, workers, secret, &s), SL_OK);
    assert_non_null(s);
    return s;
}

/* One decision of `user` (and of `path` if non-NULL) on worker w at t. */
static void decide(struct sl__stats *s, unsigned w, int64_t t, const char *user, enum sl_verdict v,
                   bool shadow_denied)
{
    struct sl_entry e = {{"user", 4}, {user, strlen(user)}};
    struct sl_descriptor d = {&e, 1, -1, NULL};
    struct sl_request req = {{"api", 3}, &d, 1, 1, t};
    struct sl_result res = {.verdict = v, .n_statuses = 1};
    struct sl__stats_op so;

    res.statuses[0].limit = &user_limit;
    res.statuses[0].d.verdict = v;
    res.statuses[0].shadow_denied = shadow_denied;
    sl__stats_op_begin(&so, &req, NULL);
    sl__stats_result(s, w, "api", 3, &so, &res, t);
}

static const struct sl__stats_series_view *pair(const struct sl__stats_view *v, const char *limit)
{
    for (size_t i = 0; i < v->n_series; i++)
        if (v->series[i].limit_len == strlen(limit) &&
            memcmp(v->series[i].limit, limit, strlen(limit)) == 0)
            return &v->series[i];
    return NULL;
}

static bool key_is(const struct sl__stats_key_view *k, const char *user)
{
    char want[64];
    int n = snprintf(want, sizeof(want), "user%c%s", SL__STATS_US, user);

    return k->len == (size_t)n && memcmp(k->text, want, (size_t)n) == 0;
}

/* ------------------------------------------------------------ series */

static void series_merge_workers(void **state)
{
    struct sl__stats *s = make(config(), 2);
    struct sl__stats_view v;
    const struct sl__stats_series_view *p;

    (void)state;
    for (int i = 0; i < 5; i++)
        decide(s, 0, T0, "a", SL_ALLOW, false);
    for (int i = 0; i < 3; i++)
        decide(s, 1, T0 + SL_NS_PER_S / 2, "b", SL_DENY, false);
    decide(s, 1, T0 + SL_NS_PER_S, "b", SL_DELAY, false);
    decide(s, 0, T0 + SL_NS_PER_S, "c", SL_ALLOW, true);
    assert_int_equal(sl__stats_read(s, T0 + SL_NS_PER_S, 3, 10, &v), SL_OK);
    assert_int_equal(v.n_series, 1);
    p = pair(&v, "api.user");
    assert_non_null(p);
    assert_memory_equal(p->domain, "api", 3);
    /* seconds oldest first: T0-1, T0, T0+1 */
    assert_int_equal(p->n[0 * SL__ST_N + SL__ST_ALLOW], 0);
    assert_int_equal(p->n[1 * SL__ST_N + SL__ST_ALLOW], 5);
    assert_int_equal(p->n[1 * SL__ST_N + SL__ST_DENY], 3);
    assert_int_equal(p->n[2 * SL__ST_N + SL__ST_DELAY], 1);
    assert_int_equal(p->n[2 * SL__ST_N + SL__ST_ALLOW], 1);
    assert_int_equal(p->n[2 * SL__ST_N + SL__ST_SHADOW], 1);
    assert_int_equal(p->total[SL__ST_ALLOW], 6);
    assert_int_equal(p->total[SL__ST_DENY], 3);
    assert_int_equal(p->recent[SL__ST_DENY], 3);
    assert_int_equal(v.dropped, 0);
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

/* A second 15 minutes old is gone, even though its slot was reused only
 * by another worker's newer second, and a late answer counts now. */
static void series_expire(void **state)
{
    struct sl__stats *s = make(config(), 1);
    struct sl__stats_view v;
    int64_t later = T0 + (int64_t)SL__STATS_SECONDS * SL_NS_PER_S;

    (void)state;
    decide(s, 0, T0, "a", SL_DENY, false);
    decide(s, 0, later, "a", SL_ALLOW, false);
    decide(s, 0, T0 + SL_NS_PER_S, "a", SL_DENY, false); /* late: counted at `later` */
    assert_int_equal(sl__stats_read(s, later, SL__STATS_SECONDS, 10, &v), SL_OK);
    assert_int_equal(v.series[0].total[SL__ST_DENY], 1);
    assert_int_equal(v.series[0].total[SL__ST_ALLOW], 1);
    assert_int_equal(v.series[0].n[(SL__STATS_SECONDS - 1) * SL__ST_N + SL__ST_DENY], 1);
    sl__stats_view_free(&v);
    /* read far ahead: nothing in the window */
    assert_int_equal(sl__stats_read(s, later + 3600 * SL_NS_PER_S, 60, 10, &v), SL_OK);
    assert_int_equal(v.series[0].total[SL__ST_ALLOW] + v.series[0].total[SL__ST_DENY], 0);
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

static void pairs_capped(void **state)
{
    struct sl__stats_config c = config();
    struct sl__stats *s;
    struct sl__stats_view v;
    struct sl_result res = {.n_statuses = 2};
    struct sl__stats_op so;
    struct sl_entry e[2] = {{{"user", 4}, {"a", 1}}, {{"path", 4}, {"/x", 2}}};
    struct sl_descriptor d[2] = {{&e[0], 1, -1, NULL}, {&e[1], 1, -1, NULL}};
    struct sl_request req = {{"api", 3}, d, 2, 1, T0};

    (void)state;
    c.max_series = 1;
    s = make(c, 1);
    res.statuses[0].limit = &user_limit;
    res.statuses[1].limit = &path_limit;
    sl__stats_op_begin(&so, &req, NULL);
    sl__stats_result(s, 0, "api", 3, &so, &res, T0);
    sl__stats_result(s, 0, "api", 3, &so, &res, T0);
    assert_int_equal(sl__stats_read(s, T0, 1, 10, &v), SL_OK);
    assert_int_equal(v.n_series, 1);
    assert_int_equal(v.dropped, 2);
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

/* ------------------------------------------------------------ top keys */

static void top_heavy_first(void **state)
{
    struct sl__stats *s = make(config(), 2);
    struct sl__stats_view v;
    const struct sl__stats_series_view *p;
    char name[16];

    (void)state;
    /* 4 counters per worker; 20 light keys once each and a heavy one 50
     * times spread over both workers, interleaved */
    for (int i = 0; i < 50; i++) {
        decide(s, (unsigned)i & 1, T0, "mallory", SL_DENY, false);
        if (i < 20) {
            snprintf(name, sizeof(name), "u%d", i);
            decide(s, (unsigned)i & 1, T0, name, SL_DENY, false);
        }
        decide(s, 0, T0, "allowed-only", SL_ALLOW, false); /* never limited: never a key */
    }
    assert_int_equal(sl__stats_read(s, T0, 1, 3, &v), SL_OK);
    p = pair(&v, "api.user");
    assert_true(p->n_top >= 1 && p->n_top <= 3);
    assert_true(key_is(&p->top[0], "mallory"));
    assert_false(p->top[0].partial);
    /* Space-Saving: never under the truth, over it by at most err */
    assert_true(p->top[0].count >= 50);
    assert_true(p->top[0].count - p->top[0].err <= 50);
    for (size_t i = 1; i < p->n_top; i++) {
        assert_true(p->top[i].count <= p->top[i - 1].count);
        assert_false(key_is(&p->top[i], "allowed-only"));
    }
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

/* Space-Saving's guarantees against the truth, over a skewed random
 * stream with many more keys than counters (the heap and index churn). */
static void top_bounds_hold(void **state)
{
    struct sl__stats_config c = config();
    struct sl__stats *s;
    struct sl__stats_view v;
    enum { KEYS = 300, N = 30000 };
    static unsigned truth[KEYS];
    unsigned long long total = 0;
    uint64_t x = 88172645463325252ull;
    char name[16];

    (void)state;
    c.top_keys = 16;
    s = make(c, 1);
    memset(truth, 0, sizeof(truth));
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* key k with probability about 1/(k+1), Zipf-like */
        unsigned k = (unsigned)((x % 1000000) * (x % 1000000) / 1000000 * KEYS / 1000000);
        k = i % 5 == 0 ? (unsigned)(x % KEYS) : k % 8;
        truth[k]++;
        snprintf(name, sizeof(name), "k%u", k);
        decide(s, 0, T0, name, SL_DENY, false);
    }
    assert_int_equal(sl__stats_read(s, T0, 1, 100, &v), SL_OK);
    assert_int_equal(v.series[0].n_top, 16);
    for (size_t i = 0; i < v.series[0].n_top; i++) {
        const struct sl__stats_key_view *kv = &v.series[0].top[i];
        char text[SL__STATS_KEY_MAX + 1] = "";
        memcpy(text, kv->text, kv->len);
        unsigned k = (unsigned)strtoul(text + 6, NULL, 10); /* "user" US "k" */
        total += kv->count;
        assert_true(kv->count >= truth[k]);
        assert_true(kv->count - kv->err <= truth[k]);
    }
    assert_int_equal(total, N); /* Space-Saving's counts add up to the stream */
    for (unsigned k = 0; k < KEYS; k++) {
        if (truth[k] <= N / 16)
            continue;
        snprintf(name, sizeof(name), "k%u", k);
        bool found = false;
        for (size_t i = 0; i < v.series[0].n_top; i++)
            found |= key_is(&v.series[0].top[i], name);
        assert_true(found);
    }
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

static void top_windows_expire(void **state)
{
    struct sl__stats *s = make(config(), 1);
    struct sl__stats_view v;
    int64_t w = 60 * SL_NS_PER_S;

    (void)state;
    decide(s, 0, T0, "old", SL_DENY, false);
    decide(s, 0, T0 + w, "new", SL_DENY, false);
    assert_int_equal(sl__stats_read(s, T0 + w, 1, 10, &v), SL_OK);
    assert_int_equal(v.series[0].n_top, 2); /* this window and the one before */
    sl__stats_view_free(&v);
    decide(s, 0, T0 + 2 * w, "newer", SL_DENY, false); /* takes "old"'s window */
    assert_int_equal(sl__stats_read(s, T0 + 2 * w, 1, 10, &v), SL_OK);
    assert_int_equal(v.series[0].n_top, 2);
    assert_true(key_is(&v.series[0].top[0], "new") || key_is(&v.series[0].top[1], "new"));
    assert_false(key_is(&v.series[0].top[0], "old") || key_is(&v.series[0].top[1], "old"));
    sl__stats_view_free(&v);
    assert_int_equal(sl__stats_read(s, T0 + 4 * w, 1, 10, &v), SL_OK);
    assert_int_equal(v.series[0].n_top, 0);
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

static void keys_hash_and_truncate(void **state)
{
    struct sl__stats_config c = config();
    struct sl__stats *s;
    struct sl__stats_view v;

    (void)state;
    c.keys = SL__STATS_KEYS_HASH;
    s = make(c, 1);
    decide(s, 0, T0, "alice@example.com", SL_DENY, false);
    decide(s, 0, T0, "alice@example.com", SL_DENY, false);
    decide(s, 0, T0, "bob@example.com", SL_DENY, false);
    assert_int_equal(sl__stats_read(s, T0, 1, 10, &v), SL_OK);
    assert_int_equal(v.series[0].n_top, 2);
    assert_int_equal(v.series[0].top[0].count, 2);
    assert_int_equal(v.series[0].top[0].len, 16);
    assert_true(v.series[0].top[0].partial);
    assert_null(memmem(v.series[0].top[0].text, v.series[0].top[0].len, "alice", 5));
    sl__stats_view_free(&v);
    sl__stats_free(s);

    c.keys = SL__STATS_KEYS_TRUNCATE;
    c.key_bytes = 3;
    s = make(c, 1);
    decide(s, 0, T0, "alice", SL_DENY, false);
    decide(s, 0, T0, "alibaba", SL_DENY, false); /* the same 3 bytes: one key */
    decide(s, 0, T0, "al", SL_DENY, false);      /* short enough: kept whole */
    assert_int_equal(sl__stats_read(s, T0, 1, 10, &v), SL_OK);
    assert_int_equal(v.series[0].n_top, 2);
    assert_true(key_is(&v.series[0].top[0], "ali"));
    assert_int_equal(v.series[0].top[0].count, 2);
    assert_true(v.series[0].top[0].partial);
    assert_true(key_is(&v.series[0].top[1], "al"));
    assert_false(v.series[0].top[1].partial);
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

/* The value of key i of keys_across_words, lens[i] bytes; `last` its
 * last byte when not 0. */
static void word_value(char *value, size_t i, size_t len, char last)
{
    for (size_t j = 0; j < len; j++)
        value[j] = (char)('a' + (j * 7 + i) % 26);
    if (last != 0)
        value[len - 1] = last;
    value[len] = '\0';
}

/* key_is for values up to the longest kept whole. */
static bool text_is(const struct sl__stats_key_view *k, const char *user)
{
    size_t n = strlen(user);

    return k->len == 5 + n && memcmp(k->text, "user\x1f", 5) == 0 &&
           memcmp(k->text + 5, user, n) == 0;
}

/* Key texts of every length around the 8-byte words they are hashed and
 * published in ("user" US value: 7..17 bytes, and 96, the most kept)
 * come back byte for byte, each counted alone: keys that differ only in
 * their last, partial word are not one key. A longer one is cut to 96
 * bytes and marked partial. */
static void keys_across_words(void **state)
{
    static const size_t lens[] = {2, 3, 4, 10, 11, 12, 91};
    const size_t n = sizeof(lens) / sizeof(lens[0]);
    struct sl__stats_config c = config();
    struct sl__stats *s;
    struct sl__stats_view v;
    char value[100];

    (void)state;
    c.top_keys = 32;
    s = make(c, 1);
    for (size_t i = 0; i < n; i++) {
        word_value(value, i, lens[i], 0);
        for (size_t k = 0; k <= i; k++) /* key i limited i + 1 times */
            decide(s, 0, T0, value, SL_DENY, false);
        word_value(value, i, lens[i], 'Z'); /* all but its last byte the same: once */
        decide(s, 0, T0, value, SL_DENY, false);
    }
    word_value(value, 0, 92, 0); /* 97 bytes of text */
    decide(s, 0, T0, value, SL_DENY, false);
    assert_int_equal(sl__stats_read(s, T0, 1, 32, &v), SL_OK);
    assert_int_equal(v.series[0].n_top, 2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        bool found = false, found_z = false;
        char z[100];
        word_value(value, i, lens[i], 0);
        word_value(z, i, lens[i], 'Z');
        for (size_t t = 0; t < v.series[0].n_top; t++) {
            const struct sl__stats_key_view *k = &v.series[0].top[t];
            if (k->err == 0 && !k->partial && k->count == i + 1 && text_is(k, value))
                found = true;
            if (k->err == 0 && !k->partial && k->count == 1 && text_is(k, z))
                found_z = true;
        }
        assert_true(found);
        assert_true(found_z);
    }
    word_value(value, 0, 92, 0);
    for (size_t t = 0;; t++) {
        const struct sl__stats_key_view *k;
        assert_true(t < v.series[0].n_top);
        k = &v.series[0].top[t];
        if (k->len != SL__STATS_KEY_MAX || !k->partial)
            continue; /* the 96 bytes kept whole */
        assert_int_equal(k->count, 1);
        assert_memory_equal(k->text + 5, value, SL__STATS_KEY_MAX - 5);
        break;
    }
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

/* A store that answers after its start call: the key comes from the
 * ring; once the ring wrapped over it, the outcome still counts but the
 * key does not. */
static void keys_of_late_answers(void **state)
{
    struct sl__stats *s = make(config(), 1);
    struct sl__stats_view v;
    struct sl_entry e = {{"user", 4}, {"late", 4}};
    struct sl_descriptor d = {&e, 1, -1, NULL};
    struct sl_request req = {{"api", 3}, &d, 1, 1, T0};
    struct sl_result res = {.verdict = SL_DENY, .n_statuses = 1};
    struct sl__stats_op first, lost;

    (void)state;
    res.statuses[0].limit = &user_limit;
    res.statuses[0].d.verdict = SL_DENY;
    sl__stats_op_begin(&first, &req, NULL);
    sl__stats_op_keep(s, 0, &first);
    assert_null(first.req);
    e.value = (struct sl_str){"gone", 4};
    sl__stats_op_begin(&lost, &req, NULL);
    sl__stats_op_keep(s, 0, &lost);
    sl__stats_result(s, 0, "api", 3, &first, &res, T0); /* "late", from the ring */
    for (int i = 0; i < SL__STATS_RING / 8; i++) {      /* wrap the ring over "gone" */
        struct sl__stats_op o;
        sl__stats_op_begin(&o, &req, NULL);
        sl__stats_op_keep(s, 0, &o);
    }
    sl__stats_result(s, 0, "api", 3, &lost, &res, T0);
    assert_int_equal(sl__stats_read(s, T0, 1, 10, &v), SL_OK);
    assert_int_equal(v.series[0].total[SL__ST_DENY], 2);
    assert_int_equal(v.series[0].n_top, 1);
    assert_true(key_is(&v.series[0].top[0], "late"));
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

/* ------------------------------------------------------------ the store */

static void store_quantiles(void **state)
{
    struct sl__stats *s = make(config(), 2);
    struct sl__stats_view v;

    (void)state;
    for (int i = 0; i < 98; i++)
        sl__stats_store_call(s, (unsigned)i & 1, T0, 10000, false); /* 10 us */
    sl__stats_store_call(s, 0, T0, 5000000, true);                  /* 5 ms, failed */
    sl__stats_store_call(s, 1, T0, 5000000, true);
    assert_int_equal(sl__stats_read(s, T0, 2, 10, &v), SL_OK);
    assert_int_equal(v.store_calls[1], 100);
    assert_int_equal(v.store_failures[1], 2);
    assert_int_equal(v.store_calls[0], 0);
    /* within the histogram's resolution (1.5x) */
    assert_true(v.store_p50_ns[1] >= 10000 && v.store_p50_ns[1] <= 15000);
    assert_true(v.store_p99_ns[1] >= 5000000 && v.store_p99_ns[1] <= 7500000);
    assert_int_equal(v.store_p50_ns_recent, v.store_p50_ns[1]);
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

/* ------------------------------------------------------------ cost */

static void writers_do_not_allocate(void **state)
{
    struct sl__stats *s = make(config(), 1);
    char name[16];

    (void)state;
    decide(s, 0, T0, "warm", SL_DENY, false); /* the pair exists */
    heap_calls = 0;
    counting = true;
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "k%d", i % 50);
        decide(s, 0, T0 + i * (SL_NS_PER_S / 10), name, i % 3 ? SL_DENY : SL_ALLOW, i % 7 == 0);
        sl__stats_store_call(s, 0, T0 + i * (SL_NS_PER_S / 10), 1000 + i, i % 11 == 0);
    }
    counting = false;
    assert_int_equal(heap_calls, 0);
    sl__stats_free(s);
}

static void disabled_is_null(void **state)
{
    struct sl__stats_config c = config();
    struct sl__stats *s = (void *)1;

    (void)state;
    c.enabled = false;
    assert_int_equal(sl__stats_new(&c, 2, secret, &s), SL_OK);
    assert_null(s);
    assert_int_equal(sl__stats_bytes(NULL), 0);
}

/* ------------------------------------------------------------ threads */

struct racer {
    struct sl__stats *s;
    unsigned w;
};

static void *writer(void *arg)
{
    struct racer *r = arg;
    char name[16];

    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof(name), "k%d", i % 13);
        decide(r->s, r->w, T0 + (int64_t)(i / 1000) * SL_NS_PER_S, i % 2 ? name : "hot", SL_DENY,
               false);
        sl__stats_store_call(r->s, r->w, T0 + (int64_t)(i / 1000) * SL_NS_PER_S, 1000, false);
    }
    return NULL;
}

static void writers_race_a_reader(void **state)
{
    struct sl__stats *s = make(config(), 2);
    struct racer r[2] = {{s, 0}, {s, 1}};
    pthread_t t[2];
    struct sl__stats_view v;

    (void)state;
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, writer, &r[i]), 0);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(sl__stats_read(s, T0 + 20 * SL_NS_PER_S, 30, 5, &v), SL_OK);
        for (size_t p = 0; p < v.n_series; p++)
            for (size_t k = 0; k < v.series[p].n_top; k++)
                assert_true(v.series[p].top[k].len <= SL__STATS_KEY_MAX);
        sl__stats_view_free(&v);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(sl__stats_read(s, T0 + 19 * SL_NS_PER_S, 30, 5, &v), SL_OK);
    assert_int_equal(v.series[0].total[SL__ST_DENY], 40000);
    assert_true(key_is(&v.series[0].top[0], "hot"));
    sl__stats_view_free(&v);
    sl__stats_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(series_merge_workers),
        cmocka_unit_test(series_expire),
        cmocka_unit_test(pairs_capped),
        cmocka_unit_test(top_heavy_first),
        cmocka_unit_test(top_bounds_hold),
        cmocka_unit_test(top_windows_expire),
        cmocka_unit_test(keys_hash_and_truncate),
        cmocka_unit_test(keys_across_words),
        cmocka_unit_test(keys_of_late_answers),
        cmocka_unit_test(store_quantiles),
        cmocka_unit_test(writers_do_not_allocate),
        cmocka_unit_test(disabled_is_null),
        cmocka_unit_test(writers_race_a_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
