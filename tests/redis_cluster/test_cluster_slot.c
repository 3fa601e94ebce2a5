/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_cluster_slot.c - key slots (store/redis/redis_slot.c) against a real
 * 3-master Redis Cluster: CLUSTER KEYSLOT agrees with sl__redis_keyslot on
 * thousands of random keys (binary bytes, braces in every position), on the
 * hash-tag cases of the Redis Cluster specification, and on the keys the
 * store builds for a descriptor, which all share one slot (their tag).
 *
 * It does not route anything (test_cluster_map.c does).
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
#include "redis_plan.h"

static struct rc_cluster cl;
static redisContext *ctx;

static int setup(void **state)
{
    (void)state;
    if (rc_start(&cl, 3, 0) != 0)
        return -1;
    ctx = rc_connect(&cl, 0);
    return ctx != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (ctx != NULL)
        redisFree(ctx);
    rc_stop(&cl);
    return 0;
}

static long long redis_slot(const char *key, size_t len)
{
    redisReply *r = redisCommand(ctx, "CLUSTER KEYSLOT %b", key, len);
    long long v;

    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

/* The CRC16 variant is the XMODEM one: its standard check value, and the
 * whole-key slot of a key without braces is that CRC mod 16384. */
static void test_crc16_is_xmodem(void **state)
{
    (void)state;
    assert_int_equal(sl__redis_crc16("123456789", 9), 0x31C3);
    assert_int_equal(sl__redis_crc16("", 0), 0);
    assert_int_equal(sl__redis_keyslot("123456789", 9), 0x31C3 & 16383);
}

static void test_spec_hash_tags(void **state)
{
    static const char *const keys[] = {
        "{user1000}.following",
        "{user1000}.followers",
        "foo{}{bar}",
        "foo{{bar}}zap",
        "foo{bar}{zap}",
        "{}",
        "{",
        "}",
        "a{b",
        "a}b{c}",
        "{{}}",
        "x{y}z{w}",
        "",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        size_t len = strlen(keys[i]);
        assert_int_equal(sl__redis_keyslot(keys[i], len), redis_slot(keys[i], len));
    }
    /* The spec's own statements, independent of Redis: */
    assert_int_equal(sl__redis_keyslot("{user1000}.following", 20),
                     sl__redis_keyslot("user1000", 8));
    assert_int_equal(sl__redis_keyslot("foo{}{bar}", 10),
                     sl__redis_crc16("foo{}{bar}", 10) & 16383);
    assert_int_equal(sl__redis_keyslot("foo{{bar}}zap", 13), sl__redis_keyslot("{bar", 4));
    assert_int_equal(sl__redis_keyslot("foo{bar}{zap}", 13), sl__redis_keyslot("bar", 3));
}

/* Random keys of random bytes, braces made frequent, pipelined. */
static void test_random_keys_match_cluster_keyslot(void **state)
{
    enum { N = 4000 };
    static char keys[N][24];
    static size_t lens[N];
    unsigned seed = 12345;
    (void)state;

    for (size_t i = 0; i < N; i++) {
        lens[i] = (size_t)(rand_r(&seed) % 24);
        for (size_t j = 0; j < lens[i]; j++) {
            int r = rand_r(&seed) % 8;
            keys[i][j] = r == 0 ? '{' : r == 1 ? '}' : (char)(rand_r(&seed) & 0xff);
        }
        redisAppendCommand(ctx, "CLUSTER KEYSLOT %b", keys[i], lens[i]);
    }
    for (size_t i = 0; i < N; i++) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(ctx, (void **)&r), REDIS_OK);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_int_equal(sl__redis_keyslot(keys[i], lens[i]), r->integer);
        freeReplyObject(r);
    }
}

/* Every key the store builds for one descriptor (several limits, several
 * algorithms) hashes to the slot Redis gives the first of them. */
static void test_store_keys_of_a_descriptor_share_a_slot(void **state)
{
    static struct sl__redis_cmd cmd;
    static struct sl__redis_plan plan;
    struct sl__redis_opts o;
    struct sl_limit l[3];
    struct sl_entry e[2] = {{{"user", 4}, {"alice{x}", 8}}, {{"path", 4}, {"/a", 2}}};
    struct sl_descriptor d = {e, 2, -1, NULL};
    struct sl_request req;
    struct sl_match m;
    (void)state;

    sl__redis_opts_init(&o);
    for (int i = 0; i < 3; i++) {
        sl_limit_init(&l[i]);
        l[i].algo = i == 0 ? SL_ALGO_FIXED_WINDOW : i == 1 ? SL_ALGO_TOKEN_BUCKET : SL_ALGO_GCRA;
        l[i].requests = 10 + (uint64_t)i;
        l[i].period_ns = INT64_C(1000000000) * (i + 1);
        sl_limit_finish(&l[i]);
    }
    memset(&req, 0, sizeof(req));
    req.domain = (struct sl_str){"api", 3};
    req.descriptors = &d;
    req.n_descriptors = 1;
    req.hits = 1;
    req.now_ns = INT64_C(1750000000000000000);
    memset(&m, 0, sizeof(m));
    m.key_len = (size_t)snprintf(m.key, sizeof(m.key), "api/user=alice{x}/path=/a");
    for (int i = 0; i < 3; i++)
        m.limits[i] = &l[i];
    m.n_limits = 3;
    assert_int_equal(sl__redis_plan_build(&o,
                                          &(struct sl__redis_plan_in){SL__REDIS_CHECK, &req, &m, 1},
                                          &plan, &cmd),
                     SL_OK);
    assert_int_equal(plan.n_items, 3);
    long long slot = -1;
    for (size_t a = 3; a < 3 + plan.n_items; a++) { /* the KEYS (redis_plan.c) */
        const char *s = cmd.argv[a];
        size_t n = cmd.argvlen[a];
        assert_non_null(memchr(s, '{', n));
        long long rs = redis_slot(s, n);
        assert_int_equal(sl__redis_keyslot(s, n), rs);
        if (slot < 0)
            slot = rs;
        assert_int_equal(rs, slot);
    }
    assert_true(slot >= 0);
}

/* Every slot has a tag of at most 4 bytes, and Redis agrees on its slot. */
static void test_slot_tags(void **state)
{
    static char t[16384][5];
    (void)state;

    assert_int_equal(sl__redis_slot_tags(t), SL_OK);
    for (unsigned slot = 0; slot < 16384; slot++) {
        size_t n = strlen(t[slot]);
        assert_true(n >= 1 && n <= 4);
        assert_int_equal(sl__redis_keyslot(t[slot], n), slot);
        if (slot % 500 == 0)
            assert_int_equal(redis_slot(t[slot], n), slot);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_is_xmodem),
        cmocka_unit_test(test_spec_hash_tags),
        cmocka_unit_test(test_random_keys_match_cluster_keyslot),
        cmocka_unit_test(test_store_keys_of_a_descriptor_share_a_slot),
        cmocka_unit_test(test_slot_tags),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
