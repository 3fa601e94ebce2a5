/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_limiter_batch.c - sl_limiter_check_batch decides exactly as the same
 * requests one at a time: two limiters with the same secret, one fed random
 * pipelines as batches, the other the same requests through
 * sl_limiter_check / sl_limiter_check_matched, compared item by item
 * (return code, verdict, delay, every status, the lease token). The
 * pipelines mix every algorithm, rules with several limits per descriptor,
 * requests of several descriptors, ad hoc limits (as CL.THROTTLE sends),
 * peeks (cost 0), concurrency leases, and errors in the middle of a batch;
 * one run uses a table larger than the caches so the prefetch path runs.
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

#define T0    (INT64_C(1700000040) * SL_NS_PER_S)
#define MAXB  37 /* items per pipeline: not a multiple of the internal group */
#define NALGO SL_ALGO_BARE_N

static const char rules_text[] =
    "domain: d\n"
    "descriptors:\n"
    "  - key: tb\n"
    "    limits: [{algorithm: token_bucket, requests: 5, period: 1s, name: tb}]\n"
    "  - key: gc\n"
    "    limits: [{algorithm: gcra, requests: 5, period: 1s, name: gc}]\n"
    "  - key: lb\n"
    "    limits: [{algorithm: leaky_bucket, requests: 5, period: 1s, name: lb}]\n"
    "  - key: fw\n"
    "    limits: [{algorithm: fixed_window, requests: 5, period: 1s, name: fw}]\n"
    "  - key: sw\n"
    "    limits: [{algorithm: sliding_window, requests: 5, period: 1s, name: sw}]\n"
    "  - key: sl\n"
    "    limits: [{algorithm: sliding_log, requests: 5, period: 1s, name: sl}]\n"
    "  - key: cc\n"
    "    limits: [{algorithm: concurrency, requests: 3, lease: 1s, name: cc}]\n"
    "  - key: multi\n"
    "    limits:\n"
    "      - {algorithm: fixed_window, requests: 8, period: 1s, name: burst}\n"
    "      - {algorithm: sliding_log, requests: 2, period: 200ms, name: spacing}\n"
    "      - {algorithm: token_bucket, requests: 20, period: 10s, name: slow}\n"
    "  - key: shadow\n"
    "    shadow_mode: true\n"
    "    limits: [{algorithm: gcra, requests: 2, period: 1s, name: shadow}]\n"
    "  - key: free\n"
    "    rate_limit: {unlimited: true}\n"
    "  - key: q1\n"
    "    quota_mode: true\n"
    "    rate_limit: {unit: second, requests_per_unit: 2}\n"
    "  - key: banned\n"
    "    rate_limit: {unit: second, requests_per_unit: 0, name: banned}\n"
    "  - key: qb\n"
    "    quota_mode: true\n"
    "    rate_limit: {unit: second, requests_per_unit: 0}\n"
    "  - key: sb\n"
    "    shadow_mode: true\n"
    "    rate_limit: {unit: second, requests_per_unit: 0}\n";

/* A domain that denies what no rule matches (most keys above). */
static const char unmatched_text[] = "domain: u\n"
                                     "on_unmatched: deny\n"
                                     "descriptors:\n"
                                     "  - key: tb\n"
                                     "    limits: [{algorithm: token_bucket, requests: 5, period: "
                                     "1s, name: utb}]\n"
                                     "  - key: free\n"
                                     "    rate_limit: {unlimited: true}\n";

static const char *const rule_keys[] = {"tb",    "gc",     "lb",   "fw", "sw",     "sl", "cc",
                                        "multi", "shadow", "free", "q1", "banned", "qb", "sb"};
#define NKEYS_RULE (sizeof(rule_keys) / sizeof(rule_keys[0]))

/* A value that makes a counter key longer than SL_KEY_MAX. */
static char long_value[SL_KEY_MAX + 16];

struct fx {
    sl_rules *rules;
    sl_limiter *a, *b;
    struct sl_limit adhoc[NALGO];
};

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static sl_limiter *limiter_of(size_t max_bytes)
{
    struct sl_limiter_config c;
    sl_limiter *l;

    sl_limiter_config_init(&c);
    c.table.max_bytes = max_bytes;
    c.table.shards = 4;
    memset(c.table.secret, 3, sizeof(c.table.secret));
    assert_int_equal(sl_limiter_new(&c, &l), SL_OK);
    return l;
}

static void fx_init(struct fx *f, size_t max_bytes)
{
    sl_rules_builder *b = sl_rules_builder_new();

    memset(long_value, 'x', sizeof(long_value));
    assert_int_equal(
        sl_rules_builder_add_yaml(b, rules_text, strlen(rules_text), "d.yaml", SL_SRC_FILE), SL_OK);
    assert_int_equal(
        sl_rules_builder_add_yaml(b, unmatched_text, strlen(unmatched_text), "u.yaml", SL_SRC_FILE),
        SL_OK);
    if (sl_rules_build(b, &f->rules) != SL_OK)
        for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
            fprintf(stderr, "%s\n", sl_rules_builder_diag(b, i));
    assert_non_null(f->rules);
    sl_rules_builder_free(b);
    f->a = limiter_of(max_bytes);
    f->b = limiter_of(max_bytes);
    for (int i = 0; i < NALGO; i++) {
        struct sl_limit *l = &f->adhoc[i];
        sl_limit_init(l);
        l->algo = (enum sl_algo)i;
        l->requests = 4;
        l->period_ns = SL_NS_PER_S;
        l->name = "adhoc";
        if (l->algo == SL_ALGO_CONCURRENCY)
            l->lease_ns = SL_NS_PER_S;
        assert_int_equal(sl_limit_validate(l, NULL), SL_OK);
        sl_limit_finish(l);
    }
}

static void fx_free(struct fx *f)
{
    sl_limiter_free(f->a);
    sl_limiter_free(f->b);
    sl_rules_unref(f->rules);
}

/* Everything one pipelined request needs, kept until the batch is done. */
struct req {
    struct sl_request r;
    struct sl_descriptor d[SL_MAX_DESCRIPTORS + 1];
    struct sl_entry e[SL_MAX_DESCRIPTORS + 1];
    char vals[SL_MAX_DESCRIPTORS + 1][16];
    struct sl_match m;
    bool matched;
    size_t nm;
};

static void assert_same(const struct sl_limiter_item *it, int rc, const struct sl_result *r)
{
    const struct sl_result *x = it->res;

    assert_int_equal(it->rc, rc);
    if (rc != SL_OK)
        return;
    assert_int_equal(x->verdict, r->verdict);
    assert_int_equal(x->delay_ns, r->delay_ns);
    assert_int_equal(x->n_statuses, r->n_statuses);
    assert_string_equal(x->lease, r->lease);
    for (size_t i = 0; i < r->n_statuses; i++) {
        const struct sl_status *s = &x->statuses[i], *t = &r->statuses[i];
        assert_ptr_equal(s->limit, t->limit);
        assert_int_equal(s->shadow_denied, t->shadow_denied);
        assert_int_equal(s->d.verdict, t->d.verdict);
        assert_int_equal(s->d.quota, t->d.quota);
        assert_int_equal(s->d.remaining, t->d.remaining);
        assert_int_equal(s->d.reset_ns, t->d.reset_ns);
        assert_int_equal(s->d.retry_after_ns, t->d.retry_after_ns);
        assert_int_equal(s->d.delay_ns, t->d.delay_ns);
    }
}

/* One random request into q and its batch item; the kinds of error a
 * pipeline may carry in the middle (too many descriptors, a key too long,
 * a match with no limit, no result) come up about one item in twelve.
 * Rules requests go now and then to the domain that denies unmatched
 * descriptors, bring their own limit (Envoy's override) or a value too
 * long for a counter key. */
static void make(struct fx *f, struct req *q, struct sl_limiter_item *it, struct sl_result *res,
                 unsigned nkeys, int64_t now, uint64_t *seed)
{
    uint64_t x = rnd(seed);
    unsigned kind = (unsigned)(x % 12);

    memset(it, 0, sizeof(*it));
    memset(&q->r, 0, sizeof(q->r));
    q->r.now_ns = now;
    q->r.hits = (x >> 8) % 5 == 0 ? 0 : 1 + (x >> 12) % 2;
    it->req = &q->r;
    it->res = res;
    if (kind < 5) { /* a rules request of 1-3 descriptors */
        size_t nd = 1 + (x >> 16) % 3;
        q->r.domain = (x >> 24) % 8 == 0 ? (struct sl_str){"u", 1} : (struct sl_str){"d", 1};
        for (size_t i = 0; i < nd; i++) {
            uint64_t y = rnd(seed);
            const char *k = rule_keys[y % NKEYS_RULE];
            int n = snprintf(q->vals[i], sizeof(q->vals[i]), "v%u", (unsigned)((y >> 8) % nkeys));
            q->e[i].key = (struct sl_str){k, strlen(k)};
            q->e[i].value = (struct sl_str){q->vals[i], (size_t)n};
            if ((y >> 44) % 64 == 0)
                q->e[i].value = (struct sl_str){long_value, sizeof(long_value)};
            q->d[i] = (struct sl_descriptor){&q->e[i], 1, (y >> 40) % 7 == 0 ? 2 : -1, NULL};
            if ((y >> 50) % 10 == 0)
                q->d[i].limit = &f->adhoc[SL_ALGO_FIXED_WINDOW];
        }
        q->r.descriptors = q->d;
        q->r.n_descriptors = nd;
        it->rules = f->rules;
    } else if (kind < 10) { /* an ad hoc limit, as CL.THROTTLE */
        uint64_t y = rnd(seed);
        int n = snprintf(q->m.key, sizeof(q->m.key), "adhoc:%u", (unsigned)(y % nkeys));
        q->m.key_len = (size_t)n;
        q->m.limits[0] = &f->adhoc[(y >> 20) % NALGO];
        q->m.n_limits = 1;
        q->m.unlimited = false;
        q->m.detailed_metric = NULL;
        it->m = &q->m;
        it->n = 1;
    } else if (kind == 10) { /* rules, too many descriptors: SL_ETOOBIG */
        q->r.domain = (struct sl_str){"d", 1};
        for (size_t i = 0; i <= SL_MAX_DESCRIPTORS; i++) {
            q->e[i].key = (struct sl_str){"tb", 2};
            q->e[i].value = (struct sl_str){"x", 1};
            q->d[i] = (struct sl_descriptor){&q->e[i], 1, -1, NULL};
        }
        q->r.descriptors = q->d;
        q->r.n_descriptors = SL_MAX_DESCRIPTORS + 1;
        it->rules = f->rules;
    } else { /* a match with a NULL limit (SL_EINVAL), or no result */
        q->m.key_len = 3;
        memcpy(q->m.key, "bad", 3);
        q->m.limits[0] = NULL;
        q->m.n_limits = 1;
        q->m.unlimited = false;
        it->m = &q->m;
        it->n = 1;
        if ((x >> 30) % 2)
            it->res = NULL;
    }
}

/* `rounds` pipelines of 1..MAXB requests over keys among `nkeys`, time
 * advancing by up to step_ns a request; returns the denials seen. */
static unsigned compare(struct fx *f, unsigned nkeys, int rounds, int64_t step_ns, uint64_t seed)
{
    static struct req q[MAXB];
    static struct sl_result ra[MAXB], rb;
    static char lb[MAXB][sizeof(rb.lease)];
    struct sl_limiter_item it[MAXB];
    int64_t now = T0;
    unsigned denied = 0;

    for (int round = 0; round < rounds; round++) {
        size_t n = 1 + rnd(&seed) % MAXB;
        for (size_t i = 0; i < n; i++) {
            now += (int64_t)(rnd(&seed) % (uint64_t)step_ns);
            make(f, &q[i], &it[i], &ra[i], nkeys, now, &seed);
        }
        assert_int_equal(sl_limiter_check_batch(f->a, it, n), SL_OK);
        for (size_t i = 0; i < n; i++) {
            int rc;
            memset(&rb, 0, sizeof(rb));
            if (it[i].res == NULL)
                rc = SL_EINVAL;
            else if (it[i].rules != NULL)
                rc = sl_limiter_check(f->b, it[i].rules, it[i].req, &rb);
            else
                rc = sl_limiter_check_matched(f->b, it[i].m, it[i].n, it[i].req, &rb);
            assert_same(&it[i], rc, &rb);
            if (rc == SL_OK) {
                denied += rb.verdict == SL_DENY;
                memcpy(lb[i], rb.lease, sizeof(rb.lease));
            }
        }
        /* give some leases back, after the pipeline, on both */
        for (size_t i = 0; i < n; i++)
            if (it[i].res != NULL && it[i].rc == SL_OK && ra[i].lease[0] != '\0' && rnd(&seed) % 2)
                assert_int_equal(sl_limiter_release(f->a, ra[i].lease, strlen(ra[i].lease), now),
                                 sl_limiter_release(f->b, lb[i], strlen(lb[i]), now));
    }
    return denied;
}

/* Few keys: the same key comes up several times in one pipeline, and the
 * limits are reached. */
static void test_batch_equals_one_at_a_time(void **st)
{
    struct fx f;

    (void)st;
    fx_init(&f, 8 << 20);
    assert_true(compare(&f, 6, 400, 20 * SL_NS_PER_MS, 0x51) > 100);
    assert_true(compare(&f, 50, 400, 2 * SL_NS_PER_MS, 0x52) > 0);
    fx_free(&f);
}

/* Many keys in a table larger than the caches: the batch prefetches. */
static void test_batch_large_table(void **st)
{
    struct fx f;
    struct sl_table_stats s;

    (void)st;
    fx_init(&f, 128 << 20);
    compare(&f, 400000, 12000, 1000, 0x77);
    sl_table_stats(sl_limiter_table(f.a), &s);
    assert_true(s.entries > 100000);
    compare(&f, 400000, 200, 1000, 0x78);
    fx_free(&f);
}

/* A small table: batches that evict agree too. */
static void test_batch_under_eviction(void **st)
{
    struct fx f;
    struct sl_table_stats s;

    (void)st;
    fx_init(&f, 96 << 10);
    compare(&f, 20000, 300, 1000, 0x99);
    sl_table_stats(sl_limiter_table(f.a), &s);
    assert_true(s.evictions > 0);
    fx_free(&f);
}

static void test_batch_arguments(void **st)
{
    struct fx f;
    struct sl_limiter_item it = {0};

    (void)st;
    fx_init(&f, 1 << 20);
    assert_int_equal(sl_limiter_check_batch(NULL, &it, 1), SL_EINVAL);
    assert_int_equal(sl_limiter_check_batch(f.a, NULL, 1), SL_EINVAL);
    assert_int_equal(sl_limiter_check_batch(f.a, NULL, 0), SL_OK);
    /* no request: the single call's SL_EINVAL, in the item */
    it.rules = f.rules;
    it.res = &(struct sl_result){0};
    assert_int_equal(sl_limiter_check_batch(f.a, &it, 1), SL_OK);
    assert_int_equal(it.rc, SL_EINVAL);
    fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_equals_one_at_a_time),
        cmocka_unit_test(test_batch_large_table),
        cmocka_unit_test(test_batch_under_eviction),
        cmocka_unit_test(test_batch_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
