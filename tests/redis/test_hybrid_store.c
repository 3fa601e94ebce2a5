/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_hybrid_store.c - the hybrid store (store/hybrid/) as three nodes in
 * one process, three stores on one loop, on one real redis-server:
 *
 *  - a generated load (seeded, reproducible) spread at random over the
 *    nodes, with the syncs driven by the load's clock (every
 *    sync_interval of request time, never a real timer): the fleet's
 *    admitted count in every window is at most the limit plus the stated
 *    bound (docs/distributed.md: what other nodes admitted in the last
 *    two sync intervals), and at least min(offered, limit) - for
 *    fixed_window, sliding_window (aligned windows) and token_bucket (any
 *    window of one period: burst + requests);
 *  - Redis frozen with SIGSTOP under load then resumed: local decisions go
 *    on, the deltas are kept (gauge), nothing crashes, and once Redis is
 *    back every admitted request is in Redis's totals;
 *  - a node stopped while Redis cannot take its deltas, then freed (its
 *    blocking final push) and started again: nothing it admitted is lost,
 *    and the new node knows the fleet's count after its first sync;
 *  - the check path allocates nothing (malloc counted by interposition)
 *    and makes no round trip (the store's sync_calls counter and Redis's
 *    INFO commandstats unchanged over thousands of checks);
 *  - a request with a sliding_log limit is decided through the Redis path.
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

#include "hybrid.h"
#include "redis_server.h"
#include "store_wait.h"

#define MS      INT64_C(1000000)
#define S       INT64_C(1000000000)
#define T0_NS   INT64_C(1750000000000000000)
#define NODES   3
#define SYNC_MS 50

/* ---------------------------------------------------------- counting malloc */

#if !defined(__SANITIZE_ADDRESS__) && !defined(__has_feature)
#define SL_COUNT_MALLOC 1
#elif defined(__has_feature)
#if !__has_feature(address_sanitizer)
#define SL_COUNT_MALLOC 1
#endif
#endif

static unsigned long long mallocs;
#ifdef SL_COUNT_MALLOC
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
void *malloc(size_t n)
{
    __atomic_add_fetch(&mallocs, 1, __ATOMIC_RELAXED);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    __atomic_add_fetch(&mallocs, 1, __ATOMIC_RELAXED);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    __atomic_add_fetch(&mallocs, 1, __ATOMIC_RELAXED);
    return __libc_realloc(p, n);
}
#endif

/* ---------------------------------------------------------- fixture */

static struct rs_server server;
static uv_loop_t loop;
static uv_timer_t tick;
static struct sl__redis_config rcfg;
static struct sl__hybrid_config hcfg;
static struct sl__store *nodes[NODES];
static unsigned key_no;
/* The test clock: every test starts after the last time the previous one
 * used (the nodes' time only moves forward, as a daemon's). */
static int64_t clock_ns = T0_NS;

/* The first time >= clock_ns + 1 s aligned on `period`; moves the clock. */
static int64_t start_at(int64_t period_ns)
{
    int64_t t = clock_ns + S;

    t += period_ns - t % period_ns;
    clock_ns = t;
    return t;
}

static struct sl__hybrid_stats stats(int i)
{
    struct sl__hybrid_stats s;

    sl__store_hybrid_stats(nodes[i], &s);
    return s;
}

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

static void wait_connected(int i)
{
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 5000; !stats(i).connected && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(stats(i).connected);
}

static void make_node(int i)
{
    sl__store_free(nodes[i]);
    nodes[i] = NULL;
    assert_int_equal(sl__store_hybrid_new(&loop, &hcfg, &nodes[i]), SL_OK);
    wait_connected(i);
}

/* Every node syncs at `now` and the replies are in. */
static void sync_all(int64_t now)
{
    for (int i = 0; i < NODES; i++)
        sl__store_hybrid_sync(nodes[i], now);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 5000; uv_now(&loop) < end;) {
        bool out = false;
        for (int i = 0; i < NODES; i++)
            out = out || stats(i).in_flight > 0;
        if (!out)
            break;
        uv_run(&loop, UV_RUN_ONCE);
    }
}

static int setup(void **state)
{
    (void)state;
    if (rs_start(&server) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    sl__redis_config_init(&rcfg);
    rcfg.port = server.port;
    rcfg.timeout_ms = 50;
    hcfg.sync_interval_ms = SYNC_MS;
    hcfg.timeout_ms = 1000; /* generous: a loaded machine must not lose calls */
    hcfg.max_keys = 4096;
    hcfg.batch = 64;
    hcfg.max_bytes = 4u << 20;
    hcfg.redis = &rcfg;
    for (int i = 0; i < NODES; i++)
        make_node(i);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < NODES; i++)
        sl__store_free(nodes[i]);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
    rs_stop(&server);
    return 0;
}

/* ---------------------------------------------------------- one limit */

struct one {
    struct sl_limit l;
    struct sl_match m;
    struct sl_entry e;
    struct sl_descriptor d;
    struct sl_request req;
};

static void one_init(struct one *o, enum sl_algo a, uint64_t requests, int64_t period_ns)
{
    memset(o, 0, sizeof(*o));
    sl_limit_init(&o->l);
    o->l.algo = a;
    o->l.requests = requests;
    o->l.period_ns = period_ns;
    assert_int_equal(sl_limit_validate(&o->l, NULL), SL_OK);
    sl_limit_finish(&o->l);
    o->m.limits[0] = &o->l;
    o->m.n_limits = 1;
    o->m.key_len = (size_t)snprintf(o->m.key, sizeof(o->m.key), "hybrid-test-%u", ++key_no);
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

/* The fleet's total of o's window at `now` in Redis: the key the store
 * names (docs/distributed.md). */
static long long key_total(const struct one *o, int64_t now)
{
    static const uint8_t k[16] = {'s', 'l', 'u', 'i', 'c', 'e', '-', 'h',
                                  'y', 'b', 'r', 'i', 'd', '-', 'v', '1'};
    char buf[SL_KEY_MAX + 8];
    uint64_t h[2];
    long long n = 0;
    redisReply *r;

    memcpy(buf, o->m.key, o->m.key_len);
    for (int b = 0; b < 8; b++)
        buf[o->m.key_len + (size_t)b] = (char)(o->l.id >> (8 * b));
    sl_siphash13_128(k, buf, o->m.key_len + 8, h);
    r = admin("GET %s:h1:{%016llx%016llx}:%lld", rcfg.opts.prefix, (unsigned long long)h[0],
              (unsigned long long)h[1], (long long)(now / o->l.period_ns));
    assert_non_null(r);
    if (r->type == REDIS_REPLY_STRING)
        n = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return n;
}

/* Check on node i at now: the verdict (the store answers before returning). */
static enum sl_verdict check_on(int i, struct one *o, int64_t now)
{
    struct sl__store_req q = {.req = &o->req, .m = &o->m, .n = 1};
    struct answer a;

    memset(&a, 0, sizeof(a));
    o->req.now_ns = now;
    assert_int_equal(nodes[i]->ops->check(nodes[i], &q, sw_on_answer, &a), SL_OK);
    assert_true(a.done);
    assert_int_equal(a.err, SL_OK);
    return a.res.verdict;
}

/* A reproducible generator (xorshift64*). */
static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

/*
 * `windows` windows of `period_ms` with a request every ms on average
 * (0..2 per ms, so ~1000 per second), each to a random node; syncs every
 * SYNC_MS of request time. Checks every window: admitted <= cap + B, where
 * B is the most requests offered in any span of two sync intervals (the
 * bound: what the other nodes admitted that a node had not seen yet), and
 * admitted >= min(offered, floor). Returns the largest overshoot.
 */
static long long run_fleet(enum sl_algo a, uint64_t requests, int64_t period_ms, int windows,
                           long long cap, long long floor_)
{
    struct one o;
    int64_t t0 = start_at(period_ms * MS); /* aligned on a window */
    int64_t n_ms = period_ms * windows;
    unsigned *offered = calloc((size_t)n_ms, sizeof(*offered));
    long long worst = 0, b = 0, span = 2 * SYNC_MS;
    long long *adm = calloc((size_t)windows, sizeof(*adm));
    long long *off = calloc((size_t)windows, sizeof(*off));

    assert_non_null(offered);
    assert_non_null(adm);
    assert_non_null(off);
    uint64_t failures[NODES];

    for (int i = 0; i < NODES; i++)
        failures[i] = stats(i).sync_failures;
    one_init(&o, a, requests, period_ms * MS);
    rng_state = UINT64_C(0x5eed) + (uint64_t)a;
    for (int64_t ms = 0; ms < n_ms; ms++) {
        int64_t now = t0 + ms * MS;
        if (ms % SYNC_MS == 0)
            sync_all(now);
        offered[ms] = (unsigned)(rng() % 3);
        for (unsigned k = 0; k < offered[ms]; k++) {
            int node = (int)(rng() % NODES);
            off[ms / period_ms]++;
            if (check_on(node, &o, now) != SL_DENY)
                adm[ms / period_ms]++;
        }
    }
    /* B: the most requests offered in any span of two sync intervals */
    for (int64_t ms = 0, sum = 0; ms < n_ms; ms++) {
        sum += offered[ms];
        if (ms >= span)
            sum -= offered[ms - span];
        if (sum > b)
            b = sum;
    }
    for (int w = 0; w < windows; w++) {
        long long over = adm[w] - cap;
        print_message("%s window %d: offered %lld admitted %lld (cap %lld, bound %lld)\n",
                      sl_algo_name(a), w, off[w], adm[w], cap, cap + b);
        assert_true(adm[w] <= cap + b);
        assert_true(adm[w] >= (off[w] < floor_ ? off[w] : floor_));
        if (over > worst)
            worst = over;
    }
    for (int i = 0; i < NODES; i++) /* every sync went through */
        assert_int_equal(stats(i).sync_failures, failures[i]);
    clock_ns = t0 + n_ms * MS;
    free(offered);
    free(adm);
    free(off);
    return worst;
}

static void test_fleet_bound_fixed_window(void **state)
{
    (void)state;
    /* 100 per second against ~1000 offered per second */
    long long worst = run_fleet(SL_ALGO_FIXED_WINDOW, 100, 1000, 8, 100, 100);
    print_message("fixed_window: largest overshoot %lld\n", worst);
}

static void test_fleet_bound_sliding_window(void **state)
{
    (void)state;
    /* aligned windows: the sliding estimate counts at least the current
     * window, so the current window alone never passes the limit + bound;
     * the floor is loose (the previous window's weight may deny early) */
    long long worst = run_fleet(SL_ALGO_SLIDING_WINDOW, 100, 1000, 8, 100, 1);
    print_message("sliding_window: largest overshoot %lld\n", worst);
}

static void test_fleet_bound_token_bucket(void **state)
{
    (void)state;
    /* burst = requests (the default): one period admits at most
     * burst + requests on one node; the fleet that plus the bound. The
     * floor: at least 80 % of the rate is admitted (the others' counts are
     * absorbed once, not more) */
    long long worst = run_fleet(SL_ALGO_TOKEN_BUCKET, 100, 1000, 8, 200, 80);
    print_message("token_bucket: largest overshoot over burst + rate %lld\n", worst);
}

static void test_fleet_bound_gcra(void **state)
{
    (void)state;
    long long worst = run_fleet(SL_ALGO_GCRA, 100, 1000, 6, 200, 80);
    print_message("gcra: largest overshoot over burst + rate %lld\n", worst);
}

/* ---------------------------------------------------------- request path */

static void test_check_path_allocates_nothing_no_round_trip(void **state)
{
    struct one o[64];
    int64_t now = start_at(3600 * S);
    unsigned long long m0;
    long long evals;
    uint64_t calls[NODES], checks0 = stats(0).checks;

    (void)state;
    for (int k = 0; k < 64; k++) {
        one_init(&o[k], k % 2 ? SL_ALGO_FIXED_WINDOW : SL_ALGO_TOKEN_BUCKET, 1000000, 3600 * S);
        for (int i = 0; i < NODES; i++)
            check_on(i, &o[k], now); /* the keys and entries exist */
    }
    sync_all(now);
    evals = calls_of("evalsha");
    for (int i = 0; i < NODES; i++)
        calls[i] = stats(i).sync_calls;
    m0 = __atomic_load_n(&mallocs, __ATOMIC_RELAXED);
    for (int r = 0; r < 3000; r++)
        for (int i = 0; i < NODES; i++)
            assert_int_equal(check_on(i, &o[(r + i) % 64], now + r), SL_ALLOW);
#ifdef SL_COUNT_MALLOC
    assert_int_equal(__atomic_load_n(&mallocs, __ATOMIC_RELAXED), m0);
#else
    (void)m0;
#endif
    for (int i = 0; i < NODES; i++)
        assert_int_equal(stats(i).sync_calls, calls[i]);
    assert_int_equal(calls_of("evalsha"), evals);
    assert_true(stats(0).checks >= checks0 + 3000);
    /* the deltas are kept, and go with the next sync (one call per node:
     * the 64 keys fit one batch) */
    assert_true(stats(0).kept >= 3000);
    sync_all(now + 3000);
    clock_ns = now + 3000;
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(stats(i).sync_calls, calls[i] + 1);
        assert_int_equal(stats(i).kept, 0);
    }
}

/* ---------------------------------------------------------- failures */

/* One long window: every admitted request of the test is in one counter. */
static void test_redis_paused_then_resumed(void **state)
{
    struct one o;
    int64_t now = start_at(3600 * S);
    long long admitted = 0;
    uint64_t failures = 0;

    (void)state;
    one_init(&o, SL_ALGO_FIXED_WINDOW, 1000000, 3600 * S);
    for (int r = 0; r < 300; r++)
        admitted += check_on(r % NODES, &o, now) != SL_DENY;
    sync_all(now);
    assert_int_equal(key_total(&o, now), admitted);

    rs_signal(&server, SIGSTOP);
    for (int step = 1; step <= 6; step++) {
        now += SYNC_MS * MS;
        for (int r = 0; r < 100; r++)
            admitted += check_on(r % NODES, &o, now) != SL_DENY;
        for (int i = 0; i < NODES; i++)
            sl__store_hybrid_sync(nodes[i], now);
        sw_spin(&loop, NULL, 60);
    }
    sw_spin(&loop, NULL, 2500); /* the calls time out (1 s), reconnections fail */
    for (int i = 0; i < NODES; i++) {
        failures += stats(i).sync_failures;
        assert_true(stats(i).kept > 0); /* deltas kept, counted */
    }
    assert_true(failures > 0);
    assert_int_equal(admitted, 900); /* decisions went on */

    rs_signal(&server, SIGCONT);
    for (int i = 0; i < NODES; i++)
        wait_connected(i);
    now += SYNC_MS * MS;
    sync_all(now);
    for (int i = 0; i < NODES; i++)
        assert_int_equal(stats(i).kept, 0);
    /* nothing lost; a call that timed out while Redis was frozen may have
     * been executed when it woke, and its deltas pushed again (counted
     * twice, never lost) */
    print_message("admitted %lld, in Redis %lld\n", admitted, key_total(&o, now));
    assert_true(key_total(&o, now) >= admitted);
    clock_ns = now;
}

static void test_node_restart_keeps_deltas(void **state)
{
    struct one o;
    int64_t now = start_at(3600 * S);
    (void)state;
    one_init(&o, SL_ALGO_FIXED_WINDOW, 100, 3600 * S);
    /* nodes 0 and 1 take 60, synced */
    for (int r = 0; r < 60; r++)
        assert_int_equal(check_on(r % 2, &o, now), SL_ALLOW);
    sync_all(now);
    /* node 2 takes 30 and stops before any sync: its final push keeps them */
    for (int r = 0; r < 30; r++)
        assert_int_equal(check_on(2, &o, now), SL_ALLOW);
    assert_int_equal(stats(2).kept, 30);
    sl__store_free(nodes[2]);
    nodes[2] = NULL;
    assert_int_equal(key_total(&o, now), 90);
    make_node(2);
    /* the new node 2 knows nothing until its first sync on the key */
    assert_int_equal(check_on(2, &o, now), SL_ALLOW);
    sync_all(now + MS);
    /* now it knows the fleet's 91: 9 more, then denied */
    for (int r = 0; r < 9; r++)
        assert_int_equal(check_on(2, &o, now + MS), SL_ALLOW);
    assert_int_equal(check_on(2, &o, now + MS), SL_DENY);
    /* the others learn the same within two syncs (a sync that reads before
     * node 2's push lands sees it on the next) */
    sync_all(now + 2 * MS);
    sync_all(now + 2 * MS);
    assert_int_equal(check_on(0, &o, now + 2 * MS), SL_DENY);
    assert_int_equal(check_on(1, &o, now + 2 * MS), SL_DENY);
    assert_int_equal(key_total(&o, now), 100);
    clock_ns = now + 2 * MS;
}

/* Node i syncs at `now` and its reply is in. */
static void sync_one(int i, int64_t now)
{
    sl__store_hybrid_sync(nodes[i], now);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 5000; stats(i).in_flight > 0 && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(stats(i).in_flight, 0);
}

/*
 * A reset on one node reaches the fleet: the counters in Redis are deleted
 * and the other nodes forget the key at their next sync. The resetting
 * node does not take, from a sync answer that was already on its way, the
 * counts of before the reset.
 */
static void test_reset_reaches_the_fleet(void **state)
{
    struct one o;
    int64_t now = start_at(3600 * S);
    struct sl__store_req q = {.req = &o.req, .m = &o.m, .n = 1};
    struct answer a;
    struct sl__store *kept[NODES];
    struct sl__hybrid_config auto_cfg = hcfg;
    (void)state;
    /* nodes that sync only when told, so that the order below is exact */
    memcpy(kept, nodes, sizeof(kept));
    hcfg.manual_sync = true;
    for (int i = 0; i < NODES; i++) {
        nodes[i] = NULL;
        make_node(i);
    }
    one_init(&o, SL_ALGO_FIXED_WINDOW, 100, 3600 * S);
    for (int i = 0; i < NODES; i++)
        for (int r = 0; r < 30; r++)
            assert_int_equal(check_on(i, &o, now), SL_ALLOW);
    sync_one(1, now);
    sync_one(2, now); /* the fleet's total is 60 */
    /* node 0's sync is sent (its answer would say 90: 60 from others)... */
    sl__store_hybrid_sync(nodes[0], now);
    /* ...and the key is reset on node 0 before the answer is read */
    memset(&a, 0, sizeof(a));
    o.req.now_ns = now;
    assert_int_equal(nodes[0]->ops->reset(nodes[0], &q, sw_on_answer, &a), SL_OK);
    assert_true(a.done);
    assert_int_equal(stats(0).fleet_resets, 1);
    /* a request before the answer: the key has a state again */
    assert_int_equal(check_on(0, &o, now), SL_ALLOW);
    sync_one(0, now); /* the sync, then the reset, ran in Redis */
    assert_int_equal(key_total(&o, now), 0);
    /* node 0 starts from nothing: the 60 of the others from before the
     * reset, in the answer, are not added */
    for (int r = 0; r < 59; r++)
        assert_int_equal(check_on(0, &o, now), SL_ALLOW);
    /* nodes 1 and 2 forget their 30 at their next sync */
    sync_one(1, now);
    sync_one(2, now);
    assert_int_equal(stats(1).fleet_resets_applied, 1);
    assert_int_equal(stats(2).fleet_resets_applied, 1);
    /* and learn node 0's 60 once it pushed them: 40 left on node 1 */
    sync_one(0, now);
    assert_int_equal(key_total(&o, now), 60);
    sync_one(1, now);
    for (int r = 0; r < 40; r++)
        assert_int_equal(check_on(1, &o, now), SL_ALLOW);
    assert_int_equal(check_on(1, &o, now), SL_DENY);
    sync_one(1, now);
    assert_int_equal(key_total(&o, now), 100);
    assert_int_equal(stats(0).fleet_resets_unsent, 0);
    /* a marker that is not a number (written by something else) is read as
     * none: the syncs go on */
    {
        redisReply *k = admin("KEYS %s:h1:*:r", rcfg.opts.prefix);
        uint64_t failures = stats(0).sync_failures;
        assert_non_null(k);
        assert_int_equal(k->type, REDIS_REPLY_ARRAY);
        assert_int_equal(k->elements, 1);
        freeReplyObject(admin("SET %s not-a-time", k->element[0]->str));
        freeReplyObject(k);
        sync_one(0, now);
        assert_int_equal(stats(0).sync_failures, failures);
        assert_int_equal(stats(0).fleet_resets_applied, 0);
        assert_int_equal(check_on(0, &o, now), SL_DENY); /* it learned node 1's 40 */
    }
    clock_ns = now + MS;
    for (int i = 0; i < NODES; i++) {
        sl__store_free(nodes[i]);
        nodes[i] = kept[i];
    }
    hcfg = auto_cfg;
}

static void test_sliding_log_goes_through_redis(void **state)
{
    struct one o;
    int64_t now = start_at(S);
    /* one call each, by whichever engine the store detected */
    long long evals = calls_of("evalsha") + calls_of("fcall") + calls_of("sluice.check");
    uint64_t rp = stats(0).redis_path;
    struct sl__store_req q = {.req = &o.req, .m = &o.m, .n = 1};
    struct answer a;

    (void)state;
    one_init(&o, SL_ALGO_SLIDING_LOG, 2, 60 * S);
    o.req.now_ns = now;
    /* the Redis path's connections come up in the background */
    for (int tries = 0; tries < 200; tries++) {
        if (sl__store_redis_ready(sl__store_hybrid_inner(nodes[0])))
            break;
        sw_spin(&loop, NULL, 10);
    }
    for (int r = 0; r < 3; r++) {
        memset(&a, 0, sizeof(a));
        assert_int_equal(nodes[0]->ops->check(nodes[0], &q, sw_on_answer, &a), SL_OK);
        sw_spin(&loop, &a.done, 2000);
        assert_true(a.done);
        assert_int_equal(a.res.verdict, r < 2 ? SL_ALLOW : SL_DENY);
    }
    assert_int_equal(stats(0).redis_path, rp + 3);
    assert_true(calls_of("evalsha") + calls_of("fcall") + calls_of("sluice.check") >= evals + 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fleet_bound_fixed_window),
        cmocka_unit_test(test_fleet_bound_sliding_window),
        cmocka_unit_test(test_fleet_bound_token_bucket),
        cmocka_unit_test(test_fleet_bound_gcra),
        cmocka_unit_test(test_check_path_allocates_nothing_no_round_trip),
        cmocka_unit_test(test_redis_paused_then_resumed),
        cmocka_unit_test(test_node_restart_keeps_deltas),
        cmocka_unit_test(test_reset_reaches_the_fleet),
        cmocka_unit_test(test_sliding_log_goes_through_redis),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
