/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_redis_diff.c - the differential test of the Redis store: every algorithm's
 * reference traces and random traces (whole-us times, costs below 2^31,
 * random parameters) decided through the memory store
 * (sl_limiter_check_matched) and through Redis on a real redis-server that
 * the test starts, compared field by field; then several
 * limits and descriptors at once (all-or-nothing, shadow, count_rejected,
 * duplicates merged), sliding_window with sub-windows (`buckets`, reference
 * and random traces), key expiry set with the state, and the refusals
 * (SL_ERANGE) of what the script cannot decide exactly.
 *
 * An algorithm without a script fails here: the script answers an error
 * and the comparison asserts a decision. It deliberately does not test the
 * asynchronous store (test_redis_store.c does) nor the over-limit cache
 * (it is not used: every decision goes to Redis).
 *
 * What is not compared: the lease id's value (memory seeds it from the
 * table entry's creation, Redis from the key's; both must be non-zero
 * exactly when a slot is taken).
 *
 * The engine in Redis is $SL_REDIS_ENGINE: "script" (EVALSHA of
 * store/redis/lua/NN_*.lua, the default), "function" (FCALL of the same
 * code as a Redis Functions library) or "module" (the commands of
 * sluice-redis.so, which $SL_REDIS_MODULE names and every server loads);
 * tests/CMakeLists.txt registers the test once per engine, unchanged, and
 * once "mixed": the calls take turns through the three engines on the same
 * keys, as a fleet whose nodes use different engines does (one stored
 * format: they count one limit).
 *
 * Built a second time with SL_DIFF_ON_CLUSTER (tests/redis_cluster,
 * test_cluster_diff): the same traces on a real 3-master Redis Cluster, each
 * call sent to the master of its keys' slot (the descriptors of one check
 * share the first one's tag, so one check is one slot; checks spanning slots
 * are test_cluster_store.c's).
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
#include <hiredis/hiredis.h>

#include "redis_plan.h"
#include "redis_server.h"
#ifdef SL_DIFF_ON_CLUSTER
#include "cluster.h"
#include "redis_cluster.h"
#endif

/* The algorithms Redis decides (adaptive_concurrency is decided on each
 * node, never in Redis). */
#define SL_ALGO_BARE_N SL_ALGO_ADAPTIVE_CONCURRENCY

#define T0_NS       INT64_C(1700000000000000000)
#define US          INT64_C(1000)
#define MS          INT64_C(1000000)
#define S           INT64_C(1000000000)
#define WT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#ifndef SL_DIFF_ON_CLUSTER
static struct rs_server server;
#endif
static redisContext *rc;
static enum sl__redis_engine engine = SL__ENGINE_SCRIPT;
static bool mixed; /* every engine, in turn */
static unsigned n_calls;
static sl_limiter *lim;
static struct sl__redis_opts opts;
static struct sl__redis_cmd cmd; /* large: static */
static unsigned trace_no;
static uint64_t rng = 0x9E3779B97F4A7C15u;
#ifdef SL_DIFF_ON_CLUSTER
static struct rc_cluster cl;
static redisContext *node_ctx[RC_MAX_NODES];
static struct sl__cmap cmap;
#endif

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Uniform in [lo, hi]. */
static int64_t between(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* Load the engine's code on one server (the module is loaded at start);
 * every engine's when mixed. */
static int load_one(redisContext *c)
{
    redisReply *r;
    int ok;

    if (engine == SL__ENGINE_MODULE)
        r = redisCommand(c, "SLUICE.VERSION");
    else if (engine == SL__ENGINE_FUNCTION)
        r = redisCommand(c, "FUNCTION LOAD REPLACE %b", sl__redis_fn, sl__redis_fn_len);
    else
        r = redisCommand(c, "SCRIPT LOAD %b", sl__redis_lua, sl__redis_lua_len);
    if (engine == SL__ENGINE_MODULE)
        ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
             r->element[2]->integer == SL__REDIS_MODULE_PROTOCOL;
    else if (engine == SL__ENGINE_FUNCTION)
        ok = r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, sl__redis_fn_name) == 0;
    else
        ok = r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, sl__redis_lua_sha) == 0;
    if (!ok)
        fprintf(stderr, "loading the engine's code failed: %s\n",
                r != NULL && r->str != NULL ? r->str : "no reply");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int load_code(redisContext *c)
{
    static const enum sl__redis_engine all[] = {SL__ENGINE_SCRIPT, SL__ENGINE_FUNCTION,
                                                SL__ENGINE_MODULE};
    enum sl__redis_engine saved = engine;

    for (size_t i = 0; mixed && i < 3; i++) {
        engine = all[i];
        if (load_one(c) != 0)
            return -1;
    }
    engine = saved;
    return mixed ? 0 : load_one(c);
}

/* $SL_REDIS_ENGINE, script by default. */
static int engine_from_env(void)
{
    const char *e = getenv("SL_REDIS_ENGINE");

    if (e == NULL || strcmp(e, "script") == 0)
        engine = SL__ENGINE_SCRIPT;
    else if (strcmp(e, "function") == 0)
        engine = SL__ENGINE_FUNCTION;
    else if (strcmp(e, "module") == 0 && getenv("SL_REDIS_MODULE") != NULL)
        engine = SL__ENGINE_MODULE;
    else if (strcmp(e, "mixed") == 0 && getenv("SL_REDIS_MODULE") != NULL)
        mixed = true;
    else
        return -1; /* module without SL_REDIS_MODULE, or a typo: fail, never skip */
    return 0;
}

/* Connect and load the code: the one Redis, or every cluster master. */
static int start_redis(void)
{
#ifdef SL_DIFF_ON_CLUSTER
    redisReply *r;

    if (rc_start(&cl, 3, 0) != 0)
        return -1; /* fails the group: redis-server is required */
    for (size_t i = 0; i < cl.n; i++)
        if ((node_ctx[i] = rc_connect(&cl, i)) == NULL)
            return -1;
    rc = node_ctx[0];
    r = redisCommand(rc, "CLUSTER SLOTS");
    sl__cmap_init(&cmap);
    if (r == NULL || sl__cmap_load(&cmap, r, "127.0.0.1") != SL_OK || !sl__cmap_complete(&cmap))
        return -1;
    freeReplyObject(r);
    for (size_t i = 1; i < cl.n; i++)
        if (load_code(node_ctx[i]) != 0)
            return -1;
    return 0;
#else
    if (rs_start(&server) != 0)
        return -1; /* fails the group: redis-server is required */
    rc = redisConnect("127.0.0.1", server.port);
    return rc == NULL || rc->err ? -1 : 0;
#endif
}

#ifdef SL_DIFF_ON_CLUSTER
/* As the store does on a cluster (redis_route.c): a call taking leases
 * names their index keys in its slot, the head's prefix "<prefix>{T}". */
static void lease_prefix(const struct sl__redis_plan *plan)
{
    static char tags[16384][5];
    bool leases = false;

    if (tags[0][0] == '\0')
        assert_int_equal(sl__redis_slot_tags(tags), SL_OK);
    for (size_t k = 0; k < plan->n_items; k++)
        leases = leases || plan->item_l[k]->algo == SL_ALGO_CONCURRENCY;
    if (leases)
        assert_int_equal(
            sl__redis_cmd_tag_prefix(&cmd, tags[sl__redis_keyslot(cmd.argv[3], cmd.argvlen[3])]),
            SL_OK);
}
#endif

/* The connection that serves `key`: the one Redis, or its slot's master. */
static redisContext *ctx_for(const char *key, size_t len)
{
#ifdef SL_DIFF_ON_CLUSTER
    int node = sl__cmap_lookup(&cmap, sl__redis_keyslot(key, len));
    assert_true(node >= 0);
    node = rc_index_of_port(&cl, cmap.nodes[node].port);
    assert_true(node >= 0);
    return node_ctx[node];
#else
    (void)key;
    (void)len;
    return rc;
#endif
}

static int setup(void **state)
{
    struct sl_limiter_config c;

    (void)state;
    if (engine_from_env() != 0) {
        fprintf(stderr, "SL_REDIS_ENGINE must be script, function, or module or mixed (with "
                        "SL_REDIS_MODULE)\n");
        return -1;
    }
    if (start_redis() != 0 || load_code(rc) != 0)
        return -1;
    sl_limiter_config_init(&c);
    c.table.max_bytes = 256u << 20;
    if (sl_limiter_new(&c, &lim) != SL_OK)
        return -1;
    if (getenv("SL_DIFF_SEED") != NULL) /* explore other traces; default fixed */
        rng = strtoull(getenv("SL_DIFF_SEED"), NULL, 0) | 1;
    sl__redis_opts_init(&opts);
    opts.slack_ms = 600000; /* test time runs ahead of Redis's clock */
    opts.engine = engine;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl_limiter_free(lim);
#ifdef SL_DIFF_ON_CLUSTER
    for (size_t i = 0; i < cl.n; i++)
        if (node_ctx[i] != NULL)
            redisFree(node_ctx[i]);
    rc_stop(&cl);
#else
    if (rc != NULL)
        redisFree(rc);
    rs_stop(&server);
#endif
    return 0;
}

/* One check through the script; returns the plan_result code. */
static int redis_check(enum sl__redis_op op, const struct sl_request *req, const struct sl_match *m,
                       size_t n, struct sl_result *res)
{
    static const enum sl__redis_engine turn[] = {SL__ENGINE_MODULE, SL__ENGINE_FUNCTION,
                                                 SL__ENGINE_SCRIPT};
    struct sl__redis_plan plan;
    redisReply *r;
    int rc2;

    if (mixed)
        opts.engine = turn[n_calls++ % 3];
    rc2 = sl__redis_plan_build(
        &opts, &(struct sl__redis_plan_in){.op = op, .req = req, .m = m, .n = n}, &plan, &cmd);

    if (rc2 != SL_OK)
        return rc2;
#ifdef SL_DIFF_ON_CLUSTER
    lease_prefix(&plan);
#endif
    r = redisCommandArgv(ctx_for(cmd.argv[3], cmd.argvlen[3]), cmd.argc - cmd.first,
                         cmd.argv + cmd.first, cmd.argvlen + cmd.first);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "SLUICE_RANGE") == NULL)
        fail_msg("error from Redis: %s", r->str);
    rc2 = sl__redis_plan_result(&plan, r, res, NULL, NULL);
    freeReplyObject(r);
    return rc2;
}

static void describe(const struct sl_limit *l)
{
    fprintf(stderr,
            "limit: %s requests=%llu period_ns=%lld burst=%lld delay=%lld nodelay=%d "
            "min_interval_ns=%lld warmup_ns=%lld lease_ns=%lld count_rejected=%d shadow=%d\n",
            sl_algo_name(l->algo), (unsigned long long)l->requests, (long long)l->period_ns,
            (long long)l->burst, (long long)l->delay, l->nodelay, (long long)l->min_interval_ns,
            (long long)l->warmup_ns, (long long)l->lease_ns, l->count_rejected, l->shadow);
}

static void dump(const char *who, const struct sl_result *r)
{
    fprintf(stderr, "%s: verdict=%d delay=%lld\n", who, r->verdict, (long long)r->delay_ns);
    for (size_t i = 0; i < r->n_statuses; i++) {
        const struct sl_decision *d = &r->statuses[i].d;
        fprintf(stderr,
                "  [%zu] v=%d quota=%lld rem=%lld reset=%lld retry=%lld delay=%lld lease=%d "
                "limit=%p shadow_denied=%d\n",
                i, d->verdict, (long long)d->quota, (long long)d->remaining, (long long)d->reset_ns,
                (long long)d->retry_after_ns, (long long)d->delay_ns, d->lease != 0,
                (const void *)r->statuses[i].limit, r->statuses[i].shadow_denied);
    }
}

/* The memory store estimates a concurrency denial's retry from the hold
 * times of released leases; Redis keeps no such average and answers the
 * lease's expiry, the latest the estimate may be (contracts §Decisions). */
static bool same_retry(const struct sl_status *mem, const struct sl_status *red)
{
    if (mem->limit != NULL && mem->limit->algo == SL_ALGO_CONCURRENCY &&
        mem->d.verdict == SL_DENY && red->d.retry_after_ns > 0)
        return mem->d.retry_after_ns > 0 && mem->d.retry_after_ns <= red->d.retry_after_ns;
    return mem->d.retry_after_ns == red->d.retry_after_ns;
}

static bool same(const struct sl_result *a, const struct sl_result *b)
{
    if (a->verdict != b->verdict || a->delay_ns != b->delay_ns || a->n_statuses != b->n_statuses ||
        (a->lease[0] == '\0') != (b->lease[0] == '\0'))
        return false;
    for (size_t i = 0; i < a->n_statuses; i++) {
        const struct sl_status *x = &a->statuses[i], *y = &b->statuses[i];
        if (x->d.verdict != y->d.verdict || x->d.quota != y->d.quota ||
            x->d.remaining != y->d.remaining || x->d.reset_ns != y->d.reset_ns ||
            !same_retry(x, y) || x->d.delay_ns != y->d.delay_ns ||
            (x->d.lease != 0) != (y->d.lease != 0) || x->limit != y->limit ||
            x->shadow_denied != y->shadow_denied)
            return false;
    }
    return true;
}

/* A request of one descriptor per match, each with entry ("k", key). */
struct check {
    struct sl_request req;
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl_entry e[SL_MAX_DESCRIPTORS];
};

static void check_init(struct check *c, const struct sl_match *m, size_t n, int64_t now_ns,
                       uint64_t cost)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < n; i++) {
        c->e[i].key.p = "k";
        c->e[i].key.len = 1;
#ifdef SL_DIFF_ON_CLUSTER
        c->e[i].value.p = m[0].key; /* one tag: one slot per check */
        c->e[i].value.len = m[0].key_len;
#else
        c->e[i].value.p = m[i].key;
        c->e[i].value.len = m[i].key_len;
#endif
        c->d[i].entries = &c->e[i];
        c->d[i].n_entries = 1;
        c->d[i].hits = -1;
    }
    c->req.domain.p = "diff";
    c->req.domain.len = 4;
    c->req.descriptors = c->d;
    c->req.n_descriptors = n;
    c->req.hits = cost;
    c->req.now_ns = now_ns;
}

/* Decide through both stores and assert the same result. */
static void both(struct check *c, const struct sl_match *m, size_t n, size_t step)
{
    struct sl_result a, b;
    int ra = sl_limiter_check_matched(lim, m, n, &c->req, &a);
    int rb = redis_check(SL__REDIS_CHECK, &c->req, m, n, &b);

    assert_int_equal(ra, SL_OK);
    if (getenv("SL_DIFF_VERBOSE") != NULL) { /* every step, to debug a trace */
        fprintf(stderr, "trace %u step %zu t=%lld cost=%llu\n", trace_no, step,
                (long long)(c->req.now_ns - T0_NS), (unsigned long long)c->req.hits);
        dump("memory", &a);
        if (rb == SL_OK)
            dump("redis", &b);
    }
    if (rb != SL_OK || !same(&a, &b)) {
        fprintf(stderr, "mismatch at trace %u step %zu: t=%lld ns cost=%llu (redis rc %d)\n",
                trace_no, step, (long long)(c->req.now_ns - T0_NS), (unsigned long long)c->req.hits,
                rb);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < m[i].n_limits; j++)
                describe(m[i].limits[j]);
        dump("memory", &a);
        if (rb == SL_OK)
            dump("redis", &b);
        fail();
    }
}

static void match_init(struct sl_match *m, const struct sl_limit *const *l, size_t nl)
{
    memset(m, 0, sizeof(*m));
    for (size_t j = 0; j < nl; j++)
        m->limits[j] = l[j];
    m->n_limits = nl;
    m->key_len = (size_t)snprintf(m->key, sizeof(m->key), "diff\x1ftrace-%u", trace_no);
}

/* ---------------------------------------------------------- one limit */

struct step {
    int64_t t_ns; /* from T0 */
    uint64_t cost;
};

/* Each trace gets a fresh memory store: the table drops drained entries of
 * other keys when it inserts, which would make a clock stepping back over
 * a drained state depend on unrelated traffic. */
static void fresh_limiter(void)
{
    struct sl_limiter_config c;

    sl_limiter_free(lim);
    sl_limiter_config_init(&c);
    c.table.max_bytes = 4u << 20;
    c.table.shards = 1;
    assert_int_equal(sl_limiter_new(&c, &lim), SL_OK);
}

static void run_trace(const struct sl_limit *l, const struct step *s, size_t n)
{
    struct sl_match m;
    struct check c;

    trace_no++;
    fresh_limiter();
    match_init(&m, &l, 1);
    for (size_t i = 0; i < n; i++) {
        check_init(&c, &m, 1, T0_NS + s[i].t_ns, s[i].cost);
        both(&c, &m, 1, i);
    }
}

static struct sl_limit mk(enum sl_algo a, uint64_t requests, int64_t period_ns)
{
    struct sl_limit l;

    sl_limit_init(&l);
    l.algo = a;
    l.requests = requests;
    l.period_ns = period_ns;
    return l;
}

static void finish(struct sl_limit *l)
{
    const char *why = NULL;
    int64_t f[5];

    if (sl_limit_validate(l, &why) != SL_OK)
        fail_msg("invalid test limit: %s", why);
    sl_limit_finish(l);
    assert_int_equal(sl__redis_limit_fields(l, f), SL_OK);
}

/* n requests of `cost` at one instant, then the same spread over time. */
static void burst_then_spread(const struct sl_limit *l, int64_t gap_ns)
{
    struct step s[40];

    for (size_t i = 0; i < 20; i++)
        s[i] = (struct step){0, 1};
    for (size_t i = 20; i < 40; i++)
        s[i] = (struct step){(int64_t)(i - 19) * gap_ns, 1 + (i % 3 == 0)};
    run_trace(l, s, 40);
}

static void test_reference_traces(void **state)
{
    struct sl_limit l;
    /* Guava SmoothWarmingUp, 2 per 1 s, warmup 4 s (docs/contracts.md §Algorithms): allowed
     * at these times; 1 ms earlier denied. */
    static const int64_t guava_ms[] = {0, 1375, 2500, 3375, 4000, 4500, 5000, 5500};
    struct step s[16];

    (void)state;
    l = mk(SL_ALGO_TOKEN_BUCKET, 2, S);
    l.warmup_ns = 4 * S;
    finish(&l);
    for (size_t i = 0; i < 8; i++) {
        s[2 * i] = (struct step){guava_ms[i] * MS - MS, 1};
        s[2 * i + 1] = (struct step){guava_ms[i] * MS, 1};
    }
    run_trace(&l, s + 1, 15);
    run_trace(&l, s, 16);

    /* the same bucket idle for 200 days (an idle time in ns past 2^53) */
    {
        const int64_t day = 86400 * S;
        struct step idle[] = {{0, 1},         {0, 1},         {200 * day, 1},
                              {200 * day, 3}, {400 * day, 1}, {400 * day + 500 * MS, 1}};
        run_trace(&l, idle, WT_COUNT(idle));
    }

    /* redis-cell README: CL.THROTTLE user123 15 30 60 */
    l = mk(SL_ALGO_GCRA, 30, 60 * S);
    l.burst = 15;
    finish(&l);
    burst_then_spread(&l, 1 * S);

    /* nginx limit_req rate=1r/s burst=5 delay=2 (and nodelay) */
    l = mk(SL_ALGO_LEAKY_BUCKET, 1, S);
    l.burst = 5;
    l.delay = 2;
    finish(&l);
    burst_then_spread(&l, 300 * MS);
    l.delay = 0;
    l.nodelay = true;
    finish(&l);
    burst_then_spread(&l, 700 * MS);

    /* bucket4j: 10 per minute, capacity 10; and 5 per second, burst 20 */
    l = mk(SL_ALGO_TOKEN_BUCKET, 10, 60 * S);
    finish(&l);
    burst_then_spread(&l, 5 * S);
    l = mk(SL_ALGO_TOKEN_BUCKET, 5, S);
    l.burst = 20;
    finish(&l);
    burst_then_spread(&l, 90 * MS);

    /* envoyproxy/ratelimit: 10 per minute, epoch-aligned; across a boundary */
    l = mk(SL_ALGO_FIXED_WINDOW, 10, 60 * S);
    finish(&l);
    burst_then_spread(&l, 4 * S);

    /* Cloudflare: 10 per minute, the previous window weighted */
    l = mk(SL_ALGO_SLIDING_WINDOW, 10, 60 * S);
    finish(&l);
    burst_then_spread(&l, 7 * S);

    /* sub-windows: 10 per minute in 3; 500 per hour in minutes */
    l = mk(SL_ALGO_SLIDING_WINDOW, 10, 60 * S);
    l.buckets = 3;
    finish(&l);
    burst_then_spread(&l, 7 * S);
    l = mk(SL_ALGO_SLIDING_WINDOW, 500, 3600 * S);
    l.buckets = 60;
    finish(&l);
    burst_then_spread(&l, 5 * S);

    /* rolling-rate-limiter: 3 per 10 s, minDifference 1 s */
    l = mk(SL_ALGO_SLIDING_LOG, 3, 10 * S);
    l.min_interval_ns = S;
    finish(&l);
    burst_then_spread(&l, 800 * MS);

    /* Stripe / limit_conn: 3 in flight, lease 10 s */
    l = mk(SL_ALGO_CONCURRENCY, 3, 0);
    l.lease_ns = 10 * S;
    finish(&l);
    burst_then_spread(&l, 2 * S);
}

/* -------------------------------------------------------- random traces */

static int64_t rand_period_ns(void)
{
    switch (rnd() % 4) {
    case 0:
        return between(1, 1000) * MS;
    case 1:
        return between(1, 120) * S;
    case 2:
        return between(1, 5000000) * US; /* any whole microsecond */
    default:
        return (int64_t[]){S, 60 * S, 3600 * S, 86400 * S}[rnd() % 4];
    }
}

static uint64_t rand_requests(void)
{
    return rnd() % 4 == 0 ? (uint64_t)between(1, 1000) : (uint64_t)between(1, 20);
}

static bool with_buckets; /* sliding_window: always sub-windows */

static struct sl_limit rand_limit(enum sl_algo a)
{
    struct sl_limit l = mk(a, rand_requests(), rand_period_ns());

    l.count_rejected = rnd() % 3 == 0;
    switch (a) {
    case SL_ALGO_TOKEN_BUCKET:
        if (rnd() % 3 == 0) {
            l.requests = (uint64_t)between(1, 10);
            l.period_ns = between(1, 2000) * MS;
            l.warmup_ns = between(1, 8000) * MS;
        } else if (rnd() % 2) {
            l.burst = between(1, 50);
        }
        break;
    case SL_ALGO_GCRA:
        l.burst = rnd() % 4 == 0 ? -1 : between(0, 40);
        break;
    case SL_ALGO_LEAKY_BUCKET:
        l.burst = rnd() % 4 == 0 ? -1 : between(0, 30);
        if (rnd() % 3 == 0)
            l.nodelay = true;
        else if (l.burst > 0)
            l.delay = between(0, l.burst);
        break;
    case SL_ALGO_SLIDING_WINDOW: /* large: the script's big-integer path */
    case SL_ALGO_FIXED_WINDOW:
        if (rnd() % 4 == 0) {
            l.requests = (uint64_t)between(100000, 100000000);
            l.period_ns = between(1, 30 * 24) * 3600 * S;
        }
        if (a == SL_ALGO_SLIDING_WINDOW && (with_buckets || rnd() % 3 == 0)) {
            /* sub-windows of whole microseconds */
            static const int64_t some[] = {2, 3, 10, 60, 0};
            int64_t n = some[rnd() % 5], p_us = l.period_ns / US;
            if (n == 0)
                n = between(1, SL_SW_BUCKETS_MAX);
            l.buckets = (uint16_t)n;
            l.period_ns = (p_us < n ? n : p_us / n * n) * US;
        }
        break;
    case SL_ALGO_SLIDING_LOG:
        if (rnd() % 2)
            l.min_interval_ns = between(0, 3000) * MS;
        break;
    case SL_ALGO_CONCURRENCY:
        l.period_ns = 0;
        l.lease_ns = between(1, 30000) * MS;
        l.count_rejected = false;
        break;
    default:
        break;
    }
    finish(&l);
    return l;
}

/* The largest recorded huge cost for `l`: a few of them keep every duration
 * of the trace below 2^53 ns and, for the buckets, the debt below the 2^52
 * units where the script saturates it (docs/distributed.md, exact range). */
static int64_t cost_cap(const struct sl_limit *l)
{
    int64_t per_us = l->period_ns / 1000 / (int64_t)l->requests + 1;
    int64_t c = (INT64_C(1) << 40) / per_us;
    int64_t max = (INT64_C(1) << 31) - 1;
    int64_t f[5];

    if (l->algo <= SL_ALGO_LEAKY_BUCKET && sl__redis_limit_fields(l, f) == SL_OK && f[0] == 0 &&
        (INT64_C(1) << 46) / f[1] < c)
        c = (INT64_C(1) << 46) / f[1];
    return c < 1 ? 1 : c > max ? max : c;
}

/* Costs: mostly around the quota, some 0 (peek), a few huge (< 2^31). A
 * huge cost that gets recorded (count_rejected; warm-up admits any cost)
 * is bounded so that the state stays in the exact range the store
 * documents (docs/distributed.md). */
static uint64_t rand_cost(const struct sl_limit *l)
{
    int64_t q = sl_limit_quota(l);
    uint64_t r = rnd() % 100;

    if (r < 8)
        return 0;
    if (r < 94)
        return (uint64_t)between(1, r < 60 ? 2 : q + 2);
    if (l->count_rejected || l->warmup_ns > 0)
        return (uint64_t)between(1, cost_cap(l));
    return (uint64_t)between(1, (INT64_C(1) << 31) - 1);
}

static int64_t rand_dt(const struct sl_limit *l)
{
    int64_t p = l->period_ns > 0 ? l->period_ns : l->lease_ns;
    uint64_t r = rnd() % 100;

    if (r < 25)
        return 0;
    if (r < 55)
        return between(1, 1000) * US;
    if (r < 85)
        return between(0, p / US / 4 + 1) * US;
    if (r < 95)
        return between(0, 3 * p / US + 1) * US;
    return -between(0, p / US + 1) * US; /* the clock steps back */
}

static void random_traces(enum sl_algo a)
{
    for (int t = 0; t < 200; t++) {
        struct sl_limit l = rand_limit(a);
        struct step s[60];
        int64_t now = between(0, 86400) * S + between(0, 999999) * US;

        for (size_t i = 0; i < 60; i++) {
            now += rand_dt(&l);
            s[i] = (struct step){now, rand_cost(&l)};
        }
        run_trace(&l, s, 60);
    }
}

static void test_random_token_bucket(void **st)
{
    (void)st;
    random_traces(SL_ALGO_TOKEN_BUCKET);
}
static void test_random_gcra(void **st)
{
    (void)st;
    random_traces(SL_ALGO_GCRA);
}
static void test_random_leaky_bucket(void **st)
{
    (void)st;
    random_traces(SL_ALGO_LEAKY_BUCKET);
}
static void test_random_fixed_window(void **st)
{
    (void)st;
    random_traces(SL_ALGO_FIXED_WINDOW);
}
static void test_random_sliding_window(void **st)
{
    (void)st;
    random_traces(SL_ALGO_SLIDING_WINDOW);
}
static void test_random_sliding_window_buckets(void **st)
{
    (void)st;
    with_buckets = true;
    random_traces(SL_ALGO_SLIDING_WINDOW);
    with_buckets = false;
}
static void test_random_sliding_log(void **st)
{
    (void)st;
    random_traces(SL_ALGO_SLIDING_LOG);
}
static void test_random_concurrency(void **st)
{
    (void)st;
    random_traces(SL_ALGO_CONCURRENCY);
}

/* ------------------------------------------------------- many limits */

/* Two or three descriptors, each with one to three limits of random
 * algorithms, sometimes the same limit on the same key twice (merged),
 * sometimes shadow: all-or-nothing and contracts §Decisions reporting must agree. */
static void test_many_limits(void **state)
{
    (void)state;
    for (int t = 0; t < 150; t++) {
        struct sl_limit l[9];
        const struct sl_limit *pl[3];
        struct sl_match m[3];
        size_t nd = (size_t)between(1, 3), nl = 0;
        struct check c;
        int64_t now = between(0, 86400) * S;

        trace_no++;
        fresh_limiter();
        for (size_t i = 0; i < nd; i++) {
            size_t k = (size_t)between(1, 3);
            for (size_t j = 0; j < k; j++) {
                l[nl] = rand_limit((enum sl_algo)(rnd() % SL_ALGO_BARE_N));
                l[nl].shadow = rnd() % 5 == 0;
                pl[j] = &l[nl++];
            }
            match_init(&m[i], pl, k);
            m[i].key_len += (size_t)snprintf(m[i].key + m[i].key_len, 8, "/%zu", i);
        }
        if (nd > 1 && rnd() % 3 == 0) /* the same key and limit twice */
            m[nd - 1] = m[0];
        for (size_t step = 0; step < 40; step++) {
            /* Time only moves forward here: with several keys, the memory
             * table may forget a drained key while inserting another (and
             * recreate it later), which moves the contracts §Time clamp of a clock that
             * steps back; Redis keeps a whole state for the expiry slack.
             * Both obey contracts §Time; the single-limit traces (one key per table,
             * nothing forgotten) keep their steps back. */
            int64_t dt = rand_dt(&l[0]);
            now += dt > 0 ? dt : 0;
            check_init(&c, m, nd, T0_NS + now, rnd() % 4 == 0 ? 0 : (uint64_t)between(1, 4));
            if (rnd() % 3 == 0)
                c.d[0].hits = between(0, 3);
            both(&c, m, nd, step);
        }
    }
}

/* --------------------------------------------- expiry and refusals */

static void test_expiry_set_with_state(void **state)
{
    struct sl_limit l = mk(SL_ALGO_FIXED_WINDOW, 5, 10 * S);
    const struct sl_limit *pl = &l;
    struct sl_match m;
    struct check c;
    struct sl_result res;
    struct sl__redis_plan plan;
    redisReply *r;

    (void)state;
    finish(&l);
    trace_no++;
    match_init(&m, &pl, 1);
    check_init(&c, &m, 1, T0_NS + 3 * S, 1);
    assert_int_equal(redis_check(SL__REDIS_CHECK, &c.req, &m, 1, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(
        sl__redis_plan_build(&opts, &(struct sl__redis_plan_in){SL__REDIS_CHECK, &c.req, &m, 1},
                             &plan, &cmd),
        SL_OK);
    r = redisCommand(ctx_for(cmd.argv[3], cmd.argvlen[3]), "PTTL %b", cmd.argv[3], cmd.argvlen[3]);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    /* 7 s left in the window, plus the slack: never -1 (no expiry). */
    assert_true(r->integer > 0);
    assert_true(r->integer <= 7000 + opts.slack_ms);
    freeReplyObject(r);

    /* A peek writes nothing: a new key stays absent. */
    trace_no++;
    match_init(&m, &pl, 1);
    check_init(&c, &m, 1, T0_NS, 1);
    assert_int_equal(redis_check(SL__REDIS_PEEK, &c.req, &m, 1, &res), SL_OK);
    assert_int_equal(res.statuses[0].d.remaining, 5);
    assert_int_equal(
        sl__redis_plan_build(&opts, &(struct sl__redis_plan_in){SL__REDIS_PEEK, &c.req, &m, 1},
                             &plan, &cmd),
        SL_OK);
    r = redisCommand(ctx_for(cmd.argv[3], cmd.argvlen[3]), "EXISTS %b", cmd.argv[3],
                     cmd.argvlen[3]);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
}

static void test_refusals(void **state)
{
    struct sl_limit l = mk(SL_ALGO_GCRA, 10, S);
    const struct sl_limit *pl = &l;
    struct sl_match m;
    struct check c;
    struct sl_result res;
    int64_t f[5];

    (void)state;
    finish(&l);
    trace_no++;
    match_init(&m, &pl, 1);
    check_init(&c, &m, 1, T0_NS, UINT64_C(1) << 31); /* contracts §Time: costs >= 2^31 refused */
    assert_int_equal(redis_check(SL__REDIS_CHECK, &c.req, &m, 1, &res), SL_ERANGE);
    check_init(&c, &m, 1, T0_NS, (UINT64_C(1) << 31) - 1);
    assert_int_equal(redis_check(SL__REDIS_CHECK, &c.req, &m, 1, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    assert_int_equal(res.statuses[0].d.retry_after_ns, -1);

    l.period_ns = S + 1; /* not a whole microsecond */
    assert_int_equal(sl__redis_limit_fields(&l, f), SL_ERANGE);
    l = mk(SL_ALGO_GCRA, 999983, 86400 * S); /* capacity * period/gcd >= 2^52 */
    l.burst = 999983;
    assert_int_equal(sl__redis_limit_fields(&l, f), SL_ERANGE);
    l = mk(SL_ALGO_SLIDING_WINDOW, 1000000000, 365 * 86400 * S); /* big integers: fine */
    assert_int_equal(sl__redis_limit_fields(&l, f), SL_OK);
    l = mk(SL_ALGO_SLIDING_WINDOW, 10, S);
    l.buckets = 500; /* 2 ms sub-windows: fine, and N is the script's c */
    assert_int_equal(sl__redis_limit_fields(&l, f), SL_OK);
    assert_int_equal(f[3], 500);
    l.buckets = 512; /* 1 s / 512 is whole ns but not whole us */
    assert_int_equal(sl_limit_validate(&l, NULL), SL_OK);
    assert_int_equal(sl__redis_limit_fields(&l, f), SL_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_traces),
        cmocka_unit_test(test_random_token_bucket),
        cmocka_unit_test(test_random_gcra),
        cmocka_unit_test(test_random_leaky_bucket),
        cmocka_unit_test(test_random_fixed_window),
        cmocka_unit_test(test_random_sliding_window),
        cmocka_unit_test(test_random_sliding_window_buckets),
        cmocka_unit_test(test_random_sliding_log),
        cmocka_unit_test(test_random_concurrency),
        cmocka_unit_test(test_many_limits),
        cmocka_unit_test(test_expiry_set_with_state),
        cmocka_unit_test(test_refusals),
    };
    signal(SIGPIPE, SIG_IGN); /* as sluiced does: writing to a Redis that died is EPIPE */
    return cmocka_run_group_tests(tests, setup, teardown);
}
