/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_redis_store.c - the asynchronous Redis store (store/redis/redis.c) against
 * real redis-server processes: the engine detected on connect (the module
 * when loaded, else Functions; a forced one that is missing never gets
 * ready), exactly one call per check in that engine and none for an
 * over-limit cache hit (INFO commandstats), every failure policy while
 * Redis is stopped with SIGSTOP (answered within 20x the timeout, the
 * bound the store promises), recovery after SIGCONT, a kill and restart,
 * the code flushed (SCRIPT FLUSH, FUNCTION FLUSH) or the module unloaded,
 * the Functions library sent on a reconnection only when Redis lacks it,
 * AUTH, reset and concurrency release.
 *
 * $SL_REDIS_ENGINE (auto by default) sets store.redis.engine;
 * tests/CMakeLists.txt runs the test with auto on a plain Redis (Functions),
 * with script, and with auto on Redis with the module loaded.
 *
 * The loop is driven here (a ticking timer keeps it alive: the store's own
 * handles are unreferenced so they never hold a worker open). It does not
 * compare decisions with the memory store field by field
 * (test_redis_diff.c does).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include "redis.h"
#include "redis_server.h"
#include "store_wait.h"

#define S          INT64_C(1000000000)
#define T0_NS      INT64_C(1750000000000000000)
#define TIMEOUT_MS 200 /* an answer under a loaded parallel ctest must not time out */

static struct rs_server server;
static uv_loop_t loop;
static uv_timer_t tick;
static sl_limiter *local;
static struct sl__store *store;
static struct sl__redis_config cfg;
static unsigned key_no;
static enum sl__redis_engine expected; /* what the store must use */

static bool ready_within(uint64_t max_ms)
{
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + max_ms; uv_now(&loop) < end;) {
        if (sl__store_redis_ready(store))
            return true;
        uv_run(&loop, UV_RUN_ONCE);
    }
    return sl__store_redis_ready(store);
}

static struct sl__redis_stats stats(void)
{
    struct sl__redis_stats s;

    sl__store_redis_stats(store, &s);
    return s;
}

/* A synchronous client for inspecting the server. */
static redisReply *admin(const char *fmt, ...)
{
    va_list ap;
    redisContext *c = redisConnect("127.0.0.1", server.port);
    redisReply *r;

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* calls=N of `cmd` in INFO commandstats (0 when never called); a module
 * command is listed under the case it was registered with. */
static long long calls_of(const char *cmd)
{
    redisReply *r = admin("INFO commandstats");
    char needle[64];
    const char *p;
    long long n = 0;

    assert_non_null(r);
    snprintf(needle, sizeof(needle), "cmdstat_%s:calls=", cmd);
    p = strstr(r->str, needle);
    if (p != NULL)
        n = strtoll(p + strlen(needle), NULL, 10);
    freeReplyObject(r);
    return n;
}

/* Calls of every decision command (all engines): a check is one of them. */
static long long decision_calls(void)
{
    static const char *const cmds[] = {"evalsha",       "fcall",        "SLUICE.CHECK",
                                       "SLUICE.PEEK",   "SLUICE.RESET", "SLUICE.REFUND",
                                       "SLUICE.RELEASE"};
    long long n = 0;

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        n += calls_of(cmds[i]);
    return n;
}

/* The check command of the expected engine. */
static const char *check_cmd(void)
{
    return expected == SL__ENGINE_MODULE     ? "SLUICE.CHECK"
           : expected == SL__ENGINE_FUNCTION ? "fcall"
                                             : "evalsha";
}

static bool ready_store_within(struct sl__store *s, uint64_t max_ms)
{
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + max_ms; !sl__store_redis_ready(s) && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    return sl__store_redis_ready(s);
}

static void make_store(void)
{
    sl__store_free(store);
    store = NULL;
    assert_int_equal(sl__store_redis_new(&loop, &cfg, local, &store), SL_OK);
    assert_true(ready_within(3000));
    for (int i = 0; i < 3000 && !stats().olc_active; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(stats().olc_active);
}

static int setup(void **state)
{
    struct sl_limiter_config lc;

    const char *e = getenv("SL_REDIS_ENGINE");

    (void)state;
    sl__redis_config_init(&cfg);
    if (e == NULL || strcmp(e, "auto") == 0)
        expected = getenv("SL_REDIS_MODULE") != NULL ? SL__ENGINE_MODULE : SL__ENGINE_FUNCTION;
    else if (strcmp(e, "script") == 0)
        expected = cfg.engine = SL__ENGINE_SCRIPT;
    else if (strcmp(e, "function") == 0)
        expected = cfg.engine = SL__ENGINE_FUNCTION;
    else if (strcmp(e, "module") == 0 && getenv("SL_REDIS_MODULE") != NULL)
        expected = cfg.engine = SL__ENGINE_MODULE;
    else
        return -1; /* never skip: a typo or a missing module fails */
    if (rs_start(&server) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    sl_limiter_config_init(&lc);
    lc.table.max_bytes = 16u << 20;
    if (sl_limiter_new(&lc, &local) != SL_OK)
        return -1;
    cfg.port = server.port;
    cfg.timeout_ms = TIMEOUT_MS;
    cfg.opts.slack_ms = 600000;
    cfg.policy = SL__POLICY_LOCAL;
    memcpy(cfg.domains[0].domain, "fail-open", sizeof("fail-open"));
    cfg.domains[0].policy = SL__POLICY_ALLOW;
    memcpy(cfg.domains[1].domain, "fail-closed", sizeof("fail-closed"));
    cfg.domains[1].policy = SL__POLICY_DENY;
    cfg.n_domains = 2;
    make_store();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl__store_free(store);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
    sl_limiter_free(local);
    rs_stop(&server);
    return 0;
}

/* One descriptor with one limit, its own key. */
struct one {
    struct sl_limit l;
    struct sl_match m;
    struct sl_entry e;
    struct sl_descriptor d;
    struct sl_request req;
};

static void one_init(struct one *o, const char *domain, enum sl_algo a, uint64_t requests,
                     int64_t period_ns)
{
    memset(o, 0, sizeof(*o));
    sl_limit_init(&o->l);
    o->l.algo = a;
    o->l.requests = requests;
    o->l.period_ns = period_ns;
    if (a == SL_ALGO_CONCURRENCY)
        o->l.lease_ns = 30 * S;
    assert_int_equal(sl_limit_validate(&o->l, NULL), SL_OK);
    sl_limit_finish(&o->l);
    o->m.limits[0] = &o->l;
    o->m.n_limits = 1;
    o->m.key_len = (size_t)snprintf(o->m.key, sizeof(o->m.key), "store-test-%u", ++key_no);
    o->e.key = (struct sl_str){"k", 1};
    o->e.value = (struct sl_str){o->m.key, o->m.key_len};
    o->d.entries = &o->e;
    o->d.n_entries = 1;
    o->d.hits = -1;
    o->req.domain = (struct sl_str){domain, strlen(domain)};
    o->req.descriptors = &o->d;
    o->req.n_descriptors = 1;
    o->req.hits = 1;
    o->req.now_ns = T0_NS;
}

static void start_check(struct one *o, struct answer *a)
{
    struct sl__store_req q = {.req = &o->req, .m = &o->m, .n = 1};

    memset(a, 0, sizeof(*a));
    a->started_ms = sw_now_ms();
    assert_int_equal(store->ops->check(store, &q, sw_on_answer, a), SL_OK);
}

static struct answer check_now(struct one *o)
{
    struct answer a;

    start_check(o, &a);
    sw_spin(&loop, &a.done, 2000);
    assert_true(a.done);
    return a;
}

/* --------------------------------------------------------------- tests */

static void test_engine_detected(void **state)
{
    (void)state;
    assert_int_equal(stats().engine, expected);
}

static void test_one_call_per_check(void **state)
{
    struct one o;
    long long before, all;

    (void)state;
    one_init(&o, "d", SL_ALGO_GCRA, 10, 60 * S);
    o.l.burst = 2;
    sl_limit_finish(&o.l);
    before = calls_of(check_cmd());
    all = decision_calls();
    for (int i = 0; i < 3; i++) {
        struct answer a = check_now(&o);
        assert_int_equal(a.err, SL_OK);
        assert_int_equal(a.res.verdict, SL_ALLOW);
        assert_int_equal(a.res.statuses[0].d.remaining, 2 - i);
    }
    assert_int_equal(calls_of(check_cmd()) - before, 3);
    assert_int_equal(decision_calls() - all, 3); /* and no other command decided */
    assert_int_equal(stats().script_calls >= 3, true);
}

static void test_over_limit_cache_avoids_round_trips(void **state)
{
    struct one o;
    struct answer a;
    long long before;
    uint64_t hits;

    (void)state;
    one_init(&o, "d", SL_ALGO_FIXED_WINDOW, 2, 60 * S);
    o.req.now_ns = T0_NS - T0_NS % (60 * S) + 10 * S; /* 50 s left in the window */
    for (int i = 0; i < 2; i++)
        assert_int_equal(check_now(&o).res.verdict, SL_ALLOW);
    a = check_now(&o); /* denied by Redis: learnt */
    assert_int_equal(a.res.verdict, SL_DENY);
    before = decision_calls();
    hits = stats().olc_hits;
    for (int i = 0; i < 50; i++) {
        o.req.now_ns += S / 10;
        o.req.hits = 1 + (uint64_t)(i % 3); /* costs >= the denied one */
        a = check_now(&o);
        assert_int_equal(a.res.verdict, SL_DENY);
        assert_true(a.res.statuses[0].d.retry_after_ns > 0);
        assert_ptr_equal(a.res.statuses[0].limit, &o.l);
    }
    assert_int_equal(decision_calls(), before); /* 0 commands for 50 checks */
    assert_int_equal(stats().olc_hits - hits, 50);

    /* A peek (cost 0) is not covered: it goes to Redis. */
    o.req.hits = 0;
    a = check_now(&o);
    assert_int_equal(a.res.verdict, SL_ALLOW);
    assert_int_equal(decision_calls(), before + 1);

    /* Past the window the cached denial is over: Redis admits again. */
    o.req.hits = 1;
    o.req.now_ns = T0_NS - T0_NS % (60 * S) + 61 * S;
    a = check_now(&o);
    assert_int_equal(a.res.verdict, SL_ALLOW);
    assert_int_equal(decision_calls(), before + 2);
}

static void test_reset_forgets_state_and_cache(void **state)
{
    struct one o;
    struct answer a;
    struct sl__store_req q;

    (void)state;
    one_init(&o, "d", SL_ALGO_FIXED_WINDOW, 1, 3600 * S);
    assert_int_equal(check_now(&o).res.verdict, SL_ALLOW);
    assert_int_equal(check_now(&o).res.verdict, SL_DENY);
    q = (struct sl__store_req){.req = &o.req, .m = &o.m, .n = 1};
    memset(&a, 0, sizeof(a));
    assert_int_equal(store->ops->reset(store, &q, sw_on_answer, &a), SL_OK);
    sw_spin(&loop, &a.done, 2000);
    assert_true(a.done);
    assert_int_equal(a.err, SL_OK);
    assert_int_equal(a.res.statuses[0].d.remaining, 1);
    assert_int_equal(check_now(&o).res.verdict, SL_ALLOW); /* not the cached denial */
}

static void test_concurrency_release(void **state)
{
    struct one o;
    struct answer a, r;
    char lease[SL_LEASE_MAX];

    (void)state;
    one_init(&o, "d", SL_ALGO_CONCURRENCY, 1, 0);
    a = check_now(&o);
    assert_int_equal(a.res.verdict, SL_ALLOW);
    assert_true(a.res.lease[0] != '\0');
    memcpy(lease, a.res.lease, sizeof(lease));
    assert_int_equal(check_now(&o).res.verdict, SL_DENY);

    memset(&r, 0, sizeof(r));
    assert_int_equal(store->ops->release(store,
                                         &(struct sl__store_lease){lease, strlen(lease), T0_NS, -1},
                                         sw_on_answer, &r),
                     SL_OK);
    sw_spin(&loop, &r.done, 2000);
    assert_int_equal(r.err, SL_OK);
    assert_int_equal(check_now(&o).res.verdict, SL_ALLOW);

    memset(&r, 0, sizeof(r));
    assert_int_equal(store->ops->release(store,
                                         &(struct sl__store_lease){lease, strlen(lease), T0_NS, -1},
                                         sw_on_answer, &r),
                     SL_OK);
    sw_spin(&loop, &r.done, 2000);
    assert_int_equal(r.err, SL_ENOENT); /* released already */
    assert_int_equal(store->ops->release(store, &(struct sl__store_lease){"nonsense", 8, T0_NS, -1},
                                         sw_on_answer, &r),
                     SL_EINVAL);
}

/* The code gone from Redis: the script cache or the functions flushed
 * (reloaded and the call resent, nothing lost), or the module unloaded
 * (that call gets the policy; the connection detects its engine again and
 * goes on with Functions, and back to the module after MODULE LOAD and a
 * reconnection). */
static void test_code_flushed(void **state)
{
    struct one o;
    redisReply *r;
    uint64_t before = stats().noscript;

    (void)state;
    one_init(&o, "d", SL_ALGO_TOKEN_BUCKET, 5, S);
    if (expected != SL__ENGINE_MODULE) {
        r = admin(expected == SL__ENGINE_FUNCTION ? "FUNCTION FLUSH" : "SCRIPT FLUSH");
        freeReplyObject(r);
        assert_int_equal(check_now(&o).res.verdict, SL_ALLOW);
        assert_int_equal(stats().noscript, before + 1);
        assert_int_equal(check_now(&o).res.statuses[0].d.remaining, 3);
        return;
    }
    r = admin("MODULE UNLOAD sluice");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    assert_int_equal(check_now(&o).err, SL_OK); /* the policy (local) answers */
    sw_spin(&loop, NULL, 200);
    assert_true(ready_within(5000));
    if (cfg.engine == SL__ENGINE_AUTO) {
        assert_int_equal(stats().engine, SL__ENGINE_FUNCTION);
        assert_int_equal(check_now(&o).res.verdict, SL_ALLOW);
    }
    r = admin("MODULE LOAD %s", getenv("SL_REDIS_MODULE"));
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = admin("CLIENT KILL TYPE normal SKIPME yes");
    freeReplyObject(r);
    sw_spin(&loop, NULL, 200);
    assert_true(ready_within(5000));
    assert_int_equal(stats().engine, SL__ENGINE_MODULE);
}

/* Every connection of the store dropped by Redis (CLIENT KILL), then
 * waited for until each has detected its engine again (its FUNCTION LIST
 * seen in INFO commandstats) and the store is ready. */
static void reconnect_all(void)
{
    long long listed = calls_of("function|list");
    redisReply *r = admin("CLIENT KILL TYPE normal SKIPME yes");

    assert_non_null(r);
    freeReplyObject(r);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 5000; uv_now(&loop) < end;) {
        if (calls_of("function|list") - listed >= cfg.connections && sl__store_redis_ready(store))
            break;
        sw_spin(&loop, NULL, 20);
    }
    assert_true(calls_of("function|list") - listed >= cfg.connections);
    assert_true(ready_within(5000));
}

/* A (re)connection asks whether this build's Functions library is loaded
 * (FUNCTION LIST LIBRARYNAME) and sends it (FUNCTION LOAD) only when it is
 * not: none after a reconnection to a Redis that has it, at least one
 * after FUNCTION FLUSH - and then checks find it (no "Function not found"
 * to recover from). Scripts forced: Functions are not asked about. */
static void test_function_library_loaded_only_when_missing(void **state)
{
    struct one o;
    long long loads;
    uint64_t noscript;
    redisReply *r;

    (void)state;
    if (cfg.engine != SL__ENGINE_AUTO && cfg.engine != SL__ENGINE_FUNCTION)
        return;
    loads = calls_of("function|load");
    reconnect_all();
    assert_int_equal(calls_of("function|load"), loads); /* present: not sent */

    r = admin("FUNCTION FLUSH");
    assert_non_null(r);
    freeReplyObject(r);
    reconnect_all();
    assert_true(calls_of("function|load") - loads >= 1); /* missing: loaded */
    assert_true(calls_of("function|load") - loads <= (long long)cfg.connections);
    r = admin("FUNCTION LIST LIBRARYNAME %s", sl__redis_fn_name);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    freeReplyObject(r);
    assert_int_equal(stats().engine, expected);
    noscript = stats().noscript;
    one_init(&o, "d", SL_ALGO_FIXED_WINDOW, 5, 60 * S);
    assert_int_equal(check_now(&o).res.statuses[0].d.remaining, 4);
    assert_int_equal(stats().noscript, noscript);

    loads = calls_of("function|load");
    reconnect_all(); /* loaded again: not sent again */
    assert_int_equal(calls_of("function|load"), loads);
}

/* store.redis.engine forced to the module on a Redis without it: never
 * ready (the policy answers), said once in the log; with Functions forced
 * the library keeps its versioned name and a library of another build
 * stays untouched. */
static void test_forced_engines(void **state)
{
    struct rs_server plain = {0};
    struct sl__redis_config c = cfg;
    struct sl__store *s = NULL;
    char *module = getenv("SL_REDIS_MODULE") ? strdup(getenv("SL_REDIS_MODULE")) : NULL;
    redisContext *rc;
    redisReply *r;

    (void)state;
    unsetenv("SL_REDIS_MODULE");
    assert_int_equal(rs_start(&plain), 0);
    if (module != NULL)
        setenv("SL_REDIS_MODULE", module, 1);
    free(module);
    c.port = plain.port;
    c.engine = SL__ENGINE_MODULE;
    assert_int_equal(sl__store_redis_new(&loop, &c, local, &s), SL_OK);
    assert_false(ready_store_within(s, 500));
    sl__store_free(s);

    rc = redisConnect("127.0.0.1", plain.port);
    assert_true(rc != NULL && rc->err == 0);
    r = redisCommand(
        rc, "FUNCTION LOAD %s",
        "#!lua name=sluice_0_0_9_aaaaaaaaaaaa\n"
        "redis.register_function('sluice_0_0_9_aaaaaaaaaaaa', function() return 1 end)");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
    c.engine = SL__ENGINE_FUNCTION;
    for (int round = 0; round < 2; round++) { /* the second finds it loaded */
        assert_int_equal(sl__store_redis_new(&loop, &c, local, &s), SL_OK);
        assert_true(ready_store_within(s, 3000));
        sl__store_free(s);
    }
    r = redisCommand(rc, "FUNCTION LIST");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2); /* the other build's and ours */
    freeReplyObject(r);
    r = redisCommand(rc, "FCALL sluice_0_0_9_aaaaaaaaaaaa 0");
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    redisFree(rc);
    rs_stop(&plain);
}

/* Under SIGSTOP, 300 concurrent checks in the three policies' domains:
 * every one answered, by its policy, within 20x the timeout. */
static void test_sigstop_policies_then_recovery(void **state)
{
    static struct one o[3];
    static struct answer a[300];
    const char *domains[3] = {"fail-open", "fail-closed", "other"};
    uint64_t replies;

    (void)state;
    for (int d = 0; d < 3; d++)
        one_init(&o[d], domains[d], SL_ALGO_FIXED_WINDOW, 1000, 60 * S);
    rs_signal(&server, SIGSTOP);
    uv_update_time(&loop);
    for (int i = 0; i < 300; i++)
        start_check(&o[i % 3], &a[i]);
    for (int i = 0; i < 300; i++) {
        sw_spin(&loop, &a[i].done, 20 * TIMEOUT_MS + 1000);
        assert_true(a[i].done);
    }
    for (int i = 0; i < 300; i++) {
        assert_int_equal(a[i].err, SL_OK);
        assert_true(a[i].done_ms - a[i].started_ms <= 20 * TIMEOUT_MS);
        assert_int_equal(a[i].res.verdict, i % 3 == 1 ? SL_DENY : SL_ALLOW);
        /* each answer says which policy made it; allow reports the whole
         * quota as remaining (nothing was counted), deny none */
        assert_int_equal(a[i].by, i % 3 == 0   ? SL__BY_ALLOW
                                  : i % 3 == 1 ? SL__BY_DENY
                                               : SL__BY_LOCAL);
        if (i % 3 != 2)
            assert_int_equal(a[i].res.statuses[0].d.remaining, i % 3 == 0 ? 1000 : 0);
    }
    /* local: the memory store counted the 100 "other" checks, one each */
    {
        int64_t least = 1000;
        for (int i = 2; i < 300; i += 3)
            if (a[i].res.statuses[0].d.remaining < least)
                least = a[i].res.statuses[0].d.remaining;
        assert_int_equal(least, 1000 - 100);
    }
    assert_true(stats().timeouts > 0);
    assert_true(stats().policy_local >= 100 && stats().policy_deny >= 100);
    assert_int_not_equal(stats().breaker, SL__BREAKER_CLOSED);
    assert_false(sl__store_redis_ready(store));
    /* The breaker dropped the connections: no slot waits for the frozen
     * Redis any more, and a new check is answered at once. */
    assert_int_equal(stats().in_flight, 0);
    {
        struct answer x;
        start_check(&o[1], &x);
        assert_true(x.done); /* before the start function returned */
        assert_int_equal(x.res.verdict, SL_DENY);
    }

    rs_signal(&server, SIGCONT);
    assert_true(ready_within(5000));
    replies = stats().replies;
    {
        struct answer x = check_now(&o[2]);
        assert_int_equal(x.err, SL_OK);
        assert_int_equal(x.by, SL__BY_STATE); /* Redis decided */
    }
    assert_int_equal(stats().replies, replies + 1);
}

static void test_kill_and_restart(void **state)
{
    struct one o;
    struct answer a;
    int port = server.port;

    (void)state;
    one_init(&o, "fail-closed", SL_ALGO_GCRA, 10, S);
    rs_signal(&server, SIGKILL);
    rs_stop(&server);
    a = check_now(&o);
    assert_int_equal(a.res.verdict, SL_DENY); /* the domain's policy */
    sw_spin(&loop, NULL, 100);
    assert_false(sl__store_redis_ready(store));

    server.port = port; /* same address: the store reconnects by itself */
    assert_int_equal(rs_restart(&server), 0);
    assert_true(ready_within(10000));
    /* Redis decides again: within 2 s. On a loaded machine one check may
     * exceed the 10 ms timeout (the restarted Redis compiles the Functions
     * library for the first connection) and get the policy while Redis
     * still counts it: the next tries come a second later by the caller's
     * clock, when the limit has room again. */
    for (int i = 0; i < 40; i++) {
        a = check_now(&o);
        if (a.res.verdict == SL_ALLOW)
            break;
        o.req.now_ns += S;
        sw_spin(&loop, NULL, 50);
    }
    if (a.res.verdict != SL_ALLOW) {
        struct sl__redis_stats x = stats();
        fprintf(
            stderr,
            "ready=%d breaker=%d conns=%u replies=%llu errors=%llu timeouts=%llu unavail=%llu\n",
            sl__store_redis_ready(store), x.breaker, x.conns_ready, (unsigned long long)x.replies,
            (unsigned long long)x.errors, (unsigned long long)x.timeouts,
            (unsigned long long)x.unavailable);
    }
    assert_int_equal(a.res.verdict, SL_ALLOW);
    assert_true(stats().reconnects > 0);
}

static void test_auth(void **state)
{
    struct rs_server secured = {0};
    struct sl__redis_config c = cfg;
    struct sl__store *s = NULL;
    bool ok;

    (void)state;
    assert_int_equal(rs_start_args(&secured, "--requirepass", "s3cret"), 0);
    c.port = secured.port;
    memcpy(c.password, "s3cret", sizeof("s3cret"));
    assert_int_equal(sl__store_redis_new(&loop, &c, local, &s), SL_OK);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 3000; !sl__store_redis_ready(s) && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    ok = sl__store_redis_ready(s);
    sl__store_free(s);

    memcpy(c.password, "wrong", sizeof("wrong"));
    assert_int_equal(sl__store_redis_new(&loop, &c, local, &s), SL_OK);
    sw_spin(&loop, NULL, 300);
    assert_false(sl__store_redis_ready(s)); /* AUTH refused: never ready */
    sl__store_free(s);
    rs_stop(&secured);
    assert_true(ok);
}

/* AUTH user password, for an ACL user, with the default user disabled. */
static void test_auth_acl_user(void **state)
{
    struct rs_server acl = {0};
    struct sl__redis_config c = cfg;
    struct sl__store *s = NULL;
    redisContext *rc;
    redisReply *r;
    bool ok;

    (void)state;
    assert_int_equal(rs_start(&acl), 0);
    rc = redisConnect("127.0.0.1", acl.port);
    assert_true(rc != NULL && rc->err == 0);
    r = redisCommand(rc, "ACL SETUSER limiter on >pw ~sluice:* &sluice:* +@all");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(rc, "ACL SETUSER default off");
    freeReplyObject(r);
    redisFree(rc);

    c.port = acl.port;
    memcpy(c.user, "limiter", sizeof("limiter"));
    memcpy(c.password, "pw", sizeof("pw"));
    assert_int_equal(sl__store_redis_new(&loop, &c, local, &s), SL_OK);
    ok = ready_store_within(s, 3000);
    sl__store_free(s);

    memcpy(c.user, "nobody", sizeof("nobody"));
    assert_int_equal(sl__store_redis_new(&loop, &c, local, &s), SL_OK);
    assert_false(ready_store_within(s, 300));
    sl__store_free(s);
    rs_stop(&acl);
    assert_true(ok);
}

/* ACL SETUSER e<i> with the keys and channel of the default prefix,
 * nothing else (-@all), then each word of `grant` as its own argument. */
static redisReply *acl_setuser(redisContext *rc, size_t i, const char *grant)
{
    const char *argv[32] = {
        "ACL",           "SETUSER",          NULL,   "on", ">pw", "resetkeys", "~sluice:*",
        "resetchannels", "&sluice:v1:reset", "-@all"};
    char user[16], words[256];
    int argc = 10;

    snprintf(user, sizeof(user), "e%zu", i);
    argv[2] = user;
    snprintf(words, sizeof(words), "%s", grant);
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w != NULL && argc < 32;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    return redisCommandArgv(rc, argc, argv, NULL);
}

/* The ACL an operator grants for each engine (docs/distributed.md, "ACL"),
 * exactly that and nothing more: the store, authenticated as that user,
 * gets ready with that engine and checks, resets and releases leases. */
static void test_acl_per_engine(void **state)
{
    static const struct {
        enum sl__redis_engine engine;
        const char *grant;
    } acls[] = {
        {SL__ENGINE_SCRIPT, "+evalsha +script|load +get +mget +set +del +publish +subscribe"},
        {SL__ENGINE_FUNCTION, "+fcall +function|load +get +mget +set +del +publish +subscribe"},
        {SL__ENGINE_MODULE, "+sluice.version +sluice.check +sluice.peek +sluice.reset "
                            "+sluice.refund +sluice.release +subscribe"},
    };
    struct rs_server acl = {0};
    struct sl__store *saved = store;
    redisContext *rc;
    redisReply *r;

    (void)state;
    assert_int_equal(rs_start(&acl), 0);
    rc = redisConnect("127.0.0.1", acl.port);
    assert_true(rc != NULL && rc->err == 0);
    for (size_t i = 0; i < sizeof(acls) / sizeof(acls[0]); i++) {
        struct sl__redis_config c = cfg;
        struct one o;
        struct answer a;
        struct sl__store_req q;
        char lease[SL_LEASE_MAX];

        if (acls[i].engine == SL__ENGINE_MODULE && getenv("SL_REDIS_MODULE") == NULL)
            continue; /* the module's run of this test covers it */
        r = acl_setuser(rc, i, acls[i].grant);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
        c.port = acl.port;
        c.engine = acls[i].engine;
        snprintf(c.user, sizeof(c.user), "e%zu", i);
        memcpy(c.password, "pw", sizeof("pw"));
        assert_int_equal(sl__store_redis_new(&loop, &c, local, &store), SL_OK);
        assert_true(ready_store_within(store, 3000));
        for (int k = 0; k < 3000 && !stats().olc_active; k++) /* SUBSCRIBE granted */
            uv_run(&loop, UV_RUN_ONCE);
        assert_true(stats().olc_active);
        one_init(&o, "d", SL_ALGO_FIXED_WINDOW, 1, 3600 * S);
        assert_int_equal(check_now(&o).res.verdict, SL_ALLOW);
        assert_int_equal(check_now(&o).res.verdict, SL_DENY);
        q = (struct sl__store_req){.req = &o.req, .m = &o.m, .n = 1};
        memset(&a, 0, sizeof(a));
        assert_int_equal(store->ops->reset(store, &q, sw_on_answer, &a), SL_OK);
        sw_spin(&loop, &a.done, 2000);
        assert_int_equal(a.err, SL_OK);
        assert_int_equal(check_now(&o).res.verdict, SL_ALLOW);
        one_init(&o, "d", SL_ALGO_CONCURRENCY, 1, 0);
        a = check_now(&o);
        assert_int_equal(a.res.verdict, SL_ALLOW);
        memcpy(lease, a.res.lease, sizeof(lease));
        memset(&a, 0, sizeof(a));
        assert_int_equal(
            store->ops->release(store, &(struct sl__store_lease){lease, strlen(lease), T0_NS, -1},
                                sw_on_answer, &a),
            SL_OK);
        sw_spin(&loop, &a.done, 2000);
        assert_int_equal(a.err, SL_OK);
        assert_int_equal(stats().engine, acls[i].engine);
        assert_int_equal(stats().errors, 0);
        sl__store_free(store);
    }
    store = saved;
    redisFree(rc);
    rs_stop(&acl);
}

/* store.clock: redis - Redis TIME decides, not the caller's time: two
 * checks two days apart by the caller's clock fall in one real day. */
static void test_redis_clock(void **state)
{
    struct sl__redis_config c = cfg;
    struct sl__store *s = NULL, *saved = store;
    struct one o;
    struct answer a;

    (void)state;
    c.opts.redis_clock = true;
    assert_int_equal(sl__store_redis_new(&loop, &c, local, &s), SL_OK);
    assert_true(ready_store_within(s, 3000));
    store = s;
    one_init(&o, "d", SL_ALGO_FIXED_WINDOW, 1, 86400 * S);
    a = check_now(&o);
    assert_int_equal(a.res.verdict, SL_ALLOW);
    o.req.now_ns += 2 * 86400 * S;
    a = check_now(&o);
    assert_int_equal(a.res.verdict, SL_DENY); /* by the caller's clock: a new day */
    store = saved;
    sl__store_free(s);
}

/* A peek through the store reports and consumes nothing. */
static void test_peek_consumes_nothing(void **state)
{
    struct one o;
    struct answer a;
    struct sl__store_req q;

    (void)state;
    one_init(&o, "d", SL_ALGO_TOKEN_BUCKET, 3, 60 * S);
    q = (struct sl__store_req){.req = &o.req, .m = &o.m, .n = 1};
    for (int i = 0; i < 5; i++) {
        memset(&a, 0, sizeof(a));
        assert_int_equal(store->ops->peek(store, &q, sw_on_answer, &a), SL_OK);
        sw_spin(&loop, &a.done, 2000);
        assert_int_equal(a.err, SL_OK);
        assert_int_equal(a.res.verdict, SL_ALLOW);
        assert_int_equal(a.res.statuses[0].d.remaining, 3);
    }
    assert_int_equal(check_now(&o).res.statuses[0].d.remaining, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_detected),
        cmocka_unit_test(test_one_call_per_check),
        cmocka_unit_test(test_over_limit_cache_avoids_round_trips),
        cmocka_unit_test(test_reset_forgets_state_and_cache),
        cmocka_unit_test(test_concurrency_release),
        cmocka_unit_test(test_code_flushed),
        cmocka_unit_test(test_function_library_loaded_only_when_missing),
        cmocka_unit_test(test_forced_engines),
        cmocka_unit_test(test_sigstop_policies_then_recovery),
        cmocka_unit_test(test_kill_and_restart),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_auth_acl_user),
        cmocka_unit_test(test_acl_per_engine),
        cmocka_unit_test(test_redis_clock),
        cmocka_unit_test(test_peek_consumes_nothing),
    };
    signal(SIGPIPE, SIG_IGN); /* as sluiced does: writing to a Redis that died is EPIPE */
    return cmocka_run_group_tests(tests, setup, teardown);
}
