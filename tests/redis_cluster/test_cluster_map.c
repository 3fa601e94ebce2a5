/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_cluster_map.c - the pure routing layer (store/redis/redis_cluster.c): slot
 * maps from canned CLUSTER SLOTS replies (well-formed, "?" and empty hosts,
 * malformed ones that must leave the map alone), MOVED/ASK parsing of canned
 * and real replies, applying a MOVED, grouping descriptors by slot, and the
 * refresh schedule; then the map loaded from a real 3-master cluster routes
 * every key of a random sample to the node that accepts it (no MOVED).
 *
 * Canned replies are RESP text read by hiredis's own reader, so they are
 * the structures the store will get. It does not send checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster.h"
#include "redis_cluster.h"
#include "sluice.h"

static redisReply *parse(const char *resp)
{
    redisReader *rd = redisReaderCreate();
    void *r = NULL;

    assert_non_null(rd);
    assert_int_equal(redisReaderFeed(rd, resp, strlen(resp)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    assert_non_null(r);
    redisReaderFree(rd);
    return r;
}

/* Two masters, the second range with a replica; the first host empty. */
static const char *two_masters =
    "*2\r\n"
    "*3\r\n:0\r\n:8191\r\n*3\r\n$0\r\n\r\n:7000\r\n$2\r\nid\r\n"
    "*4\r\n:8192\r\n:16383\r\n*3\r\n$8\r\n10.0.0.2\r\n:7001\r\n$2\r\nid\r\n"
    "*3\r\n$8\r\n10.0.0.3\r\n:7002\r\n$2\r\nid\r\n";

static void test_load_canned(void **state)
{
    static struct sl__cmap m;
    redisReply *r = parse(two_masters);
    (void)state;

    sl__cmap_init(&m);
    assert_false(sl__cmap_complete(&m));
    assert_int_equal(sl__cmap_lookup(&m, 0), -1);
    assert_int_equal(sl__cmap_load(&m, r, "10.0.0.1"), SL_OK);
    assert_true(sl__cmap_complete(&m));
    assert_int_equal(m.n_nodes, 2); /* the replica is not a node to route to */
    int a = sl__cmap_lookup(&m, 0), b = sl__cmap_lookup(&m, 16383);
    assert_string_equal(m.nodes[a].host, "10.0.0.1"); /* "" is the node asked */
    assert_int_equal(m.nodes[a].port, 7000);
    assert_string_equal(m.nodes[b].host, "10.0.0.2");
    assert_int_equal(m.nodes[b].port, 7001);
    assert_int_equal(sl__cmap_lookup(&m, 8191), a);
    assert_int_equal(sl__cmap_lookup(&m, 8192), b);
    assert_int_equal(sl__cmap_lookup(&m, 16384), -1);
    freeReplyObject(r);
}

/* A reload keeps the indexes of known nodes: a node added by a MOVED, or
 * named by an earlier map, keeps its index. */
static void test_reload_keeps_node_indexes(void **state)
{
    static struct sl__cmap m;
    redisReply *r = parse(two_masters);
    (void)state;

    sl__cmap_init(&m);
    assert_int_equal(sl__cmap_node(&m, "seed", 4, 1), 0);
    assert_int_equal(sl__cmap_node(&m, "10.0.0.2", 8, 7001), 1);
    assert_int_equal(sl__cmap_load(&m, r, "10.0.0.1"), SL_OK);
    assert_int_equal(m.n_nodes, 3);
    assert_int_equal(sl__cmap_lookup(&m, 16383), 1);
    assert_int_equal(sl__cmap_lookup(&m, 0), 2);
    assert_int_equal(sl__cmap_load(&m, r, "10.0.0.1"), SL_OK);
    assert_int_equal(m.n_nodes, 3);
    assert_int_equal(sl__cmap_lookup(&m, 0), 2);
    freeReplyObject(r);
}

static void test_load_partial_and_unknown_host(void **state)
{
    static struct sl__cmap m;
    redisReply *r = parse("*1\r\n*3\r\n:100\r\n:200\r\n*2\r\n$1\r\n?\r\n:7005\r\n");
    (void)state;

    sl__cmap_init(&m);
    assert_int_equal(sl__cmap_load(&m, r, "h"), SL_OK);
    assert_false(sl__cmap_complete(&m));
    assert_int_equal(sl__cmap_lookup(&m, 99), -1);
    assert_int_equal(sl__cmap_lookup(&m, 201), -1);
    assert_string_equal(m.nodes[sl__cmap_lookup(&m, 150)].host, "h");
    freeReplyObject(r);
}

static void test_load_malformed_keeps_map(void **state)
{
    static const char *bad[] = {
        "-ERR This instance has cluster support disabled\r\n",
        "*0\r\n",
        "*1\r\n*3\r\n:10\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n",     /* end < start */
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",  /* slot range */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n",      /* port 0 */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:65536\r\n",  /* port range */
        "*1\r\n*2\r\n:0\r\n:1\r\n",                             /* no master */
        "*1\r\n*3\r\n$1\r\n0\r\n:1\r\n*2\r\n$1\r\nh\r\n:1\r\n", /* start not int */
        "*2\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:1\r\n:5\r\n",
    };
    static struct sl__cmap m;
    redisReply *good = parse(two_masters);
    (void)state;

    sl__cmap_init(&m);
    assert_int_equal(sl__cmap_load(&m, good, "x"), SL_OK);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        redisReply *r = parse(bad[i]);
        uint64_t v = m.version;
        assert_int_equal(sl__cmap_load(&m, r, "x"), SL_EINVAL);
        assert_int_equal(m.version, v);
        assert_true(sl__cmap_complete(&m));
        assert_int_equal(m.nodes[sl__cmap_lookup(&m, 9000)].port, 7001);
        freeReplyObject(r);
    }
    assert_int_equal(sl__cmap_load(&m, NULL, "x"), SL_EINVAL);
    freeReplyObject(good);
}

static void test_node_table_bounds(void **state)
{
    static struct sl__cmap m;
    char host[80];
    (void)state;

    sl__cmap_init(&m);
    for (int i = 0; i < SL__CLUSTER_MAX_NODES; i++)
        assert_int_equal(sl__cmap_node(&m, "h", 1, 1000 + i), i);
    assert_int_equal(sl__cmap_node(&m, "h", 1, 1000), 0);  /* found, not added */
    assert_int_equal(sl__cmap_node(&m, "h", 1, 5000), -1); /* full */
    sl__cmap_init(&m);
    memset(host, 'a', sizeof(host));
    assert_int_equal(sl__cmap_node(&m, host, SL__CLUSTER_HOST_MAX, 1), -1);
    assert_int_equal(sl__cmap_node(&m, host, SL__CLUSTER_HOST_MAX - 1, 1), 0);
    assert_int_equal(sl__cmap_node(&m, "h", 1, 0), -1);
    assert_int_equal(sl__cmap_node(&m, "h", 1, 65536), -1);
}

static void test_redirect_parse(void **state)
{
    struct sl__credir d;
    char longhost[100];
    (void)state;

    assert_int_equal(sl__credir_parse("MOVED 3999 127.0.0.1:6381", 25, "x", &d), SL_OK);
    assert_int_equal(d.kind, SL__CREDIR_MOVED);
    assert_int_equal(d.slot, 3999);
    assert_string_equal(d.host, "127.0.0.1");
    assert_int_equal(d.port, 6381);
    assert_int_equal(sl__credir_parse("ASK 16383 ::1:7000", 18, "x", &d), SL_OK);
    assert_int_equal(d.kind, SL__CREDIR_ASK);
    assert_int_equal(d.slot, 16383);
    assert_string_equal(d.host, "::1");
    assert_int_equal(d.port, 7000);
    assert_int_equal(sl__credir_parse("MOVED 0 :7001", 13, "asked", &d), SL_OK);
    assert_string_equal(d.host, "asked");
    assert_int_equal(sl__credir_parse("ERR unknown", 11, "x", &d), SL_ENOENT);
    assert_int_equal(sl__credir_parse("NOSCRIPT No", 11, "x", &d), SL_ENOENT);
    assert_int_equal(sl__credir_parse("MOVEDX", 6, "x", &d), SL_ENOENT);
    assert_int_equal(sl__credir_parse("MOVED 16384 h:1", 15, "x", &d), SL_EINVAL);
    assert_int_equal(sl__credir_parse("MOVED 12 h", 10, "x", &d), SL_EINVAL);
    assert_int_equal(sl__credir_parse("MOVED x h:1", 11, "x", &d), SL_EINVAL);
    assert_int_equal(sl__credir_parse("MOVED 12", 8, "x", &d), SL_EINVAL);
    assert_int_equal(sl__credir_parse("MOVED 12 h:0", 12, "x", &d), SL_EINVAL);
    assert_int_equal(sl__credir_parse("MOVED 12 h:65536", 16, "x", &d), SL_EINVAL);
    assert_int_equal(sl__credir_parse("ASK -1 h:1", 10, "x", &d), SL_EINVAL);
    int n = snprintf(longhost, sizeof(longhost), "MOVED 1 %070d:1", 0);
    assert_int_equal(sl__credir_parse(longhost, (size_t)n, "x", &d), SL_EINVAL);
}

static void test_moved_updates_map(void **state)
{
    static struct sl__cmap m;
    struct sl__credir d;
    redisReply *r = parse(two_masters);
    (void)state;

    sl__cmap_init(&m);
    assert_int_equal(sl__cmap_load(&m, r, "10.0.0.1"), SL_OK);
    uint64_t v = m.version;
    assert_int_equal(sl__credir_parse("MOVED 5 10.0.0.9:7009", 21, "x", &d), SL_OK);
    assert_int_equal(sl__cmap_moved(&m, &d), SL_OK);
    assert_int_equal(m.nodes[sl__cmap_lookup(&m, 5)].port, 7009);
    assert_int_equal(m.nodes[sl__cmap_lookup(&m, 4)].port, 7000); /* only that slot */
    assert_true(m.version > v);
    v = m.version;
    assert_int_equal(sl__cmap_moved(&m, &d), SL_OK); /* already there: no change */
    assert_int_equal(m.version, v);
    freeReplyObject(r);
}

static void test_group_by_slot(void **state)
{
    uint16_t slots[6] = {7, 3, 7, 9, 3, 7}, gs[6];
    uint8_t g[6];
    (void)state;

    assert_int_equal(sl__cluster_group(slots, 6, g, gs), 3);
    assert_int_equal(gs[0], 7);
    assert_int_equal(gs[1], 3);
    assert_int_equal(gs[2], 9);
    for (int i = 0; i < 6; i++)
        assert_int_equal(gs[g[i]], slots[i]);
    assert_int_equal(sl__cluster_group(slots, 0, g, gs), 0);
}

static void test_refresh_schedule(void **state)
{
    struct sl__crefresh r;
    (void)state;

    sl__crefresh_init(&r, 100, 5000);
    assert_int_equal(sl__crefresh_wait(&r, 0), 0); /* no map yet */
    assert_true(sl__crefresh_due(&r, 1000));
    assert_false(sl__crefresh_due(&r, 1000));
    assert_int_equal(sl__crefresh_wait(&r, 1000), 5000); /* the period */
    sl__crefresh_want(&r);                               /* a MOVED */
    assert_int_equal(sl__crefresh_wait(&r, 1050), 50);   /* the minimum gap */
    assert_false(sl__crefresh_due(&r, 1099));
    assert_true(sl__crefresh_due(&r, 1100));
    assert_true(sl__crefresh_due(&r, 6100)); /* the period again */
    sl__crefresh_init(&r, 100, 0);
    assert_true(sl__crefresh_due(&r, 0));
    assert_int_equal(sl__crefresh_wait(&r, 10), -1); /* on demand only */
}

/* The map from a real cluster routes keys where Redis accepts them, and a
 * real MOVED names the owner. */
static void test_real_cluster_routes_keys(void **state)
{
    static struct rc_cluster cl;
    static struct sl__cmap m;
    redisContext *ctx[3];
    unsigned seed = 7;
    (void)state;

    assert_int_equal(rc_start(&cl, 3, 0), 0);
    redisReply *r = rc_command(&cl, 1, "CLUSTER SLOTS");
    sl__cmap_init(&m);
    assert_int_equal(sl__cmap_load(&m, r, "127.0.0.1"), SL_OK);
    freeReplyObject(r);
    assert_true(sl__cmap_complete(&m));
    assert_int_equal(m.n_nodes, 3);
    for (int i = 0; i < 3; i++)
        assert_non_null(ctx[i] = rc_connect(&cl, (size_t)i));
    for (int k = 0; k < 300; k++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "k%u{t%u}", (unsigned)rand_r(&seed), k);
        unsigned slot = sl__redis_keyslot(key, (size_t)n);
        const struct sl__cnode *node = &m.nodes[sl__cmap_lookup(&m, slot)];
        int right = rc_index_of_port(&cl, node->port), wrong = (right + 1) % 3;
        assert_true(right >= 0);
        r = redisCommand(ctx[right], "SET %b 1", key, (size_t)n);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
        r = redisCommand(ctx[wrong], "GET %b", key, (size_t)n);
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        struct sl__credir d;
        assert_int_equal(sl__credir_parse(r->str, r->len, "127.0.0.1", &d), SL_OK);
        assert_int_equal(d.kind, SL__CREDIR_MOVED);
        assert_int_equal(d.slot, slot);
        assert_int_equal(d.port, node->port);
        freeReplyObject(r);
    }
    for (int i = 0; i < 3; i++)
        redisFree(ctx[i]);
    rc_stop(&cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_canned),
        cmocka_unit_test(test_reload_keeps_node_indexes),
        cmocka_unit_test(test_load_partial_and_unknown_host),
        cmocka_unit_test(test_load_malformed_keeps_map),
        cmocka_unit_test(test_node_table_bounds),
        cmocka_unit_test(test_redirect_parse),
        cmocka_unit_test(test_moved_updates_map),
        cmocka_unit_test(test_group_by_slot),
        cmocka_unit_test(test_refresh_schedule),
        cmocka_unit_test(test_real_cluster_routes_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
