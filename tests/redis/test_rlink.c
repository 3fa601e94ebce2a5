/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rlink.c - the Redis link (store/redis/link/rlink.h) against a real
 * redis-server: replies reach their commands in order through a deep
 * pipeline, commands sent while connecting leave after AUTH, a refused
 * AUTH and a closed port say why through `down`, a drop gives every
 * waiting command its NULL reply, a link freed inside its own callback is
 * released afterwards, a pub/sub link hears its messages, the reader
 * refuses an array too large to allocate, and the backoff stays within
 * its bounds. TLS is covered by the store's TLS tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "redis_server.h"
#include "rlink.h"
#include "sluice.h"

struct probe {
    uv_loop_t *loop;
    int ups, downs;
    enum sl__rlink_down kind;
    char why[256];
    long long last; /* the last integer reply */
    int replies, nulls, pushes;
    bool in_order;
    struct sl__rlink *free_me; /* freed in the next reply callback */
};

static void on_up(struct sl__rlink *l, void *arg)
{
    struct probe *p = arg;

    (void)l;
    p->ups++;
}

static void on_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct probe *p = arg;

    (void)l;
    p->downs++;
    p->kind = why->kind;
    snprintf(p->why, sizeof(p->why), "%s", why->text);
}

static void on_int(struct sl__rlink *l, redisReply *r, void *arg)
{
    struct probe *p = arg;

    if (r == NULL) {
        p->nulls++;
        return;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        if (r->integer != p->last + 1)
            p->in_order = false;
        p->last = r->integer;
    }
    p->replies++;
    if (p->free_me == l) {
        p->free_me = NULL;
        sl__rlink_free(l);
    }
}

static void on_push(struct sl__rlink *l, redisReply *r, void *arg)
{
    struct probe *p = arg;

    (void)l;
    p->replies++; /* the subscription's confirmation too */
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        strcmp(r->element[0]->str, "message") == 0)
        p->pushes++;
}

static const struct sl__rlink_events events = {.up = on_up, .down = on_down};

static void tick(uv_timer_t *t)
{
    (void)t;
}

/* Run the loop until *counter reaches `want` or about 5 s. The link's
 * handles do not keep a loop alive (its owner's do): a timer does here. */
static void run_until(uv_loop_t *loop, const int *counter, int want)
{
    uint64_t end = uv_hrtime() + 5000000000ull;
    uv_timer_t t;

    uv_timer_init(loop, &t);
    uv_timer_start(&t, tick, 10, 10);
    while (*counter < want && uv_hrtime() < end)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void settle(uv_loop_t *loop)
{
    for (int i = 0; i < 4; i++)
        uv_run(loop, UV_RUN_NOWAIT);
}

static void test_pipeline_in_order(void **state)
{
    struct rs_server rs = {0};
    uv_loop_t loop;
    struct probe p = {.in_order = true};
    struct sl__rlink_conf c = {.connect_timeout_ms = 2000};
    struct sl__rlink_group *g;
    struct sl__rlink *l;

    (void)state;
    assert_int_equal(rs_start(&rs), 0);
    uv_loop_init(&loop);
    g = sl__rlink_group_new(&loop);
    l = sl__rlink_new(g, &c, &events, &p);
    assert_int_equal(sl__rlink_connect(l, "127.0.0.1", rs.port), SL_OK);
    assert_int_equal(sl__rlink_connect(l, "127.0.0.1", rs.port), SL_EINVAL); /* busy */
    /* sent while connecting: they leave once connected */
    assert_int_equal(sl__rlink_command(l, NULL, NULL, "DEL rlink:n"), SL_OK);
    for (int i = 0; i < 5000; i++)
        assert_int_equal(sl__rlink_command(l, on_int, &p, "INCR rlink:n"), SL_OK);
    run_until(&loop, &p.replies, 5000);
    assert_int_equal(p.ups, 1);
    assert_int_equal(p.replies, 5000);
    assert_true(p.in_order);
    assert_int_equal(p.last, 5000);
    assert_int_equal(sl__rlink_pending(l), 0);

    /* a drop gives every waiting command its NULL reply, no `down` */
    for (int i = 0; i < 10; i++)
        sl__rlink_command(l, on_int, &p, "INCR rlink:n");
    sl__rlink_drop(l);
    assert_int_equal(p.nulls, 10);
    assert_int_equal(p.downs, 0);
    assert_false(sl__rlink_is_busy(l));
    assert_int_equal(sl__rlink_command(l, on_int, &p, "PING"), SL_ENOENT);

    /* again, by name, and freed inside its own reply callback */
    p.replies = 0;
    assert_int_equal(sl__rlink_connect(l, "localhost", rs.port), SL_OK);
    sl__rlink_command(l, on_int, &p, "PING");
    sl__rlink_command(l, on_int, &p, "PING");
    p.free_me = l;
    run_until(&loop, &p.nulls, 11);
    assert_int_equal(p.replies, 1);
    assert_int_equal(p.nulls, 11); /* the second PING, after the free */
    sl__rlink_group_free(g);
    settle(&loop);
    assert_int_equal(uv_loop_close(&loop), 0);
    rs_stop(&rs);
}

static void test_auth(void **state)
{
    struct rs_server rs = {0};
    uv_loop_t loop;
    struct probe p = {.in_order = true};
    struct sl__rlink_conf good = {.password = "s3cret", .db = 2, .connect_timeout_ms = 2000};
    struct sl__rlink_conf bad = {.password = "wrong", .connect_timeout_ms = 2000};
    struct sl__rlink_group *g;
    struct sl__rlink *l, *b;

    (void)state;
    assert_int_equal(rs_start_args(&rs, "--requirepass", "s3cret"), 0);
    uv_loop_init(&loop);
    g = sl__rlink_group_new(&loop);
    l = sl__rlink_new(g, &good, &events, &p);
    assert_int_equal(sl__rlink_connect(l, "127.0.0.1", rs.port), SL_OK);
    sl__rlink_command(l, NULL, NULL, "SET rlink:db %d", 2);
    run_until(&loop, &p.ups, 1);
    assert_int_equal(p.ups, 1);

    b = sl__rlink_new(g, &bad, &events, &p);
    assert_int_equal(sl__rlink_connect(b, "127.0.0.1", rs.port), SL_OK);
    sl__rlink_command(b, on_int, &p, "PING"); /* never answered: AUTH fails first */
    run_until(&loop, &p.downs, 1);
    assert_int_equal(p.downs, 1);
    assert_int_equal(p.kind, SL__RLINK_AUTH);
    assert_non_null(strstr(p.why, "AUTH refused"));
    assert_int_equal(p.nulls, 1);
    assert_int_equal(p.ups, 1);
    sl__rlink_free(b);
    sl__rlink_free(l);
    sl__rlink_group_free(g);
    settle(&loop);
    assert_int_equal(uv_loop_close(&loop), 0);
    rs_stop(&rs);
}

static void test_refused_and_pubsub(void **state)
{
    struct rs_server rs = {0};
    uv_loop_t loop;
    struct probe p = {.in_order = true}, q = {.in_order = true};
    struct sl__rlink_conf c = {.connect_timeout_ms = 2000};
    struct sl__rlink_events sub_ev = {.up = on_up, .down = on_down, .push = on_push};
    struct sl__rlink_group *g;
    struct sl__rlink *l, *s, *pub;
    int port = rs_free_port();

    (void)state;
    uv_loop_init(&loop);
    g = sl__rlink_group_new(&loop);
    l = sl__rlink_new(g, &c, &events, &p);
    assert_int_equal(sl__rlink_connect(l, "127.0.0.1", port), SL_OK);
    assert_int_equal(p.downs, 0); /* never from inside connect */
    run_until(&loop, &p.downs, 1);
    assert_int_equal(p.downs, 1);
    assert_int_equal(p.kind, SL__RLINK_LOST);
    assert_int_equal(p.ups, 0);

    assert_int_equal(rs_start(&rs), 0);
    s = sl__rlink_new(g, &c, &sub_ev, &q);
    pub = sl__rlink_new(g, &c, &events, &p);
    assert_int_equal(sl__rlink_connect(s, "127.0.0.1", rs.port), SL_OK);
    sl__rlink_command(s, NULL, NULL, "SUBSCRIBE rlink:ch");
    assert_int_equal(sl__rlink_connect(pub, "127.0.0.1", rs.port), SL_OK);
    run_until(&loop, &q.ups, 1);
    run_until(&loop, &p.ups, 1);
    run_until(&loop, &q.replies, 1); /* subscribed */
    assert_int_equal(q.pushes, 0);
    assert_int_equal(sl__rlink_command(pub, on_int, &p, "PUBLISH rlink:ch hello"), SL_OK);
    run_until(&loop, &q.pushes, 1);
    assert_int_equal(q.pushes, 1);
    /* the server going away is a `down` for both */
    rs_stop(&rs);
    run_until(&loop, &q.downs, 1);
    assert_int_equal(q.downs, 1);
    sl__rlink_free(s);
    sl__rlink_free(pub);
    sl__rlink_free(l);
    sl__rlink_group_free(g);
    settle(&loop);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A reply declaring a huge array is refused by the link's reader before
 * hiredis allocates it; one within the bound is read. */
static void test_reader_bounds_arrays(void **state)
{
    redisReader *r = sl__rlink_reader_new();
    void *reply = NULL;

    (void)state;
    assert_non_null(r);
    assert_int_equal(redisReaderFeed(r, "*2\r\n:1\r\n:2\r\n", 12), REDIS_OK);
    assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
    assert_non_null(reply);
    assert_int_equal(((redisReply *)reply)->elements, 2);
    freeReplyObject(reply);
    assert_int_equal(redisReaderFeed(r, "*811000000\r\n", 12), REDIS_OK);
    assert_int_equal(redisReaderGetReply(r, &reply), REDIS_ERR);
    redisReaderFree(r);
}

static void test_backoff(void **state)
{
    struct sl__rbackoff b;
    int64_t prev_hi = 0;

    (void)state;
    sl__rbackoff_init(&b, 50, 2000);
    for (int i = 0; i < 20; i++) {
        int64_t hi = b.next_ms, w = sl__rbackoff_next(&b);
        assert_true(w >= hi / 2 && w <= hi);
        assert_true(hi >= prev_hi && hi <= 2000);
        prev_hi = hi;
    }
    assert_int_equal(b.next_ms, 2000);
    sl__rbackoff_reset(&b);
    assert_int_equal(b.next_ms, 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_in_order),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_refused_and_pubsub),
        cmocka_unit_test(test_reader_bounds_arrays),
        cmocka_unit_test(test_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
