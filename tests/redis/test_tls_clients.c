/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_tls_clients.c - the stores' Redis clients that sit on the Redis
 * link (link/rlink.h), against a redis-server that speaks TLS only and
 * requires a client certificate:
 *
 *  - the rules subscriber (rules_sync_sub.c) subscribes over TLS, hears a
 *    rule pushed by the blocking client (rules_sync.c) and pulls it into
 *    its rules database;
 *  - the hybrid store's sync connection (hybrid_sync.c) connects, loads
 *    its script and syncs over TLS, and its final push, when the store is
 *    freed, reaches Redis over TLS too;
 *  - with a CA that did not sign the server's certificate, neither the
 *    subscriber nor the hybrid store is ever connected (while a clear-text
 *    control on the same loop is).
 *
 * The certificates are made by the openssl command (tls_pki.h). It does
 * not test the link itself (test_rlink.c, test_rlink_sync.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "hybrid.h"
#include "redis_server.h"
#include "tls_pki.h"
#include "rlink.h"
#include "rules_sync.h"
#include "rulesdb.h"
#include "store_wait.h"

#define S     INT64_C(1000000000)
#define T0_NS INT64_C(1760000000000000000)

static struct rs_server tls, plain;
static char dir[512];
static uv_loop_t loop;
static uv_timer_t tick;

static const char yaml[] = "domain: d1\n"
                           "descriptors:\n"
                           "  - key: user\n"
                           "    rate_limit: {unit: minute, requests_per_unit: 10}\n";

static int setup(void **state)
{
    (void)state;
    if (tls_pki_make(dir, sizeof(dir)) != 0)
        return -1;
    tls.tls_dir = dir;
    if (rs_start(&tls) != 0 || rs_start(&plain) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
    rs_stop(&tls);
    rs_stop(&plain);
    tls_pki_remove(dir);
    return 0;
}

/* store.redis.tls with the test's CA (`ca`) and client certificate. */
static void tls_set(struct sl__redis_tls *t, const char *ca)
{
    memset(t, 0, sizeof(*t));
    t->on = t->verify = true;
    snprintf(t->ca_file, sizeof(t->ca_file), "%s/%s", dir, ca);
    snprintf(t->cert_file, sizeof(t->cert_file), "%s/client.pem", dir);
    snprintf(t->key_file, sizeof(t->key_file), "%s/client.key", dir);
}

/* One command over the blocking link to the TLS server: its integer. */
static long long tls_integer(const char *a0, const char *a1)
{
    struct sl__rlink_tls t;
    struct sl__redis_tls set;
    struct sl__rlink_conf c = {.tls = &t};
    const char *argv[2] = {a0, a1};
    size_t lens[2] = {strlen(a0), a1 != NULL ? strlen(a1) : 0};
    char err[256];
    struct sl__rlink_sync *s;
    redisReply *r;
    long long n;

    tls_set(&set, "ca.pem");
    assert_int_equal(sl__rlink_tls_init(&t, &set), SL_OK);
    s = sl__rlink_sync_open(&c, "127.0.0.1", tls.port, 2000, err, sizeof(err));
    if (s == NULL)
        fail_msg("%s", err);
    r = sl__rlink_sync_argv(s, a1 != NULL ? 2 : 1, argv, lens, err, sizeof(err));
    if (r == NULL)
        fail_msg("%s", err);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    n = r->integer;
    freeReplyObject(r);
    sl__rlink_sync_close(s);
    sl__rlink_tls_close(&t);
    return n;
}

/* ---------------------------------------------------------- rules sync */

static void rsync_cfg(struct sl__rsync_config *c, int port, const char *ca)
{
    sl__rsync_config_init(c);
    snprintf(c->seeds[0].host, sizeof(c->seeds[0].host), "127.0.0.1");
    c->seeds[0].port = port;
    c->n_seeds = 1;
    c->timeout_ms = 1000;
    if (ca != NULL)
        tls_set(&c->tls, ca);
}

static void test_rules_subscriber_over_tls(void **state)
{
    struct sl__rsync_config c;
    struct sl__rsync_stats st = {0};
    struct sl__rsync *sub = NULL;
    char db[1100];

    (void)state;
    rsync_cfg(&c, tls.port, "ca.pem");
    snprintf(db, sizeof(db), "%s/sub.db", dir);
    assert_int_equal(sl__rsync_start(&loop, &c, db, NULL, NULL, &sub), SL_OK);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 10000; uv_now(&loop) < end; uv_run(&loop, UV_RUN_ONCE)) {
        sl__rsync_stats(sub, &st);
        if (st.subscribed && st.pulls > 0)
            break;
    }
    assert_true(st.subscribed);
    assert_int_equal(sl__rsync_push(&c, "over-tls", yaml, strlen(yaml), NULL), SL_OK);
    for (uint64_t end = uv_now(&loop) + 10000; uv_now(&loop) < end; uv_run(&loop, UV_RUN_ONCE)) {
        sl__rsync_stats(sub, &st);
        if (st.applied > 0)
            break;
    }
    assert_true(st.messages >= 1);
    assert_true(st.applied >= 1);
    sl__rsync_stop(sub);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
}

/* A wrong CA: never subscribed, while a clear-text subscriber on the
 * same loop subscribes and pulls several times over. */
static void test_rules_subscriber_wrong_ca(void **state)
{
    struct sl__rsync_config bad, good;
    struct sl__rsync_stats sb = {0}, sg = {0};
    struct sl__rsync *b = NULL, *g = NULL;
    char db[1100];
    bool ever = false;

    (void)state;
    rsync_cfg(&bad, tls.port, "other_ca.pem");
    rsync_cfg(&good, plain.port, NULL);
    good.period_ms = 50;
    snprintf(db, sizeof(db), "%s/wrong.db", dir);
    assert_int_equal(sl__rsync_start(&loop, &bad, db, NULL, NULL, &b), SL_OK);
    assert_int_equal(sl__rsync_start(&loop, &good, db, NULL, NULL, &g), SL_OK);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 10000; uv_now(&loop) < end; uv_run(&loop, UV_RUN_ONCE)) {
        sl__rsync_stats(b, &sb);
        sl__rsync_stats(g, &sg);
        ever = ever || sb.subscribed;
        if (sg.subscribed && sg.pulls >= 5)
            break;
    }
    assert_true(sg.subscribed);
    assert_false(ever);
    sl__rsync_stop(b);
    sl__rsync_stop(g);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
}

/* ---------------------------------------------------------- hybrid */

struct one {
    struct sl_limit l;
    struct sl_match m;
    struct sl_entry e;
    struct sl_descriptor d;
    struct sl_request req;
};

static void one_init(struct one *o, const char *key)
{
    memset(o, 0, sizeof(*o));
    sl_limit_init(&o->l);
    o->l.algo = SL_ALGO_FIXED_WINDOW;
    o->l.requests = 1000;
    o->l.period_ns = 60 * S;
    assert_int_equal(sl_limit_validate(&o->l, NULL), SL_OK);
    sl_limit_finish(&o->l);
    o->m.limits[0] = &o->l;
    o->m.n_limits = 1;
    o->m.key_len = (size_t)snprintf(o->m.key, sizeof(o->m.key), "%s", key);
    o->e.key = (struct sl_str){"k", 1};
    o->e.value = (struct sl_str){o->m.key, o->m.key_len};
    o->d.entries = &o->e;
    o->d.n_entries = 1;
    o->d.hits = -1;
    o->req.domain = (struct sl_str){"d", 1};
    o->req.descriptors = &o->d;
    o->req.n_descriptors = 1;
    o->req.hits = 1;
}

static void check_on(struct sl__store *st, struct one *o, int64_t now)
{
    struct sl__store_req q = {.req = &o->req, .m = &o->m, .n = 1};
    struct answer a;

    memset(&a, 0, sizeof(a));
    o->req.now_ns = now;
    assert_int_equal(st->ops->check(st, &q, sw_on_answer, &a), SL_OK);
    assert_true(a.done);
    assert_int_equal(a.err, SL_OK);
}

static struct sl__hybrid_stats hstats(const struct sl__store *st)
{
    struct sl__hybrid_stats s;

    sl__store_hybrid_stats(st, &s);
    return s;
}

static void hybrid_cfg(struct sl__redis_config *r, struct sl__hybrid_config *h, int port,
                       const char *ca)
{
    sl__redis_config_init(r);
    r->port = port;
    r->timeout_ms = 200;
    if (ca != NULL)
        tls_set(&r->tls, ca);
    memset(h, 0, sizeof(*h));
    h->sync_interval_ms = 50;
    h->timeout_ms = 1000;
    h->max_keys = 64;
    h->batch = 16;
    h->max_bytes = 1u << 20;
    h->manual_sync = true;
    h->redis = r;
}

static void test_hybrid_syncs_over_tls(void **state)
{
    struct sl__redis_config rcfg;
    struct sl__hybrid_config hcfg;
    struct sl__store *st = NULL;
    struct one o;
    int64_t now = T0_NS;
    long long keys0 = tls_integer("DBSIZE", NULL), keys1;

    (void)state;
    hybrid_cfg(&rcfg, &hcfg, tls.port, "ca.pem");
    assert_int_equal(sl__store_hybrid_new(&loop, &hcfg, &st), SL_OK);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 10000; !hstats(st).connected && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(hstats(st).connected);
    /* a sync carries a local count to Redis */
    one_init(&o, "tls-sync");
    check_on(st, &o, now);
    sl__store_hybrid_sync(st, now);
    assert_int_equal(hstats(st).syncs, 1);
    for (uint64_t end = uv_now(&loop) + 10000; hstats(st).in_flight > 0 && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(hstats(st).in_flight, 0);
    assert_int_equal(hstats(st).sync_failures, 0);
    keys1 = tls_integer("DBSIZE", NULL);
    assert_true(keys1 > keys0);
    /* a count not synced yet goes with the final push, over TLS too */
    one_init(&o, "tls-final");
    check_on(st, &o, now + S);
    sl__store_free(st);
    assert_true(tls_integer("DBSIZE", NULL) > keys1);
}

static void test_hybrid_wrong_ca(void **state)
{
    struct sl__redis_config rbad, rgood;
    struct sl__hybrid_config hbad, hgood;
    struct sl__store *bad = NULL, *good = NULL;
    bool ever = false;

    (void)state;
    hybrid_cfg(&rbad, &hbad, tls.port, "other_ca.pem");
    hybrid_cfg(&rgood, &hgood, plain.port, NULL);
    assert_int_equal(sl__store_hybrid_new(&loop, &hbad, &bad), SL_OK);
    assert_int_equal(sl__store_hybrid_new(&loop, &hgood, &good), SL_OK);
    uv_update_time(&loop);
    /* the good one connected, and the bad one has had time to fail a few
     * connections (the backoff starts at 50 ms) */
    uint64_t t0 = uv_now(&loop);
    for (uint64_t end = t0 + 10000; uv_now(&loop) < end; uv_run(&loop, UV_RUN_ONCE)) {
        ever = ever || hstats(bad).connected;
        if (hstats(good).connected && uv_now(&loop) >= t0 + 500)
            break;
    }
    assert_true(hstats(good).connected);
    assert_false(ever);
    sl__store_free(bad);
    sl__store_free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_subscriber_over_tls),
        cmocka_unit_test(test_rules_subscriber_wrong_ca),
        cmocka_unit_test(test_hybrid_syncs_over_tls),
        cmocka_unit_test(test_hybrid_wrong_ca),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
