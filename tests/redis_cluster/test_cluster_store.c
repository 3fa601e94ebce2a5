/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_cluster_store.c - the asynchronous Redis store in cluster mode
 * (store.redis.cluster: true) on a real Redis Cluster of 3 masters and 3
 * replicas started here: checks routed to the slot's master with exactly
 * the limit admitted; a check spanning slots denied in one slot consumes
 * nothing in the others (after the refund, compared with the memory store,
 * for every refundable algorithm); a slot migrated under load, with ASK and
 * MOVED both seen (the store's counters) and the limit still exact; a
 * master killed: the failure policy answers, then the replica's failover
 * is found and Redis decides again; a check spanning a live master's slot
 * and a paused one's: the policy of its domain for the paused slot, the
 * live slot's count refunded when the whole is denied, and a denial by
 * the live slot reported as Redis's, with its status.
 *
 * Concurrency leases: taken and released on the slot's master (the lease
 * index key carries a tag of that slot).
 *
 * Decisions, not timing: waits are bounded polls of the loop.
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
#include <uv.h>

#include "cluster.h"
#include "redis.h"
#include "redis_cluster.h"
#include "store_wait.h"

#define S     INT64_C(1000000000)
#define T0_NS INT64_C(1750000000000000000)

static struct rc_cluster cl;
static uv_loop_t loop;
static uv_timer_t tick;
static sl_limiter *local;
static struct sl__store *store;
static struct sl__redis_config cfg;
static struct sl__redis_cmd cmd; /* large: static */
static unsigned tag_no;

/* A request of up to 4 descriptors, each one limit, first entry ("t", tag). */
struct req {
    struct sl_limit l[4];
    struct sl_match m[4];
    struct sl_entry e[4];
    struct sl_descriptor d[4];
    char tag[4][32];
    struct sl_request req;
    size_t n;
};

static struct sl__redis_stats stats(void)
{
    struct sl__redis_stats s;

    sl__store_redis_stats(store, &s);
    return s;
}

static void req_init(struct req *r, const char *domain)
{
    memset(r, 0, sizeof(*r));
    r->req.domain = (struct sl_str){domain, strlen(domain)};
    r->req.descriptors = r->d;
    r->req.hits = 1;
    r->req.now_ns = T0_NS;
}

/* Add a descriptor (tag, key) with one limit. */
static void req_add(struct req *r, const char *tag, const char *key, enum sl_algo a,
                    uint64_t requests, int64_t period_ns)
{
    size_t i = r->n++;

    sl_limit_init(&r->l[i]);
    r->l[i].algo = a;
    r->l[i].requests = requests;
    r->l[i].period_ns = period_ns;
    if (a == SL_ALGO_CONCURRENCY)
        r->l[i].lease_ns = 60 * S;
    assert_int_equal(sl_limit_validate(&r->l[i], NULL), SL_OK);
    sl_limit_finish(&r->l[i]);
    snprintf(r->tag[i], sizeof(r->tag[i]), "%s", tag);
    r->m[i].limits[0] = &r->l[i];
    r->m[i].n_limits = 1;
    r->m[i].key_len = (size_t)snprintf(r->m[i].key, sizeof(r->m[i].key), "%s", key);
    r->e[i].key = (struct sl_str){"t", 1};
    r->e[i].value = (struct sl_str){r->tag[i], strlen(r->tag[i])};
    r->d[i].entries = &r->e[i];
    r->d[i].n_entries = 1;
    r->d[i].hits = -1;
    r->req.n_descriptors = r->n;
}

/* The state key of descriptor i (as the store names it) and its slot. */
static unsigned key_of(const struct req *r, size_t i, char *out, size_t cap)
{
    static struct sl__redis_plan plan;
    struct sl_request one = r->req;

    one.descriptors = &r->d[i];
    one.n_descriptors = 1;
    assert_int_equal(sl__redis_plan_build(
                         &cfg.opts, &(struct sl__redis_plan_in){SL__REDIS_CHECK, &one, &r->m[i], 1},
                         &plan, &cmd),
                     SL_OK);
    if (out != NULL)
        snprintf(out, cap, "%.*s", (int)cmd.argvlen[3], cmd.argv[3]);
    return sl__redis_keyslot(cmd.argv[3], cmd.argvlen[3]);
}

static void start_op(struct req *r, struct answer *a, bool peek)
{
    struct sl__store_req q = {.req = &r->req, .m = r->m, .n = r->n};

    memset(a, 0, sizeof(*a));
    if (peek)
        assert_int_equal(store->ops->peek(store, &q, sw_on_answer, a), SL_OK);
    else
        assert_int_equal(store->ops->check(store, &q, sw_on_answer, a), SL_OK);
}

static struct answer run_op(struct req *r, bool peek)
{
    struct answer a;

    start_op(r, &a, peek);
    sw_spin(&loop, &a.done, 5000);
    assert_true(a.done);
    return a;
}

static void make_store(void)
{
    sl__store_free(store);
    store = NULL;
    assert_int_equal(sl__store_redis_new(&loop, &cfg, local, &store), SL_OK);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 10000; uv_now(&loop) < end;) {
        struct sl__redis_stats s = stats();
        if (sl__store_redis_ready(store) && s.map_refreshes > 0 && s.nodes_known >= 3 &&
            s.conns_ready >= 3)
            break;
        uv_run(&loop, UV_RUN_ONCE);
    }
    assert_true(stats().map_refreshes > 0);
    assert_true(stats().conns_ready >= 3);
}

static int setup(void **state)
{
    struct sl_limiter_config lc;

    (void)state;
    if (rc_start(&cl, 6, 1) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    sl_limiter_config_init(&lc);
    lc.table.max_bytes = 16u << 20;
    if (sl_limiter_new(&lc, &local) != SL_OK)
        return -1;
    sl__redis_config_init(&cfg);
    cfg.port = cl.node[0].port;
    cfg.cluster = true;
    snprintf(cfg.nodes, sizeof(cfg.nodes), "127.0.0.1:%d,127.0.0.1:%d", cl.node[1].port,
             cl.node[2].port);
    cfg.connections = 1; /* one connection per node: a refund precedes the next call */
    cfg.timeout_ms = 200;
    cfg.opts.slack_ms = 600000;
    cfg.olc_entries = 0; /* every decision goes to Redis */
    memcpy(cfg.domains[0].domain, "closed", sizeof("closed"));
    cfg.domains[0].policy = SL__POLICY_DENY;
    memcpy(cfg.domains[1].domain, "open", sizeof("open"));
    cfg.domains[1].policy = SL__POLICY_ALLOW;
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
    rc_stop(&cl);
    return 0;
}

/* A fresh tag whose slot, for a request of `domain` (the domain is part of
 * the hash tag), is served by master `only_node` (-1: any) and not by
 * `not_node` (-1: none); its slot in *slot. */
static void fresh_tag_in(const char *domain, char *tag, size_t cap, int only_node, int not_node,
                         unsigned *slot, int *owner)
{
    struct req r;

    for (;;) {
        snprintf(tag, cap, "tag%u", ++tag_no);
        req_init(&r, domain);
        req_add(&r, tag, "k", SL_ALGO_FIXED_WINDOW, 1, S);
        *slot = key_of(&r, 0, NULL, 0);
        *owner = rc_owner(&cl, 0, *slot);
        assert_true(*owner >= 0);
        if (*owner != not_node && (only_node < 0 || *owner == only_node))
            return;
    }
}

/* A fresh tag (domain "cl") whose slot is served by a master other than
 * `not_node`'s (-1: any); its slot in *slot. */
static void fresh_tag(char *tag, size_t cap, int not_node, unsigned *slot, int *owner)
{
    fresh_tag_in("cl", tag, cap, -1, not_node, slot, owner);
}

/* -------------------------------------------------------------- tests */

static void test_checks_routed_to_slot_owner(void **state)
{
    struct sl__redis_stats before = stats(), after;
    bool node_seen[RC_MAX_NODES] = {false};
    unsigned nodes = 0;
    (void)state;

    for (int t = 0; t < 24; t++) {
        char tag[32];
        unsigned slot;
        int owner, allowed = 0;
        struct req r;
        fresh_tag(tag, sizeof(tag), -1, &slot, &owner);
        nodes += !node_seen[owner];
        node_seen[owner] = true;
        req_init(&r, "cl");
        req_add(&r, tag, "k", SL_ALGO_FIXED_WINDOW, 3, 60 * S);
        for (int i = 0; i < 5; i++)
            allowed += run_op(&r, false).res.verdict == SL_ALLOW;
        assert_int_equal(allowed, 3);
    }
    after = stats();
    assert_true(nodes >= 2); /* the keys really were spread */
    assert_int_equal(after.script_calls - before.script_calls, 24 * 5);
    assert_int_equal(after.replies - before.replies, 24 * 5);
    assert_int_equal(after.policy_local + after.policy_allow + after.policy_deny,
                     before.policy_local + before.policy_allow + before.policy_deny);
    assert_int_equal(after.cross_slot, before.cross_slot);
}

/* Memory's answer to the same two checks then a peek of descriptor 0. */
static int64_t memory_remaining_after(struct req *r, struct req *peek0)
{
    struct sl_limiter_config lc;
    struct sl_result res;
    sl_limiter *lim;
    int64_t rem;

    sl_limiter_config_init(&lc);
    assert_int_equal(sl_limiter_new(&lc, &lim), SL_OK);
    assert_int_equal(sl_limiter_check_matched(lim, r->m, r->n, &r->req, &res), SL_OK);
    assert_int_equal(sl_limiter_check_matched(lim, r->m, r->n, &r->req, &res), SL_OK);
    assert_int_equal(res.verdict, SL_DENY);
    peek0->req.hits = 0;
    assert_int_equal(sl_limiter_check_matched(lim, peek0->m, 1, &peek0->req, &res), SL_OK);
    rem = res.statuses[0].d.remaining;
    sl_limiter_free(lim);
    return rem;
}

static void test_cross_slot_denial_consumes_nothing_elsewhere(void **state)
{
    static const enum sl_algo algos[] = {SL_ALGO_FIXED_WINDOW, SL_ALGO_SLIDING_WINDOW,
                                         SL_ALGO_SLIDING_LOG,  SL_ALGO_TOKEN_BUCKET,
                                         SL_ALGO_GCRA,         SL_ALGO_LEAKY_BUCKET};
    (void)state;

    for (size_t k = 0; k < sizeof(algos) / sizeof(algos[0]); k++) {
        char a[32], b[32];
        unsigned sa, sb;
        int oa, ob;
        struct req r, p0;
        struct sl__redis_stats before = stats(), after;
        fresh_tag(a, sizeof(a), -1, &sa, &oa);
        fresh_tag(b, sizeof(b), oa, &sb, &ob); /* another master */
        req_init(&r, "cl");
        req_add(&r, a, "k", algos[k], 10, 60 * S);
        req_add(&r, b, "k", SL_ALGO_FIXED_WINDOW, 1, 60 * S);
        req_init(&p0, "cl");
        req_add(&p0, a, "k", algos[k], 10, 60 * S);
        if (algos[k] == SL_ALGO_GCRA || algos[k] == SL_ALGO_LEAKY_BUCKET) {
            r.l[0].burst = p0.l[0].burst = 9; /* room for more than one at once */
            sl_limit_finish(&r.l[0]);
            sl_limit_finish(&p0.l[0]);
        }

        struct answer first = run_op(&r, false);
        assert_int_equal(first.err, SL_OK);
        assert_int_not_equal(first.res.verdict, SL_DENY);
        after = stats();
        assert_int_equal(after.cross_slot - before.cross_slot, 1);
        assert_int_equal(after.script_calls - before.script_calls, 2); /* one per slot */
        assert_int_equal(after.refunds, before.refunds);               /* all allowed */

        struct answer second = run_op(&r, false);
        assert_int_equal(second.res.verdict, SL_DENY);
        assert_int_equal(second.res.statuses[1].d.verdict, SL_DENY);
        assert_int_equal(stats().refunds - before.refunds, 1);

        /* The refund was sent on a's node before this peek (one ordered
         * connection per node): a's state is as if the denial never was. */
        struct answer peek = run_op(&p0, true);
        assert_int_equal(peek.err, SL_OK);
        assert_int_equal(peek.res.statuses[0].d.remaining, memory_remaining_after(&r, &p0));
        assert_int_equal(stats().refund_failures, 0);
    }
}

/* A concurrency slot taken in a slot whose check is denied elsewhere is
 * released: only the first (allowed) check's lease stays held. */
static void test_cross_slot_denial_releases_leases(void **state)
{
    char a[32], b[32];
    unsigned sa, sb;
    int oa, ob;
    struct req r, p0;
    struct answer first, second, peek;
    (void)state;

    fresh_tag(a, sizeof(a), -1, &sa, &oa);
    fresh_tag(b, sizeof(b), oa, &sb, &ob);
    req_init(&r, "cl");
    req_add(&r, a, "conc", SL_ALGO_CONCURRENCY, 2, 0);
    req_add(&r, b, "k", SL_ALGO_FIXED_WINDOW, 1, 60 * S);
    req_init(&p0, "cl");
    req_add(&p0, a, "conc", SL_ALGO_CONCURRENCY, 2, 0);
    first = run_op(&r, false);
    assert_int_equal(first.res.verdict, SL_ALLOW);
    assert_true(first.res.lease[0] != '\0');
    second = run_op(&r, false);
    assert_int_equal(second.res.verdict, SL_DENY);
    assert_true(second.res.lease[0] == '\0'); /* denied: no lease to hold */
    peek = run_op(&p0, true);
    assert_int_equal(peek.res.statuses[0].d.remaining, 1); /* one held, one free */
    assert_int_equal(stats().refund_failures, 0);
}

static void on_release(void *arg, int err, const struct sl_result *res, enum sl__store_by by);

/* Random checks of 2 or 3 descriptors in different slots (random
 * algorithms, small limits, time moving forward) decided by the cluster
 * store and by the memory store: the same verdict every time, and the same
 * status for every denying descriptor - so the refunds leave exactly the
 * state one all-or-nothing decision would. */
static void test_cross_slot_random_traces_match_memory(void **state)
{
    static const enum sl_algo algos[] = {SL_ALGO_FIXED_WINDOW, SL_ALGO_SLIDING_WINDOW,
                                         SL_ALGO_SLIDING_LOG,  SL_ALGO_TOKEN_BUCKET,
                                         SL_ALGO_GCRA,         SL_ALGO_LEAKY_BUCKET};
    unsigned seed = 20261121, denials = 0, allowed = 0;
    (void)state;

    for (int trace = 0; trace < 25; trace++) {
        struct sl_limiter_config lc;
        sl_limiter *mem;
        struct req r;
        size_t nd = 2 + (size_t)(rand_r(&seed) % 2);
        int64_t now = T0_NS + (int64_t)trace * 7200 * S;

        sl_limiter_config_init(&lc);
        assert_int_equal(sl_limiter_new(&lc, &mem), SL_OK);
        req_init(&r, "cl");
        for (size_t i = 0; i < nd; i++) {
            char tag[32];
            unsigned slot;
            int owner;
            fresh_tag(tag, sizeof(tag), -1, &slot, &owner);
            /* the match key names the descriptor, as the rules would */
            req_add(&r, tag, tag, algos[rand_r(&seed) % 6], 2 + (uint64_t)(rand_r(&seed) % 4),
                    60 * S);
            if (r.l[i].algo == SL_ALGO_SLIDING_WINDOW && trace % 2 == 1) {
                r.l[i].buckets = 6; /* sub-windows: refunded in the right one */
                sl_limit_finish(&r.l[i]);
            }
        }
        for (int step = 0; step < 14; step++) {
            struct sl_result m;
            now += (int64_t)(rand_r(&seed) % 4000) * 1000000; /* 0-4 s */
            r.req.now_ns = now;
            struct answer x = run_op(&r, false);
            assert_int_equal(x.err, SL_OK);
            assert_int_equal(sl_limiter_check_matched(mem, r.m, r.n, &r.req, &m), SL_OK);
            assert_int_equal(x.res.verdict, m.verdict);
            for (size_t i = 0; i < nd; i++) {
                if (m.statuses[i].d.verdict != SL_DENY)
                    continue;
                assert_int_equal(x.res.statuses[i].d.verdict, SL_DENY);
                assert_int_equal(x.res.statuses[i].d.remaining, m.statuses[i].d.remaining);
                assert_int_equal(x.res.statuses[i].d.retry_after_ns,
                                 m.statuses[i].d.retry_after_ns);
            }
            denials += m.verdict == SL_DENY;
            allowed += m.verdict != SL_DENY;
        }
        sl_limiter_free(mem);
    }
    assert_true(denials > 50 && allowed > 50); /* both paths really ran */
    assert_int_equal(stats().refund_failures, 0);
}

/* A token naming leases of two slots is released in both. */
static void test_release_spanning_slots(void **state)
{
    char a[32], b[32];
    unsigned sa, sb;
    int oa, ob;
    struct req r;
    struct answer x, rel, peek;
    (void)state;

    fresh_tag(a, sizeof(a), -1, &sa, &oa);
    fresh_tag(b, sizeof(b), oa, &sb, &ob);
    req_init(&r, "cl");
    req_add(&r, a, "conc", SL_ALGO_CONCURRENCY, 3, 0);
    req_add(&r, b, "conc", SL_ALGO_CONCURRENCY, 3, 0);
    x = run_op(&r, false);
    assert_int_equal(x.res.verdict, SL_ALLOW);
    assert_non_null(strchr(x.res.lease, '.')); /* two pieces */
    memset(&rel, 0, sizeof(rel));
    assert_int_equal(
        store->ops->release(store,
                            &(struct sl__store_lease){x.res.lease, strlen(x.res.lease), T0_NS, -1},
                            on_release, &rel),
        SL_OK);
    sw_spin(&loop, &rel.done, 5000);
    assert_true(rel.done);
    assert_int_equal(rel.err, SL_OK);
    peek = run_op(&r, true);
    assert_int_equal(peek.res.statuses[0].d.remaining, 3); /* both slots free again */
    assert_int_equal(peek.res.statuses[1].d.remaining, 3);
}

/* MIGRATE one key; 0 when Redis said OK or NOKEY. */
static void migrate(size_t from, size_t to, const char *key)
{
    redisReply *x = rc_command(&cl, from, "MIGRATE 127.0.0.1 %d %s 0 5000", cl.node[to].port, key);
    assert_non_null(x);
    assert_int_equal(x->type, REDIS_REPLY_STATUS);
    freeReplyObject(x);
}

static void setslot(size_t on, unsigned slot, const char *how, const char *id)
{
    redisReply *x = rc_command(&cl, on, "CLUSTER SETSLOT %u %s %s", slot, how, id);
    assert_non_null(x);
    assert_int_equal(x->type, REDIS_REPLY_STATUS);
    freeReplyObject(x);
}

/* `n` checks of each request at once; adds the admitted ones. */
static void burst(struct req *r, size_t nr, int n, int *allowed)
{
    static struct answer a[4][16];

    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < nr; j++)
            start_op(&r[j], &a[j][i], false);
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < nr; j++) {
            sw_spin(&loop, &a[j][i].done, 5000);
            assert_true(a[j][i].done);
            assert_int_equal(a[j][i].err, SL_OK);
            allowed[j] += a[j][i].res.verdict == SL_ALLOW;
        }
}

static void test_slot_migration_under_load(void **state)
{
    char tag[32], key[2][256], id_a[41], id_b[41];
    unsigned slot, other_slot;
    int a, b, allowed[2] = {0, 0};
    struct req r[2];
    struct sl__redis_stats before = stats(), after;
    (void)state;

    fresh_tag(tag, sizeof(tag), -1, &slot, &a);
    fresh_tag(key[0], sizeof(key[0]), a, &other_slot, &b); /* b: another master */
    for (int j = 0; j < 2; j++) {
        req_init(&r[j], "cl");
        req_add(&r[j], tag, j == 0 ? "m1" : "m2", SL_ALGO_FIXED_WINDOW, 40, 3600 * S);
        key_of(&r[j], 0, key[j], sizeof(key[j]));
    }
    assert_int_equal(rc_node_id(&cl, (size_t)a, id_a), 0);
    assert_int_equal(rc_node_id(&cl, (size_t)b, id_b), 0);

    burst(r, 2, 10, allowed); /* both keys live on a */
    setslot((size_t)b, slot, "IMPORTING", id_a);
    setslot((size_t)a, slot, "MIGRATING", id_b);
    migrate((size_t)a, (size_t)b, key[0]);
    burst(r, 2, 15, allowed); /* m1 only on b now: ASK; m2 still on a */
    {
        /* One call with both keys while they are split: Redis answers
         * TRYAGAIN; resent a few times, then the policy answers (local: the
         * memory store), so the Redis counts above are untouched. */
        struct req both;
        struct sl__redis_stats s0 = stats();
        req_init(&both, "cl");
        req_add(&both, tag, "m1", SL_ALGO_FIXED_WINDOW, 40, 3600 * S);
        req_add(&both, tag, "m2", SL_ALGO_FIXED_WINDOW, 40, 3600 * S);
        struct answer x = run_op(&both, false);
        assert_int_equal(x.err, SL_OK);
        assert_true(stats().tryagain > s0.tryagain);
        assert_true(stats().policy_local > s0.policy_local);
    }
    migrate((size_t)a, (size_t)b, key[1]);
    for (size_t i = 0; i < cl.n; i++) {
        redisReply *x = rc_command(&cl, i, "ROLE");
        bool master =
            x != NULL && x->type == REDIS_REPLY_ARRAY && strcmp(x->element[0]->str, "master") == 0;
        freeReplyObject(x);
        if (master)
            setslot(i, slot, "NODE", id_b);
    }
    burst(r, 2, 15, allowed); /* the slot is b's: MOVED, then direct */
    burst(r, 2, 10, allowed);

    after = stats();
    assert_true(after.ask > before.ask);
    assert_true(after.moved > before.moved);
    assert_int_equal(after.policy_local, before.policy_local + 1); /* only the split call */
    assert_int_equal(allowed[0], 40);                              /* of 50, across the move */
    assert_int_equal(allowed[1], 40);
}

static void on_release(void *arg, int err, const struct sl_result *res, enum sl__store_by by)
{
    (void)by;
    struct answer *a = arg;

    (void)res;
    a->done = true;
    a->err = err;
}

static void test_concurrency_leases_on_the_cluster(void **state)
{
    for (int t = 0; t < 6; t++) { /* several tags: several slots and masters */
        char tag[32], lease[SL_LEASE_MAX];
        unsigned slot;
        int owner;
        struct req r;
        struct answer x[3], rel;
        (void)state;

        fresh_tag(tag, sizeof(tag), -1, &slot, &owner);
        req_init(&r, "cl");
        req_add(&r, tag, "conc", SL_ALGO_CONCURRENCY, 2, 0);
        for (int i = 0; i < 3; i++)
            x[i] = run_op(&r, false);
        assert_int_equal(x[0].res.verdict, SL_ALLOW);
        assert_int_equal(x[1].res.verdict, SL_ALLOW);
        assert_int_equal(x[2].res.verdict, SL_DENY);
        assert_true(strchr(x[0].res.lease, '-') != NULL);
        snprintf(lease, sizeof(lease), "%s", x[0].res.lease);
        memset(&rel, 0, sizeof(rel));
        assert_int_equal(
            store->ops->release(store, &(struct sl__store_lease){lease, strlen(lease), T0_NS, -1},
                                on_release, &rel),
            SL_OK);
        sw_spin(&loop, &rel.done, 5000);
        assert_true(rel.done);
        assert_int_equal(rel.err, SL_OK);
        assert_int_equal(run_op(&r, false).res.verdict, SL_ALLOW); /* the slot freed */
        memset(&rel, 0, sizeof(rel));
        assert_int_equal(
            store->ops->release(store, &(struct sl__store_lease){lease, strlen(lease), T0_NS, -1},
                                on_release, &rel),
            SL_OK);
        sw_spin(&loop, &rel.done, 5000);
        assert_int_equal(rel.err, SL_ENOENT); /* already released */
    }
}

/* Descriptor i of `r` checked (or peeked) alone, on its slot's master. */
static struct answer alone(struct req *r, size_t i, bool peek)
{
    struct sl_request one = r->req;
    struct sl__store_req q;
    struct answer a;

    one.descriptors = &r->d[i];
    one.n_descriptors = 1;
    q = (struct sl__store_req){.req = &one, .m = &r->m[i], .n = 1};
    memset(&a, 0, sizeof(a));
    if (peek)
        assert_int_equal(store->ops->peek(store, &q, sw_on_answer, &a), SL_OK);
    else
        assert_int_equal(store->ops->check(store, &q, sw_on_answer, &a), SL_OK);
    sw_spin(&loop, &a.done, 5000);
    assert_true(a.done);
    assert_int_equal(a.err, SL_OK);
    return a;
}

/* What the live master holds for descriptor i: a peek that Redis answers. */
static int64_t live_remaining(struct req *r, size_t i)
{
    struct answer a = alone(r, i, true);

    assert_int_equal(a.by, SL__BY_STATE);
    return a.res.statuses[0].d.remaining;
}

static int paused_node = -1; /* CLIENT PAUSE on it, lifted by unpause() */

static void client_pause(int node, bool on)
{
    redisReply *x = on ? rc_command(&cl, (size_t)node, "CLIENT PAUSE 120000 WRITE")
                       : rc_command(&cl, (size_t)node, "CLIENT UNPAUSE");

    assert_non_null(x);
    assert_int_equal(x->type, REDIS_REPLY_STATUS);
    freeReplyObject(x);
    paused_node = on ? node : -1;
}

/* A test's teardown: a node it paused is unpaused, also when it failed. */
static int unpause(void **state)
{
    (void)state;
    if (paused_node >= 0)
        freeReplyObject(rc_command(&cl, (size_t)paused_node, "CLIENT UNPAUSE"));
    paused_node = -1;
    return 0;
}

/* A check spanning two slots on two masters, one of them paused (CLIENT
 * PAUSE WRITE: its checks wait and time out, then its breaker opens and
 * they get the policy at once; its cluster bus and reads go on, so the
 * cluster neither fails it over nor goes down - no timing involved). In
 * each policy, with the descriptors in either order:
 * - the live slot allows: the answer is the policy's for the paused slot
 *   joined with the live slot's (deny: denied, and the live slot's count
 *   refunded; local: this process decides the paused slot; allow: admitted),
 *   and says which policy made it;
 * - the live slot denies: denied, with the live slot's status (Redis's
 *   denial, its limit, its retry), and nothing consumed on the live master;
 *   the denial is Redis's, so it carries no policy.
 * The paused slot's descriptor has limit 1: under local, the second check
 * is denied by this process's count, and the live slot's count refunded. */
static void test_cross_slot_with_a_paused_master(void **state)
{
    static const struct {
        const char *domain;
        int by;
        enum sl_verdict first, second;
        int64_t after_first, after_second; /* the live slot's remaining (of 2) */
    } pols[] = {
        {"closed", SL__BY_DENY, SL_DENY, SL_DENY, 2, 2},
        {"cl", SL__BY_LOCAL, SL_ALLOW, SL_DENY, 1, 1},
        {"open", SL__BY_ALLOW, SL_ALLOW, SL_ALLOW, 1, 0},
    };
    char tag[32];
    unsigned slot;
    int paused;
    struct sl__redis_stats s0 = stats();
    (void)state;

    fresh_tag(tag, sizeof(tag), -1, &slot, &paused);
    client_pause(paused, true);
    for (size_t p = 0; p < sizeof(pols) / sizeof(pols[0]); p++)
        for (size_t ia = 0; ia < 2; ia++) {
            char ta[32], tb[32];
            unsigned sa, sb;
            int oa, ob;
            size_t ib = 1 - ia;
            struct req r;
            struct answer x;

            fresh_tag_in(pols[p].domain, ta, sizeof(ta), -1, paused, &sa, &oa);
            fresh_tag_in(pols[p].domain, tb, sizeof(tb), paused, -1, &sb, &ob);
            req_init(&r, pols[p].domain);
            /* the match key names the descriptor (the local policy counts by it) */
            req_add(&r, ia == 0 ? ta : tb, ia == 0 ? ta : tb, SL_ALGO_FIXED_WINDOW, ia == 0 ? 2 : 1,
                    3600 * S);
            req_add(&r, ia == 0 ? tb : ta, ia == 0 ? tb : ta, SL_ALGO_FIXED_WINDOW, ia == 0 ? 1 : 2,
                    3600 * S);

            x = run_op(&r, false); /* the live slot allows */
            assert_int_equal(x.err, SL_OK);
            assert_int_equal(x.res.verdict, pols[p].first);
            assert_int_equal(x.by, pols[p].by);
            assert_int_equal(x.res.statuses[ia].d.verdict, SL_ALLOW);
            assert_int_equal(x.res.statuses[ib].d.verdict,
                             p == 0 ? SL_DENY : SL_ALLOW); /* deny, local (1 of 1), allow */
            assert_int_equal(live_remaining(&r, ia), pols[p].after_first);

            x = run_op(&r, false);
            assert_int_equal(x.res.verdict, pols[p].second);
            assert_int_equal(x.by, pols[p].by);
            assert_int_equal(live_remaining(&r, ia), pols[p].after_second);

            while (live_remaining(&r, ia) > 0) /* the live slot full */
                assert_int_equal(alone(&r, ia, false).res.verdict, SL_ALLOW);
            x = run_op(&r, false); /* the live slot denies */
            assert_int_equal(x.err, SL_OK);
            assert_int_equal(x.res.verdict, SL_DENY);
            assert_int_equal(x.by, SL__BY_STATE);
            assert_int_equal(x.res.statuses[ia].d.verdict, SL_DENY);
            assert_int_equal(x.res.statuses[ia].d.remaining, 0);
            assert_true(x.res.statuses[ia].d.retry_after_ns > 0);
            assert_non_null(x.res.statuses[ia].limit);
            assert_int_equal(x.res.statuses[ia].limit->requests, 2);
            assert_int_equal(x.res.delay_ns, 0);
            assert_true(x.res.lease[0] == '\0');
            assert_int_equal(live_remaining(&r, ia), 0);
        }
    client_pause(paused, false);
    assert_true(stats().timeouts > s0.timeouts); /* the paused slot's calls did go out */
    assert_int_equal(stats().refund_failures, s0.refund_failures);
    assert_true(stats().refunds > s0.refunds);
    {
        /* the paused master decides again */
        struct req r;
        bool redis = false;
        fresh_tag_in("cl", tag, sizeof(tag), paused, -1, &slot, &paused);
        req_init(&r, "cl");
        req_add(&r, tag, "k", SL_ALGO_FIXED_WINDOW, 1000, 3600 * S);
        for (int i = 0; i < 300 && !redis; i++) {
            redis = alone(&r, 0, false).by == SL__BY_STATE;
            sw_spin(&loop, NULL, redis ? 0 : 20);
        }
        assert_true(redis);
    }
}

/* A master frozen (SIGSTOP) under load: its slots get the policy (after
 * the timeout, then at once while its breaker is open); the other
 * masters' slots are decided by Redis throughout; after SIGCONT its slots
 * are decided by Redis again. */
static void test_frozen_master_only_its_slots_get_the_policy(void **state)
{
    char x[32], y[32];
    unsigned sx, sy;
    int ox, oy, y_allowed = 0, x_redis = 0;
    struct req rx, ry;
    static struct answer ax[20], ay[20];
    struct sl__redis_stats s0, s1;
    (void)state;

    fresh_tag(x, sizeof(x), -1, &sx, &ox);
    fresh_tag(y, sizeof(y), ox, &sy, &oy);
    req_init(&rx, "cl");
    req_add(&rx, x, "k", SL_ALGO_FIXED_WINDOW, 1000000, 3600 * S);
    req_init(&ry, "cl");
    req_add(&ry, y, "k", SL_ALGO_FIXED_WINDOW, 200, 3600 * S);
    rc_signal(&cl, (size_t)ox, SIGSTOP);
    s0 = stats();
    for (int round = 0; round < 10; round++) { /* 200 checks of each, 20 at a time */
        for (int i = 0; i < 20; i++) {
            start_op(&rx, &ax[i], false);
            start_op(&ry, &ay[i], false);
        }
        for (int i = 0; i < 20; i++) {
            sw_spin(&loop, &ax[i].done, 5000);
            sw_spin(&loop, &ay[i].done, 5000);
            assert_true(ax[i].done && ay[i].done);
            y_allowed += ay[i].res.verdict == SL_ALLOW;
        }
    }
    s1 = stats();
    rc_signal(&cl, (size_t)ox, SIGCONT);
    assert_int_equal(y_allowed, 200);                      /* exact: Redis decided y */
    assert_true(s1.policy_local - s0.policy_local >= 150); /* x: the policy */
    assert_true(s1.policy_local - s0.policy_local <= 200); /* never y */
    assert_true(s1.replies - s0.replies >= 200);           /* y's replies */
    for (int i = 0; i < 300 && x_redis < 3; i++) {         /* x recovers */
        struct sl__redis_stats b = stats();
        run_op(&rx, false);
        x_redis += stats().replies > b.replies;
        sw_spin(&loop, NULL, 20);
    }
    assert_int_equal(x_redis, 3);
}

/* Last: a master killed. The policy answers while its slots have no
 * master; the replica takes over and Redis decides again. */
static void test_master_killed_policy_then_failover(void **state)
{
    char tag[32];
    unsigned slot;
    int owner;
    struct req r;
    struct answer x;
    bool policy_seen = false, recovered = false;
    (void)state;

    fresh_tag(tag, sizeof(tag), -1, &slot, &owner);
    req_init(&r, "closed");
    req_add(&r, tag, "k", SL_ALGO_FIXED_WINDOW, 1000000, 3600 * S);
    x = run_op(&r, false);
    assert_int_equal(x.res.verdict, SL_ALLOW);

    rc_signal(&cl, (size_t)owner, SIGKILL);
    for (int i = 0; i < 400 && !recovered; i++) { /* up to ~40 s */
        struct sl__redis_stats s0 = stats(), s1;
        x = run_op(&r, false);
        s1 = stats();
        assert_int_equal(x.err, SL_OK);
        if (s1.policy_deny > s0.policy_deny) {
            policy_seen = true;
            assert_int_equal(x.res.verdict, SL_DENY); /* "closed": deny */
        } else if (policy_seen && s1.replies > s0.replies) {
            recovered = x.res.verdict == SL_ALLOW;
        }
        sw_spin(&loop, NULL, 100);
    }
    assert_true(policy_seen);
    assert_true(recovered);
    /* The old master comes back as a replica; checks go on. While it syncs
     * from the new master (a fork), one check may take longer than the
     * timeout and get the policy: Redis decides again within 5 s. */
    assert_int_equal(rc_restart(&cl, (size_t)owner), 0);
    for (int i = 0; i < 50; i++) {
        x = run_op(&r, false);
        if (x.res.verdict == SL_ALLOW)
            break;
        sw_spin(&loop, NULL, 100);
    }
    assert_int_equal(x.res.verdict, SL_ALLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checks_routed_to_slot_owner),
        cmocka_unit_test(test_cross_slot_denial_consumes_nothing_elsewhere),
        cmocka_unit_test(test_concurrency_leases_on_the_cluster),
        cmocka_unit_test(test_cross_slot_denial_releases_leases),
        cmocka_unit_test(test_release_spanning_slots),
        cmocka_unit_test(test_cross_slot_random_traces_match_memory),
        cmocka_unit_test(test_slot_migration_under_load),
        cmocka_unit_test_teardown(test_cross_slot_with_a_paused_master, unpause),
        cmocka_unit_test(test_frozen_master_only_its_slots_get_the_policy),
        cmocka_unit_test(test_master_killed_policy_then_failover),
    };
    signal(SIGPIPE, SIG_IGN); /* as sluiced does: writing to a Redis that died is EPIPE */
    return cmocka_run_group_tests(tests, setup, teardown);
}
