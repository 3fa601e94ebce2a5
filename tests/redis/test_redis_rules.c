/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_redis_rules.c - the Redis store resolving requests with a rules
 * snapshot itself (sl__store_req.rules) decides as sl_limiter_check does
 * in memory: matching, Envoy `replaces`, `requests_per_unit: 0` (deny-all,
 * enforced and shadow), `quota_mode`, shadow descriptors and several limits
 * per descriptor, over random request sequences, compared field by field.
 *
 * Envoy quota_mode is covered (the second decision without the quota
 * descriptors that denied). It does not test failure handling
 * (test_redis_store.c does).
 */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "redis.h"
#include "redis_server.h"
#include "store_wait.h"

#define S     INT64_C(1000000000)
#define T0_NS INT64_C(1770000000000000000)

static const char yaml[] = "domain: api\n"
                           "descriptors:\n"
                           "  - key: user\n"
                           "    rate_limit: {unit: minute, requests_per_unit: 5, name: per_user}\n"
                           "    limits:\n"
                           "      - {algorithm: gcra, requests: 2, period: 1s, burst: 1}\n"
                           "  - key: user\n"
                           "    value: vip\n"
                           "    rate_limit: {unit: minute, requests_per_unit: 50, name: vip,\n"
                           "                 replaces: [{name: per_path}]}\n"
                           "  - key: path\n"
                           "    rate_limit: {unit: second, requests_per_unit: 3, name: per_path}\n"
                           "    limits:\n"
                           "      - {algorithm: sliding_log, requests: 4, period: 10s,\n"
                           "         min_interval: 100ms}\n"
                           "  - key: banned\n"
                           "    rate_limit: {unit: hour, requests_per_unit: 0}\n"
                           "  - key: watched\n"
                           "    shadow_mode: true\n"
                           "    rate_limit: {unit: minute, requests_per_unit: 2}\n"
                           "  - key: soft\n"
                           "    rate_limit: {unit: hour, requests_per_unit: 0}\n"
                           "    shadow_mode: true\n"
                           "  - key: q1\n"
                           "    quota_mode: true\n"
                           "    rate_limit: {unit: minute, requests_per_unit: 2}\n"
                           "  - key: q2\n"
                           "    quota_mode: true\n"
                           "    limits: [{algorithm: token_bucket, requests: 4, period: 1m,\n"
                           "              count_rejected: true}]\n";

static struct rs_server server;
static uv_loop_t loop;
static uv_timer_t tick;
static sl_limiter *mem, *fallback;
static sl_rules *rules;
static struct sl__store *store;
static uint64_t rng = 0x2545F4914F6CDD1Du;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int setup(void **state)
{
    struct sl_limiter_config lc;
    struct sl__redis_config c;
    sl_rules_builder *b = sl_rules_builder_new();

    (void)state;
    if (b == NULL || sl_rules_builder_add_yaml(b, yaml, strlen(yaml), "test.yaml", SL_SRC_FILE) ||
        sl_rules_build(b, &rules) != SL_OK) {
        for (size_t i = 0; b != NULL && i < sl_rules_builder_ndiags(b); i++)
            fprintf(stderr, "%s\n", sl_rules_builder_diag(b, i));
        return -1;
    }
    sl_rules_builder_free(b);
    if (rs_start(&server) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    sl_limiter_config_init(&lc);
    lc.table.max_bytes = 8u << 20;
    if (sl_limiter_new(&lc, &mem) != SL_OK || sl_limiter_new(&lc, &fallback) != SL_OK)
        return -1;
    sl__redis_config_init(&c);
    c.port = server.port;
    c.timeout_ms = 2000; /* every decision from Redis */
    c.opts.slack_ms = 600000;
    c.olc_entries = 0; /* compare Redis's own answers */
    if (sl__store_redis_new(&loop, &c, fallback, &store) != SL_OK)
        return -1;
    for (int i = 0; i < 5000 && !sl__store_redis_ready(store); i++)
        uv_run(&loop, UV_RUN_ONCE);
    return sl__store_redis_ready(store) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sl__store_free(store);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
    sl_limiter_free(mem);
    sl_limiter_free(fallback);
    sl_rules_unref(rules);
    rs_stop(&server);
    return 0;
}

static bool same(const struct sl_result *a, const struct sl_result *b)
{
    if (a->verdict != b->verdict || a->delay_ns != b->delay_ns || a->n_statuses != b->n_statuses)
        return false;
    for (size_t i = 0; i < a->n_statuses; i++) {
        const struct sl_status *x = &a->statuses[i], *y = &b->statuses[i];
        if (memcmp(&x->d, &y->d, offsetof(struct sl_decision, lease)) != 0 ||
            x->limit != y->limit || x->shadow_denied != y->shadow_denied)
            return false;
    }
    return true;
}

static void dump(const char *who, const struct sl_result *r)
{
    fprintf(stderr, "%s: verdict=%d\n", who, r->verdict);
    for (size_t i = 0; i < r->n_statuses; i++)
        fprintf(stderr, "  [%zu] v=%d quota=%lld rem=%lld reset=%lld retry=%lld limit=%s sd=%d\n",
                i, r->statuses[i].d.verdict, (long long)r->statuses[i].d.quota,
                (long long)r->statuses[i].d.remaining, (long long)r->statuses[i].d.reset_ns,
                (long long)r->statuses[i].d.retry_after_ns,
                r->statuses[i].limit && r->statuses[i].limit->name ? r->statuses[i].limit->name
                                                                   : "-",
                r->statuses[i].shadow_denied);
}

static void test_rules_path_matches_sl_limiter_check(void **state)
{
    static const char *const keys[] = {"user", "path", "banned", "watched", "soft", "q1", "q2"};
    static const char *const users[] = {"u1", "u2", "vip"};
    static const char *const paths[] = {"/a", "/b"};
    int64_t now = T0_NS;
    int excused = 0; /* steps a quota descriptor denied but the request passed */

    (void)state;
    for (int step = 0; step < 600; step++) {
        struct sl_entry e[3];
        struct sl_descriptor d[3];
        struct sl_request req = {.domain = {"api", 3}, .descriptors = d, .hits = 1};
        struct sl__store_req q = {.req = &req, .rules = rules};
        struct sl_result a;
        struct answer b = {0};
        size_t nd = step < 3 ? 2 : 1 + rnd() % 3;

        now += (int64_t)(rnd() % 400) * 1000000;
        req.now_ns = now;
        req.hits = step < 3 ? 1 : rnd() % 8 == 0 ? 0 : 1 + rnd() % 2;
        for (size_t i = 0; i < nd; i++) {
            /* the first three steps: q1 and q2 only, so that q1 (2 a
             * minute) denies while q2 (4) admits: quota_mode's recheck */
            const char *k = step < 3 ? keys[5 + (i % 2)] : keys[i == 0 ? 0 : rnd() % 7];
            const char *v = k[0] == 'u' ? users[rnd() % 3] : k[0] == 'p' ? paths[rnd() % 2] : "x";
            e[i].key = (struct sl_str){k, strlen(k)};
            e[i].value = (struct sl_str){v, strlen(v)};
            d[i] = (struct sl_descriptor){.entries = &e[i], .n_entries = 1, .hits = -1};
        }
        req.n_descriptors = nd;
        assert_int_equal(sl_limiter_check(mem, rules, &req, &a), SL_OK);
        assert_int_equal(store->ops->check(store, &q, sw_on_answer, &b), SL_OK);
        while (!b.done)
            uv_run(&loop, UV_RUN_ONCE);
        assert_int_equal(b.err, SL_OK);
        if (!same(&a, &b.res)) {
            fprintf(stderr, "step %d differs\n", step);
            dump("memory", &a);
            dump("redis", &b.res);
            fail();
        }
        for (size_t i = 0; a.verdict != SL_DENY && i < nd; i++)
            excused += a.statuses[i].d.verdict == SL_DENY;
    }
    assert_true(excused > 0); /* the quota_mode path was taken */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_path_matches_sl_limiter_check),
    };
    signal(SIGPIPE, SIG_IGN); /* as sluiced does: writing to a Redis that died is EPIPE */
    return cmocka_run_group_tests(tests, setup, teardown);
}
