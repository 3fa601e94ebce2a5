/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_redis_shared.c - two nodes (two Redis stores, each with its own
 * memory fallback and over-limit cache, as two sluiced processes have)
 * sharing one real redis-server: for every algorithm, checks interleaved
 * from both nodes at one instant are admitted exactly up to the limit in
 * total, never more; and a reset on one node clears the other node's
 * over-limit cache through the reset announcement.
 *
 * It does not start sluiced (the store is what makes nodes agree; the
 * daemon's wiring is tested with the daemon) and does not stop Redis
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
#define T0_NS INT64_C(1760000000000000000) /* a whole minute */

static struct rs_server server;
static uv_loop_t loop;
static uv_timer_t tick;
static sl_limiter *mem[2];
static struct sl__store *node[2];
static unsigned key_no;

static bool olc_active(struct sl__store *s)
{
    struct sl__redis_stats st;

    sl__store_redis_stats(s, &st);
    return st.olc_active;
}

static int setup(void **state)
{
    struct sl__redis_config c;
    struct sl_limiter_config lc;

    (void)state;
    if (rs_start(&server) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    sl_limiter_config_init(&lc);
    lc.table.max_bytes = 8u << 20;
    sl__redis_config_init(&c);
    c.port = server.port;
    c.timeout_ms = 1000; /* no policy answers here: every check reaches Redis */
    c.opts.slack_ms = 600000;
    for (int i = 0; i < 2; i++)
        if (sl_limiter_new(&lc, &mem[i]) != SL_OK ||
            sl__store_redis_new(&loop, &c, mem[i], &node[i]) != SL_OK)
            return -1;
    for (int i = 0; i < 5000; i++) {
        if (sl__store_redis_ready(node[0]) && sl__store_redis_ready(node[1]) &&
            olc_active(node[0]) && olc_active(node[1]))
            return 0;
        uv_run(&loop, UV_RUN_ONCE);
    }
    return -1;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        sl__store_free(node[i]);
        sl_limiter_free(mem[i]);
    }
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
    rs_stop(&server);
    return 0;
}

struct one {
    struct sl_limit l;
    struct sl_match m;
    struct sl_entry e;
    struct sl_descriptor d;
    struct sl_request req;
};

static void one_init(struct one *o, const struct sl_limit *l)
{
    memset(o, 0, sizeof(*o));
    o->l = *l;
    assert_int_equal(sl_limit_validate(&o->l, NULL), SL_OK);
    sl_limit_finish(&o->l);
    o->m.limits[0] = &o->l;
    o->m.n_limits = 1;
    o->m.key_len = (size_t)snprintf(o->m.key, sizeof(o->m.key), "shared-%u", ++key_no);
    o->e.key = (struct sl_str){"k", 1};
    o->e.value = (struct sl_str){o->m.key, o->m.key_len};
    o->d.entries = &o->e;
    o->d.n_entries = 1;
    o->d.hits = -1;
    o->req.domain = (struct sl_str){"shared", 6};
    o->req.descriptors = &o->d;
    o->req.n_descriptors = 1;
    o->req.hits = 1;
    o->req.now_ns = T0_NS;
}

/* 3 x quota checks, alternating nodes, all started before any answer:
 * how many were admitted. */
static int64_t hammer(struct one *o, int64_t quota)
{
    static struct answer a[600];
    size_t n = (size_t)(3 * quota);
    int64_t admitted = 0;

    assert_true(n <= 600);
    for (size_t i = 0; i < n; i++) {
        struct sl__store_req q = {.req = &o->req, .m = &o->m, .n = 1};
        memset(&a[i], 0, sizeof(a[i]));
        assert_int_equal(node[i % 2]->ops->check(node[i % 2], &q, sw_on_answer, &a[i]), SL_OK);
    }
    for (size_t i = 0; i < n; i++) {
        while (!a[i].done)
            uv_run(&loop, UV_RUN_ONCE);
        assert_int_equal(a[i].err, SL_OK);
        admitted += a[i].res.verdict != SL_DENY;
    }
    return admitted;
}

static struct sl_limit lim(enum sl_algo a, uint64_t requests, int64_t period_ns)
{
    struct sl_limit l;

    sl_limit_init(&l);
    l.algo = a;
    l.requests = requests;
    l.period_ns = period_ns;
    return l;
}

static void test_two_nodes_never_exceed_the_limit(void **state)
{
    struct {
        struct sl_limit l;
        int64_t allowed; /* at one instant from a fresh key */
    } cases[8];
    struct one o;

    (void)state;
    cases[0].l = lim(SL_ALGO_TOKEN_BUCKET, 40, 60 * S);
    cases[0].allowed = 40;
    cases[1].l = lim(SL_ALGO_TOKEN_BUCKET, 2, S);
    cases[1].l.warmup_ns = 4 * S;
    cases[1].allowed = 1; /* pay-later: the first one pushes the next free time */
    cases[2].l = lim(SL_ALGO_GCRA, 30, 60 * S);
    cases[2].l.burst = 15;
    cases[2].allowed = 16;
    cases[3].l = lim(SL_ALGO_LEAKY_BUCKET, 10, S);
    cases[3].l.burst = 20;
    cases[3].l.delay = 5;
    cases[3].allowed = 21; /* delayed ones are admitted too */
    cases[4].l = lim(SL_ALGO_FIXED_WINDOW, 50, 60 * S);
    cases[4].allowed = 50;
    cases[5].l = lim(SL_ALGO_SLIDING_WINDOW, 50, 60 * S);
    cases[5].allowed = 50;
    cases[6].l = lim(SL_ALGO_SLIDING_LOG, 25, 60 * S);
    cases[6].allowed = 25;
    cases[7].l = lim(SL_ALGO_CONCURRENCY, 12, 0);
    cases[7].l.lease_ns = 60 * S;
    cases[7].allowed = 12;
    for (size_t i = 0; i < 8; i++) {
        one_init(&o, &cases[i].l);
        assert_int_equal(hammer(&o, sl_limit_quota(&o.l)), cases[i].allowed);
        /* and again at the same instant: nothing more anywhere */
        assert_int_equal(hammer(&o, sl_limit_quota(&o.l)), 0);
    }
}

static void test_reset_on_one_node_clears_the_others_cache(void **state)
{
    struct one o;
    struct sl_limit l = lim(SL_ALGO_FIXED_WINDOW, 1, 3600 * S);
    struct answer a;
    struct sl__store_req q;
    struct sl__redis_stats before, after;

    (void)state;
    one_init(&o, &l);
    q = (struct sl__store_req){.req = &o.req, .m = &o.m, .n = 1};
    for (int i = 0; i < 3; i++) { /* node 1: allowed, then denied twice (cached) */
        memset(&a, 0, sizeof(a));
        assert_int_equal(node[1]->ops->check(node[1], &q, sw_on_answer, &a), SL_OK);
        while (!a.done)
            uv_run(&loop, UV_RUN_ONCE);
        assert_int_equal(a.res.verdict, i == 0 ? SL_ALLOW : SL_DENY);
    }
    sl__store_redis_stats(node[1], &before);
    assert_true(before.olc_hits >= 1);

    memset(&a, 0, sizeof(a));
    assert_int_equal(node[0]->ops->reset(node[0], &q, sw_on_answer, &a), SL_OK);
    while (!a.done)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(a.err, SL_OK);
    for (int i = 0; i < 100; i++) /* let node 1 hear the announcement (1 ms ticks) */
        uv_run(&loop, UV_RUN_ONCE);

    memset(&a, 0, sizeof(a));
    assert_int_equal(node[1]->ops->check(node[1], &q, sw_on_answer, &a), SL_OK);
    while (!a.done)
        uv_run(&loop, UV_RUN_ONCE);
    sl__store_redis_stats(node[1], &after);
    assert_int_equal(a.res.verdict, SL_ALLOW);
    assert_int_equal(after.olc_hits, before.olc_hits);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_nodes_never_exceed_the_limit),
        cmocka_unit_test(test_reset_on_one_node_clears_the_others_cache),
    };
    signal(SIGPIPE, SIG_IGN); /* as sluiced does: writing to a Redis that died is EPIPE */
    return cmocka_run_group_tests(tests, setup, teardown);
}
