/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_redis_module.c - the Redis module (redis-module/, sluice-redis.so)
 * inside real redis-server processes ($SL_REDIS_MODULE names the built
 * module; every server loads it, tests/redis/redis_server.h):
 *
 *  - SLUICE.VERSION, the key specs (COMMAND GETKEYS: cluster routing and
 *    ACLs see the keys);
 *  - bad arguments, values of another type and corrupt states get an error
 *    reply, never a crash (PING after each, and a few thousand random
 *    mutations of valid calls, CL.THROTTLE's among them: extreme numbers
 *    too);
 *  - the module writes the very bytes the Functions library writes for the
 *    same calls, for every algorithm (one stored format), and the scripts
 *    go on from a state the module wrote;
 *  - a replica holds the master's bytes after the module's writes: calls
 *    with the caller's time replayed there, calls with Redis's clock as
 *    their effects (SET ... PXAT);
 *  - a restart from the AOF keeps every state, and decisions go on;
 *  - MODULE UNLOAD is clean (states stay, the scripts read them), and the
 *    module loads again; SLUICE.RESET deletes and announces, REFUND and
 *    RELEASE give back;
 *  - a short call naming large limits (32 sliding_logs of 2^20 entries)
 *    is refused (SLUICE_TOOBIG) without Redis's used_memory growing, a large
 *    call within max-call-bytes leaves no scratch memory behind, and the
 *    load argument max-call-bytes is honoured and checked.
 *
 * It does not compare decisions with the memory store (test_redis_diff.c
 * does, for every engine) nor test the store's engine choice
 * (test_redis_store.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "redis_plan.h"
#include "redis_server.h"

#define NOW_US INT64_C(1700000000000000)

static struct rs_server server;
static redisContext *rc;
static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static redisContext *connect_to(const struct rs_server *s)
{
    redisContext *c = redisConnect("127.0.0.1", s->port);

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    return c;
}

static redisReply *cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    return r;
}

static void assert_alive(redisContext *c)
{
    redisReply *r = cmd(c, "PING");

    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

static int setup(void **state)
{
    redisReply *r;

    (void)state;
    if (getenv("SL_REDIS_MODULE") == NULL || rs_start(&server) != 0)
        return -1; /* never skipped: the module is required */
    rc = redisConnect("127.0.0.1", server.port);
    if (rc == NULL || rc->err)
        return -1;
    r = redisCommand(rc, "FUNCTION LOAD REPLACE %b", sl__redis_fn, sl__redis_fn_len);
    if (r == NULL || r->type != REDIS_REPLY_STRING)
        return -1;
    freeReplyObject(r);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    redisFree(rc);
    rs_stop(&server);
    return 0;
}

/* ---------------------------------------------------- one call, two ways */

/* The module's command for `op` on one key; `head` is "<now>,<settings>"
 * (now and the settings "<slack>,<prefix>", two arguments). */
static redisReply *module_call(redisContext *c, const char *op, const char *key, const char *head,
                               const char *item)
{
    char name[32];
    const char *comma = strchr(head, ',');

    snprintf(name, sizeof(name), "SLUICE.%s", op);
    for (char *p = name; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    return cmd(c, "%s 1 %s %b %s %s", name, key, head, (size_t)(comma - head), comma + 1, item);
}

/* The same through the Functions library. */
static redisReply *function_call(redisContext *c, const char *op, const char *key, const char *head,
                                 const char *item)
{
    const char *comma = strchr(head, ',');

    return cmd(c, "FCALL %s 1 %s %s %b %s %s", sl__redis_fn_name, key, op, head,
               (size_t)(comma - head), comma + 1, item);
}

static void assert_same_reply(const redisReply *a, const redisReply *b)
{
    assert_int_equal(a->type, b->type);
    if (a->type == REDIS_REPLY_INTEGER)
        assert_int_equal(a->integer, b->integer);
    if (a->type == REDIS_REPLY_STRING || a->type == REDIS_REPLY_ERROR)
        assert_string_equal(a->str, b->str);
    if (a->type != REDIS_REPLY_ARRAY)
        return;
    assert_int_equal(a->elements, b->elements);
    for (size_t i = 0; i < a->elements; i++) {
        const redisReply *x = a->element[i], *y = b->element[i];
        if (x->type == REDIS_REPLY_STRING && y->type == REDIS_REPLY_STRING && i % 6 == 0 &&
            x->len > 17 && y->len > 17)
            assert_string_equal(x->str + 16, y->str + 16); /* a lease: "<h of its key>-<id>" */
        else if (x->type == REDIS_REPLY_STRING && y->type == REDIS_REPLY_INTEGER)
            assert_int_equal(strtoll(x->str, NULL, 10), y->integer); /* Lua: big as text */
        else if (x->type == REDIS_REPLY_INTEGER && y->type == REDIS_REPLY_STRING)
            assert_int_equal(x->integer, strtoll(y->str, NULL, 10));
        else
            assert_same_reply(x, y);
    }
}

static void assert_same_value(const char *k1, const char *k2)
{
    redisReply *a = cmd(rc, "GET %s", k1), *b = cmd(rc, "GET %s", k2);
    redisReply *ta = cmd(rc, "PTTL %s", k1), *tb = cmd(rc, "PTTL %s", k2);

    assert_int_equal(a->type, b->type);
    if (a->type == REDIS_REPLY_STRING) {
        assert_int_equal(a->len, b->len);
        assert_memory_equal(a->str, b->str, a->len);
        /* the same expiry, but for the time between the two calls */
        assert_true(ta->integer > 0 && tb->integer > 0);
        assert_true(llabs(ta->integer - tb->integer) <= 50);
    }
    freeReplyObject(a);
    freeReplyObject(b);
    freeReplyObject(ta);
    freeReplyObject(tb);
}

/* Items (algo,cost,cr,shadow,warm,a,b,c,d; cost replaced per call) of
 * every algorithm, reduced as redis_plan.c sends them. */
static const char *const shapes[] = {
    "0,%u,0,0,0,1000000,10,10,0",      /* token_bucket 10/s */
    "0,%u,1,0,0,1000000,10,10,0",      /* ... count_rejected */
    "0,%u,0,0,1,1000000,2,4000000,0",  /* token_bucket 2/s, warmup 4 s */
    "1,%u,0,0,0,2000000,1,16,0",       /* gcra 30/min burst 15 */
    "2,%u,0,0,0,1000000,1,6,3",        /* leaky 1/s burst 5 delay 2 */
    "3,%u,0,0,0,60000000,10,0,0",      /* fixed_window 10/min */
    "4,%u,0,0,0,60000000,10,0,0",      /* sliding_window 10/min */
    "5,%u,0,0,0,10000000,3,1000000,0", /* sliding_log 3/10 s, 1 s apart */
    "6,%u,0,0,0,3,10000000,0,0",       /* concurrency 3, lease 10 s */
};

static void test_same_bytes_as_the_function(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        char km[32], kf[32], head[64], item[96];
        int64_t now = NOW_US;
        snprintf(km, sizeof(km), "same:m:%zu", s);
        snprintf(kf, sizeof(kf), "same:f:%zu", s);
        for (int step = 0; step < 60; step++) {
            const char *op = step % 11 == 10 ? "peek" : "check";
            redisReply *a, *b;
            now += (int64_t)(rnd() % 700000);
            snprintf(head, sizeof(head), "%lld,1000,sl", (long long)now);
            snprintf(item, sizeof(item), shapes[s], (unsigned)(rnd() % 4));
            a = module_call(rc, op, km, head, item);
            b = function_call(rc, op, kf, head, item);
            assert_same_reply(a, b);
            assert_same_value(km, kf);
            freeReplyObject(a);
            freeReplyObject(b);
        }
        /* Either engine goes on from the other's state. */
        snprintf(head, sizeof(head), "%lld,1000,sl", (long long)now);
        snprintf(item, sizeof(item), shapes[s], 1u);
        for (int step = 0; step < 4; step++) {
            redisReply *a = step % 2 ? module_call(rc, "check", km, head, item)
                                     : function_call(rc, "check", km, head, item);
            redisReply *b = step % 2 ? function_call(rc, "check", kf, head, item)
                                     : module_call(rc, "check", kf, head, item);
            assert_same_reply(a, b);
            assert_same_value(km, kf);
            freeReplyObject(a);
            freeReplyObject(b);
        }
    }
}

/* ------------------------------------------------------------ errors */

static void expect_error(const char *code, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ERROR || strstr(r->str, code) == NULL)
        fail_msg("wanted %s, got type %d: %s", code, r->type, r->str ? r->str : "");
    freeReplyObject(r);
    assert_alive(rc);
}

static void test_bad_arguments(void **state)
{
    const char *item = "3,1,0,0,0,60000000,10,0,0";

    (void)state;
    expect_error("SLUICE_ARGS", "SLUICE.CHECK x k 1 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK -1 k 1 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 257 k 1 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 2 k 1 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p %s extra", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1");
    expect_error("wrong number", "SLUICE.CHECK 1 k");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k nonow 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1,2 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1, %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 -1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 noslack %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 99999999999999999999 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k abc 1,p %s", item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,%0200d %s", 0, item);
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 3,1,0,0,0,60000000,10,0");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 3,1,0,0,0,60000000,10,0,0,0");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 3,1,0,0,0,60000000,10,0,x");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 3,-1,0,0,0,60000000,10,0,0");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 3,1,2,0,0,60000000,10,0,0");
    expect_error("SLUICE_ALGO", "SLUICE.CHECK 1 k 1 1,p 9,1,0,0,0,60000000,10,0,0");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 3,1,0,0,0,60000000,0,0,0");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 2,1,0,0,0,1000000,1,6,7");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 1 k 1 1,p 3,1,0,0,0,9007199254740993,1,0,0");
    expect_error("SLUICE_ARGS", "SLUICE.CHECK 2 k k 1 1,p %s %s", item, item);
    expect_error("SLUICE_ARGS", "SLUICE.RELEASE 1 idx 1 1,p 0");
    expect_error("SLUICE_ARGS", "SLUICE.RELEASE 1 idx 1 1,p 007");
    expect_error("SLUICE_ARGS", "SLUICE.RELEASE 1 idx 1 1,p 99999999999999999999999");
    expect_error("wrong number", "SLUICE.VERSION extra");
}

/* A key of another type, and values that are not a state of the limit:
 * refused (SLUICE_STATE), the value untouched. */
static void test_bad_values(void **state)
{
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"", 0},
        {"\x92", 1},                                          /* a truncated array */
        {"\x92\xa1x\x01", 4},                                 /* a string where a time goes */
        {"\x92\x01\xcf\xff\xff\xff\xff\xff\xff\xff\xff", 11}, /* beyond int64 */
        {"\x92\x01\x02\x00", 4},                              /* trailing bytes */
        {"\xc0", 1},                                          /* nil */
        {"\x95\x01\x02\x03\x04\x05", 6}, /* five numbers: no algorithm's state */
        {"not msgpack at all", 18},
    };
    static const char *const items[] = {
        "0,1,0,0,0,1000000,10,10,0", "0,1,0,0,1,1000000,2,4000000,0", "1,1,0,0,0,2000000,1,16,0",
        "2,1,0,0,0,1000000,1,6,3",   "3,1,0,0,0,60000000,10,0,0",     "4,1,0,0,0,60000000,10,0,0",
        "5,1,0,0,0,10000000,3,0,0",  "6,1,0,0,0,3,10000000,0,0"};
    redisReply *r;

    (void)state;
    r = cmd(rc, "RPUSH badtype x");
    freeReplyObject(r);
    expect_error("WRONGTYPE", "SLUICE.CHECK 1 badtype 1 1,p 3,1,0,0,0,60000000,10,0,0");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = cmd(rc, "SET badval %b", bad[i].bytes, bad[i].len);
        freeReplyObject(r);
        for (size_t k = 0; k < sizeof(items) / sizeof(items[0]); k++)
            expect_error("SLUICE_STATE", "SLUICE.CHECK 1 badval 1 1,p %s", items[k]);
        r = cmd(rc, "GET badval"); /* untouched */
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_int_equal(r->len, bad[i].len);
        freeReplyObject(r);
    }
    /* a sliding log holding more entries than its limit */
    r = cmd(rc, "SET badlog %b", "\x92\x01\x0a", (size_t)3);
    freeReplyObject(r);
    expect_error("SLUICE_STATE", "SLUICE.CHECK 1 badlog 1 1,p 5,1,0,0,0,10000000,3,0,0");
    assert_alive(rc);
}

/* Valid calls with one byte changed or one argument dropped, thousands of
 * times: any reply but never a crash. */
static void test_random_mutations(void **state)
{
    static const char *const argvs[][6] = {
        {"SLUICE.CHECK", "1", "mut:a", "1700000000000000", "1000,sl",
         "0,3,0,0,1,1000000,2,4000000,0"},
        {"SLUICE.CHECK", "1", "mut:b", "redis", "1000,sl{x}", "6,1,0,0,0,3,10000000,0,0"},
        {"SLUICE.PEEK", "1", "mut:c", "1700000000000000", "0,sl", "5,2,1,1,0,10000000,3,1000000,0"},
        {"SLUICE.REFUND", "1", "mut:d", "1700000000000000", "10,sl", "4,1,0,0,0,60000000,10,0,0"},
        {"SLUICE.RESET", "1", "mut:e", "1700000000000000", "10,sl", "2,1,0,0,0,1000000,1,6,3"},
        {"SLUICE.RELEASE", "1", "mut:f", "1700000000000000", "10,sl", "1700000000000001"},
        {"CL.THROTTLE", "mut:g", "4", "1", "60", "1"},
        {"CL.THROTTLE", "mut:h", "9223372036854775806", "1000000000", "9223372036",
         "9223372036854775807"},
    };
    static const char *const extremes[] = {
        "-1", "0", "1", "9223372036854775807", "-9223372036854775808", "18446744073709551616", ""};
    const size_t n_argvs = sizeof(argvs) / sizeof(argvs[0]);
    char buf[6][64];
    const char *argv[6];
    size_t len[6];

    (void)state;
    for (int i = 0; i < 3000; i++) {
        const char *const *base = argvs[rnd() % n_argvs];
        int argc = 6;
        for (int k = 0; k < 6; k++) {
            snprintf(buf[k], sizeof(buf[k]), "%s", base[k]);
            argv[k] = buf[k];
            len[k] = strlen(buf[k]);
        }
        if (rnd() % 4 == 0) {
            argc = 1 + (int)(rnd() % 5); /* arguments missing */
        } else if (rnd() % 3 == 0) {     /* an extreme number in place of one */
            int k = 1 + (int)(rnd() % 5);
            snprintf(buf[k], sizeof(buf[k]), "%s", extremes[rnd() % 7]);
            len[k] = strlen(buf[k]);
        } else {
            int k = 1 + (int)(rnd() % 5);
            if (len[k] > 0)
                buf[k][rnd() % len[k]] = (char)(rnd() % 256);
        }
        redisReply *r = redisCommandArgv(rc, argc, argv, len);
        assert_non_null(r);
        freeReplyObject(r);
    }
    assert_alive(rc);
}

/* ------------------------------------------------------- persistence */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys of a server matching `pattern` as (name, value) lines, sorted. */
static char *dump(redisContext *c, const char *pattern)
{
    redisReply *keys = cmd(c, "KEYS %s", pattern);
    size_t cap = 1 << 20, used = 0;
    char *out = calloc(1, cap);
    char **names = calloc(keys->elements + 1, sizeof(char *));

    for (size_t i = 0; i < keys->elements; i++)
        names[i] = keys->element[i]->str;
    qsort(names, keys->elements, sizeof(char *), by_name);
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *v = cmd(c, "GET %b", names[i], strlen(names[i]));
        used += (size_t)snprintf(out + used, cap - used, "%s=", names[i]);
        for (size_t k = 0; v->type == REDIS_REPLY_STRING && k < v->len; k++)
            used += (size_t)snprintf(out + used, cap - used, "%02x", (unsigned char)v->str[k]);
        used += (size_t)snprintf(out + used, cap - used, "\n");
        freeReplyObject(v);
    }
    free(names);
    freeReplyObject(keys);
    return out;
}

/* Checks of every algorithm on `c`, times from `now` (or Redis's clock). */
static void traffic(redisContext *c, const char *tag, bool redis_clock)
{
    char head[64], item[96], key[48];
    redisReply *r;

    for (int i = 0; i < 90; i++) {
        size_t s = (size_t)i % (sizeof(shapes) / sizeof(shapes[0]));
        snprintf(key, sizeof(key), "%s:%zu", tag, s);
        if (redis_clock)
            snprintf(head, sizeof(head), "redis,60000,sl");
        else
            snprintf(head, sizeof(head), "%lld,60000,sl", (long long)(NOW_US + i * 1000));
        snprintf(item, sizeof(item), shapes[s], 1u);
        r = module_call(c, "check", key, head, item);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        freeReplyObject(r);
    }
}

/* A replica holds the master's bytes: the commands with the caller's time
 * replayed on it (verbatim), those with Redis's clock as their effects. */
static void test_replica_gets_the_same_state(void **state)
{
    struct rs_server replica = {0};
    char port[16], *m, *r;
    /* diskless: the replica keeps no dump.rdb in the test's directory */
    const char *replicaof[] = {"--replicaof",          "127.0.0.1", port,
                               "--repl-diskless-load", "swapdb",    NULL};
    redisContext *rr;
    redisReply *w;

    (void)state;
    snprintf(port, sizeof(port), "%d", server.port);
    replica.extra = replicaof;
    assert_int_equal(rs_start(&replica), 0);
    rr = connect_to(&replica);
    for (int i = 0; i < 100; i++) { /* until the initial sync is done */
        w = cmd(rc, "WAIT 1 100");
        long long n = w->integer;
        freeReplyObject(w);
        if (n >= 1)
            break;
    }
    traffic(rc, "repl", false);
    traffic(rc, "replclock", true);
    w = cmd(rc, "WAIT 1 5000");
    assert_int_equal(w->integer, 1);
    freeReplyObject(w);
    w = cmd(rr, "INFO commandstats"); /* the replica ran both kinds */
    assert_non_null(strstr(w->str, "cmdstat_SLUICE.CHECK:calls="));
    assert_non_null(strstr(w->str, "cmdstat_set:calls="));
    freeReplyObject(w);
    for (int p = 0; p < 2; p++) {
        m = dump(rc, p == 0 ? "repl*" : "sl:v1:lease:*");
        r = dump(rr, p == 0 ? "repl*" : "sl:v1:lease:*");
        assert_true(strlen(m) > 300);
        assert_string_equal(m, r);
        free(m);
        free(r);
    }
    redisFree(rr);
    rs_stop(&replica);
}

/* Restarted from its AOF, the server holds every state, and decisions go
 * on from them. */
static void test_restart_from_aof(void **state)
{
    struct rs_server aof = {0};
    char dir[] = "/tmp/sluice-aof-XXXXXX", *before, *after;
    redisContext *c;
    redisReply *r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    aof.dir = dir;
    assert_int_equal(rs_start(&aof), 0);
    c = connect_to(&aof);
    traffic(c, "aof", false);
    traffic(c, "aofclock", true);
    before = dump(c, "*");
    redisFree(c);
    rs_stop(&aof);
    assert_int_equal(rs_restart(&aof), 0);
    c = connect_to(&aof);
    after = dump(c, "*");
    assert_string_equal(before, after);
    /* fixed_window 10/min took 10 (one per round, ten rounds): full now */
    r = module_call(c, "check", "aof:5", "1700000000100000,60000,sl", "3,1,0,0,0,60000000,10,0,0");
    assert_int_equal(r->element[1]->integer, 2); /* deny */
    freeReplyObject(r);
    free(before);
    free(after);
    redisFree(c);
    rs_stop(&aof);
    {
        char rm[64];
        snprintf(rm, sizeof(rm), "rm -rf %s", dir);
        assert_int_equal(system(rm), 0);
    }
}

/* ------------------------------------------------ reset, refund, release */

static void test_reset_refund_release(void **state)
{
    redisContext *sub = connect_to(&server);
    redisReply *r;
    char lease[64];

    (void)state;
    r = cmd(sub, "SUBSCRIBE rr:v1:reset");
    freeReplyObject(r);
    for (int i = 0; i < 3; i++)
        freeReplyObject(module_call(rc, "check", "rr:fw", "1700000000000000,1000,rr",
                                    "3,1,0,0,0,60000000,10,0,0"));
    r = module_call(rc, "refund", "rr:fw", "1700000000000000,1000,rr", "3,2,0,0,0,60000000,10,0,0");
    assert_int_equal(r->element[1]->integer, 1);
    freeReplyObject(r);
    r = module_call(rc, "peek", "rr:fw", "1700000000000000,1000,rr", "3,0,0,0,0,60000000,10,0,0");
    assert_int_equal(r->element[2]->integer, 9); /* 3 taken, 2 given back */
    freeReplyObject(r);
    r = module_call(rc, "reset", "rr:fw", "1700000000000000,1000,rr{t}",
                    "3,0,0,0,0,60000000,10,0,0");
    assert_int_equal(r->element[2]->integer, 10);
    freeReplyObject(r);
    r = cmd(rc, "EXISTS rr:fw");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK); /* the announcement */
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[1]->str, "rr:v1:reset");
    assert_string_equal(r->element[2]->str, "rr:fw");
    freeReplyObject(r);
    redisFree(sub);

    /* acquire, then release by the lease's index key; a script releases a
     * lease the module took */
    r = module_call(rc, "check", "rr:cc", "1700000000000000,1000,rr", "6,1,0,0,0,1,10000000,0,0");
    snprintf(lease, sizeof(lease), "%s", r->element[6]->str);
    freeReplyObject(r);
    {
        char idx[96], *dash = strchr(lease, '-');
        assert_non_null(dash);
        snprintf(idx, sizeof(idx), "rr:v1:lease:%.16s:%s", lease, dash + 1);
        r = cmd(rc, "FCALL %s 1 %s release 1700000000000001 1000,rr %s", sl__redis_fn_name, idx,
                dash + 1);
        assert_int_equal(r->element[1]->integer, 1);
        freeReplyObject(r);
        r = cmd(rc, "SLUICE.RELEASE 1 %s 1700000000000002 1000,rr %s", idx, dash + 1);
        assert_int_equal(r->element[1]->integer, 0); /* released already */
        freeReplyObject(r);
    }
    r = module_call(rc, "check", "rr:cc", "1700000000000003,1000,rr", "6,1,0,0,0,1,10000000,0,0");
    assert_int_equal(r->element[1]->integer, 0); /* the slot is free again */
    freeReplyObject(r);
}

/* ------------------------------------------------------ memory bounds */

/* Redis's used_memory (INFO memory), in bytes. */
static long long used_memory(void)
{
    redisReply *r = cmd(rc, "INFO memory");
    const char *p = strstr(r->str, "used_memory:");
    long long v;

    assert_non_null(p);
    v = strtoll(p + strlen("used_memory:"), NULL, 10);
    freeReplyObject(r);
    return v;
}

/* SLUICE.<op> over `n` keys "<tag>:<i>", every one with `item`. */
static redisReply *many_keys(const char *op, const char *tag, int n, const char *item)
{
    const char *argv[4 + 2 * 64];
    char names[64][32], nk[8];
    int argc = 0;

    assert_true(n <= 64);
    snprintf(nk, sizeof(nk), "%d", n);
    argv[argc++] = op;
    argv[argc++] = nk;
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "%s:%d", tag, i);
        argv[argc++] = names[i];
    }
    argv[argc++] = "1700000000000000";
    argv[argc++] = "1000,mb";
    for (int i = 0; i < n; i++)
        argv[argc++] = item;
    return redisCommandArgv(rc, argc, argv, NULL);
}

#define HUGE_LOG "5,0,0,0,0,60000000,1048576,0,0" /* 2^20 entries: 8 MiB of ring */

static void expect_too_big(redisReply *r)
{
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ERROR || strstr(r->str, "SLUICE_TOOBIG") == NULL ||
        strstr(r->str, "max-call-bytes") == NULL)
        fail_msg("wanted SLUICE_TOOBIG naming max-call-bytes, got type %d: %s", r->type,
                 r->str ? r->str : "");
    freeReplyObject(r);
    assert_alive(rc);
}

/* 32 sliding_logs of 2^20 entries in one short PEEK made Redis allocate
 * (and keep) about 900 MB: refused before anything is allocated. The
 * same limit through CHECK creates nothing. A call within the bound that
 * needs a few MiB gives them back when it ends. */
static void test_call_memory_bounded(void **state)
{
    long long before, after;
    redisReply *r;

    (void)state;
    before = used_memory();
    expect_too_big(many_keys("SLUICE.PEEK", "mb:peek", 32, HUGE_LOG));
    after = used_memory();
    printf("used_memory before %lld, after the refused PEEK %lld\n", before, after);
    assert_true(after - before < 4 << 20);
    expect_too_big(many_keys("SLUICE.CHECK", "mb:check", 1, "5,1,0,0,0,60000000,1048576,0,0"));
    r = cmd(rc, "EXISTS mb:check:0");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    assert_true(used_memory() - before < 4 << 20);

    /* 2^18 entries: 2 MiB of ring and room for its encoding, within 8 MiB */
    before = used_memory();
    r = many_keys("SLUICE.CHECK", "mb:big", 1, "5,1,0,0,0,60000000,262144,0,0");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[2]->integer, 262143); /* allowed: one taken */
    freeReplyObject(r);
    after = used_memory();
    printf("used_memory before %lld, after a 2^18-entry CHECK %lld\n", before, after);
    assert_true(after - before < 1 << 20);
}

/* max-call-bytes as a load argument: a smaller bound refuses what the
 * default takes; a bad value refuses the load. */
static void test_max_call_bytes_argument(void **state)
{
    const char *log10k = "5,1,0,0,0,60000000,10000,0,0"; /* about 260 KB */
    redisReply *r;

    (void)state;
    freeReplyObject(many_keys("SLUICE.CHECK", "mc:a", 1, log10k));
    r = cmd(rc, "MODULE UNLOAD sluice");
    freeReplyObject(r);
    r = cmd(rc, "MODULE LOAD %s max-call-bytes 12", getenv("SL_REDIS_MODULE"));
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    r = cmd(rc, "MODULE LOAD %s max-call-bytes", getenv("SL_REDIS_MODULE"));
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    r = cmd(rc, "MODULE LOAD %s max-call-bytes 65536", getenv("SL_REDIS_MODULE"));
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    expect_too_big(many_keys("SLUICE.CHECK", "mc:b", 1, log10k));
    r = cmd(rc, "MODULE UNLOAD sluice");
    freeReplyObject(r);
    r = cmd(rc, "MODULE LOAD %s", getenv("SL_REDIS_MODULE"));
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = many_keys("SLUICE.CHECK", "mc:c", 1, log10k);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
}

/* ------------------------------------------------------------ unload */

static void test_unload_is_clean(void **state)
{
    redisReply *r;

    (void)state;
    freeReplyObject(
        module_call(rc, "check", "un:fw", "1700000000000000,1000,un", "3,1,0,0,0,60000000,3,0,0"));
    r = cmd(rc, "MODULE UNLOAD sluice");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    expect_error("unknown command", "SLUICE.CHECK 1 un:fw 1700000000000000 1000,un "
                                    "3,1,0,0,0,60000000,3,0,0");
    expect_error("unknown command", "CL.THROTTLE un:cell 1 1 1");
    r = function_call(rc, "check", "un:fw", "1700000000000000,1000,un", "3,1,0,0,0,60000000,3,0,0");
    assert_int_equal(r->element[2]->integer, 1); /* the module's count, then this one */
    freeReplyObject(r);
    r = cmd(rc, "MODULE LOAD %s", getenv("SL_REDIS_MODULE"));
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = module_call(rc, "check", "un:fw", "1700000000000000,1000,un", "3,1,0,0,0,60000000,3,0,0");
    assert_int_equal(r->element[2]->integer, 0);
    freeReplyObject(r);
    r = cmd(rc, "CL.THROTTLE un:cell 1 1 60");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 5);
    assert_int_equal(r->element[1]->integer, 2);
    freeReplyObject(r);
}

static void test_version_and_keys(void **state)
{
    redisReply *r;

    (void)state;
    r = cmd(rc, "SLUICE.VERSION");
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "sluice-redis");
    assert_string_equal(r->element[1]->str, SLUICE_VERSION);
    assert_int_equal(r->element[2]->integer, SL__REDIS_MODULE_PROTOCOL);
    freeReplyObject(r);
    r = cmd(rc, "COMMAND GETKEYS SLUICE.CHECK 2 ka kb 1 1,p 3,1,0,0,0,1,1,0,0 3,1,0,0,0,1,1,0,0");
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, "ka");
    assert_string_equal(r->element[1]->str, "kb");
    freeReplyObject(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_keys),
        cmocka_unit_test(test_same_bytes_as_the_function),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_random_mutations),
        cmocka_unit_test(test_reset_refund_release),
        cmocka_unit_test(test_replica_gets_the_same_state),
        cmocka_unit_test(test_restart_from_aof),
        cmocka_unit_test(test_unload_is_clean),
        cmocka_unit_test(test_call_memory_bounded),
        cmocka_unit_test(test_max_call_bytes_argument),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
