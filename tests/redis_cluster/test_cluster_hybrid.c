/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_cluster_hybrid.c - the hybrid store (store/hybrid/) on a real Redis
 * Cluster of 3 masters started here, three stores (nodes of a fleet) on
 * one loop, while the slot of two of its keys is migrated from one master
 * to another with CLUSTER SETSLOT ... IMPORTING / MIGRATING, MIGRATE of
 * one counter then the other, and CLUSTER SETSLOT ... NODE on every
 * master. At every step the fleet syncs and the counters in Redis are
 * read where they are (after ASKING on the importing master): they hold
 * exactly what the fleet admitted, every sync call answered (none lost,
 * nothing kept waiting), with ASK and then MOVED followed for the calls
 * (the store's sync_redirects) - before the migration, with the slot
 * open and both counters on the migrating master, with one counter on
 * each, with both on the importing master, and once the slot is the
 * importing master's. A key in a slot of its own (another master) is
 * synced all along. A node stopped while the two counters are split
 * pushes what it kept (blocking) where each counter is.
 *
 * A slot served by no master (CLUSTER DELSLOTS): its calls, answered
 * CLUSTERDOWN, are sent again a bounded number of times, then lost with
 * their deltas pending; once the slot is served again (ADDSLOTS) they
 * arrive, once.
 *
 * Syncs are driven by the test (manual_sync), never a timer; waits are
 * bounded polls of the loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include "cluster.h"
#include "hybrid.h"
#include "redis_cluster.h"
#include "store_wait.h"

#define S     INT64_C(1000000000)
#define T0_NS INT64_C(1750000000000000000)
#define NODES 3
#define KEYS  3 /* two in the migrated slot, one elsewhere */

static struct rc_cluster cl;
static uv_loop_t loop;
static uv_timer_t tick;
static struct sl__redis_config rcfg;
static struct sl__hybrid_config hcfg;
static struct sl__store *nodes[NODES];

/* One limit on one key, with its Redis counter's name and slot. */
struct one {
    struct sl_limit l;
    struct sl_match m;
    struct sl_entry e;
    struct sl_descriptor d;
    struct sl_request req;
    char name[SL_KEY_MAX + 64];
    unsigned slot;
    long long admitted; /* by the whole fleet */
};

static struct one keys[KEYS];
static int64_t now_ns = T0_NS;

static struct sl__hybrid_stats stats(int i)
{
    struct sl__hybrid_stats s;

    sl__store_hybrid_stats(nodes[i], &s);
    return s;
}

/* o's key `key`, its counter named as the store names it
 * (docs/distributed.md: the hash tag is the key's 128-bit hash). */
static void one_init(struct one *o, const char *key)
{
    static const uint8_t k[16] = {'s', 'l', 'u', 'i', 'c', 'e', '-', 'h',
                                  'y', 'b', 'r', 'i', 'd', '-', 'v', '1'};
    char buf[SL_KEY_MAX + 8], tag[33];
    uint64_t h[2];

    memset(o, 0, sizeof(*o));
    sl_limit_init(&o->l);
    o->l.algo = SL_ALGO_FIXED_WINDOW;
    o->l.requests = 1000000;
    o->l.period_ns = 3600 * S;
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
    memcpy(buf, o->m.key, o->m.key_len);
    for (int b = 0; b < 8; b++)
        buf[o->m.key_len + (size_t)b] = (char)(o->l.id >> (8 * b));
    sl_siphash13_128(k, buf, o->m.key_len + 8, h);
    snprintf(tag, sizeof(tag), "%016llx%016llx", (unsigned long long)h[0],
             (unsigned long long)h[1]);
    o->slot = sl__redis_keyslot(tag, 32);
    snprintf(o->name, sizeof(o->name), "%s:h1:{%s}:%lld", rcfg.opts.prefix, tag,
             (long long)(now_ns / o->l.period_ns));
}

/* Keys 0 and 1 in one slot, key 2 in a slot of another master. */
static void pick_keys(void)
{
    static int16_t first[SL__CLUSTER_SLOTS];
    char key[32];
    int owner01 = -1;

    memset(first, -1, sizeof(first));
    for (int i = 0;; i++) {
        assert_true(i < 30000);
        snprintf(key, sizeof(key), "mig-%d", i);
        one_init(&keys[1], key);
        if (first[keys[1].slot] >= 0) {
            snprintf(key, sizeof(key), "mig-%d", first[keys[1].slot]);
            one_init(&keys[0], key);
            break;
        }
        first[keys[1].slot] = (int16_t)i;
    }
    assert_int_equal(keys[0].slot, keys[1].slot);
    owner01 = rc_owner(&cl, 0, keys[0].slot);
    assert_true(owner01 >= 0);
    for (int i = 0;; i++) {
        snprintf(key, sizeof(key), "other-%d", i);
        one_init(&keys[2], key);
        int o = rc_owner(&cl, 0, keys[2].slot);
        assert_true(o >= 0);
        if (o != owner01)
            break;
    }
}

/* The counter `name` as node i has it (after ASKING with `asking`); -1
 * when node i redirects. */
static long long total_on(size_t i, const char *name, bool asking)
{
    redisContext *c = rc_connect(&cl, i);
    redisReply *r;
    long long n = -1;

    assert_non_null(c);
    if (asking) {
        r = redisCommand(c, "ASKING");
        assert_non_null(r);
        freeReplyObject(r);
    }
    r = redisCommand(c, "GET %s", name);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_STRING)
        n = strtoll(r->str, NULL, 10);
    else if (r->type == REDIS_REPLY_NIL)
        n = 0;
    freeReplyObject(r);
    redisFree(c);
    return n;
}

static void wait_connected(int i)
{
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 10000; !stats(i).connected && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(stats(i).connected);
}

/* Every node syncs and every call is answered. */
static void sync_all(void)
{
    for (int i = 0; i < NODES; i++)
        sl__store_hybrid_sync(nodes[i], now_ns);
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + 10000; uv_now(&loop) < end;) {
        bool out = false;
        for (int i = 0; i < NODES; i++)
            out = out || stats(i).in_flight > 0;
        if (!out)
            break;
        uv_run(&loop, UV_RUN_ONCE);
    }
    for (int i = 0; i < NODES; i++)
        assert_int_equal(stats(i).in_flight, 0);
}

/* A few checks of every key on nodes from..to, all admitted. */
static void load_on(int from, int to, int rounds)
{
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < KEYS; k++)
            for (int i = from; i <= to; i++) {
                struct one *o = &keys[k];
                struct sl__store_req q = {.req = &o->req, .m = &o->m, .n = 1};
                struct answer a;
                memset(&a, 0, sizeof(a));
                now_ns += 1000; /* one window all along */
                o->req.now_ns = now_ns;
                assert_int_equal(nodes[i]->ops->check(nodes[i], &q, sw_on_answer, &a), SL_OK);
                assert_true(a.done);
                assert_int_equal(a.err, SL_OK);
                assert_int_equal(a.res.verdict, SL_ALLOW);
                o->admitted++;
            }
}

static void load(int rounds)
{
    load_on(0, NODES - 1, rounds);
}

/* Load, sync, and every count admitted is in Redis: keys 0 and 1 on
 * nodes at[0] and at[1] (after ASKING when ask[k]), key 2 on its master;
 * no call lost and nothing kept waiting. */
static void step(const int at[2], const bool ask[2])
{
    uint64_t failures[NODES];

    for (int i = 0; i < NODES; i++)
        failures[i] = stats(i).sync_failures;
    load(4);
    sync_all();
    for (int k = 0; k < 2; k++)
        assert_int_equal(total_on((size_t)at[k], keys[k].name, ask[k]), keys[k].admitted);
    assert_int_equal(total_on((size_t)rc_owner(&cl, 0, keys[2].slot), keys[2].name, false),
                     keys[2].admitted);
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(stats(i).sync_failures, failures[i]);
        assert_int_equal(stats(i).kept, 0);
    }
}

static void migrate(size_t from, size_t to, const char *key)
{
    redisReply *x = rc_command(&cl, from, "MIGRATE 127.0.0.1 %d %s 0 5000", cl.node[to].port, key);
    assert_non_null(x);
    assert_int_equal(x->type, REDIS_REPLY_STATUS);
    assert_string_equal(x->str, "OK"); /* the counter was there */
    freeReplyObject(x);
}

static void setslot(size_t on, unsigned slot, const char *how, const char *id)
{
    redisReply *x = rc_command(&cl, on, "CLUSTER SETSLOT %u %s %s", slot, how, id);
    assert_non_null(x);
    assert_int_equal(x->type, REDIS_REPLY_STATUS);
    freeReplyObject(x);
}

static uint64_t redirects(void)
{
    uint64_t n = 0;

    for (int i = 0; i < NODES; i++)
        n += stats(i).sync_redirects;
    return n;
}

static int setup(void **state)
{
    (void)state;
    if (rc_start(&cl, 3, 0) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    sl__redis_config_init(&rcfg);
    rcfg.port = cl.node[0].port;
    rcfg.cluster = true;
    rcfg.timeout_ms = 200;
    hcfg.sync_interval_ms = 50;
    hcfg.timeout_ms = 2000; /* generous: a loaded machine must not lose calls */
    hcfg.max_keys = 1024;
    hcfg.batch = 64;
    hcfg.max_bytes = 4u << 20;
    hcfg.manual_sync = true;
    hcfg.redis = &rcfg;
    for (int i = 0; i < NODES; i++) {
        if (sl__store_hybrid_new(&loop, &hcfg, &nodes[i]) != SL_OK)
            return -1;
        wait_connected(i);
    }
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
    rc_stop(&cl);
    return 0;
}

static void test_sync_follows_a_slot_migration(void **state)
{
    char id_a[41], id_b[41];
    int a, b, at[2];
    bool ask[2] = {false, false};
    uint64_t r0;
    long long fleet = 0;
    (void)state;

    pick_keys();
    a = rc_owner(&cl, 0, keys[0].slot);
    b = (a + 1) % 3;
    if (rc_owner(&cl, 0, keys[2].slot) == b)
        b = (a + 2) % 3; /* key 2's master stays out of it */
    assert_int_equal(rc_node_id(&cl, (size_t)a, id_a), 0);
    assert_int_equal(rc_node_id(&cl, (size_t)b, id_b), 0);
    print_message("slot %u: master %d to master %d\n", keys[0].slot, a, b);

    at[0] = at[1] = a;
    step(at, ask); /* before: both counters on a */
    r0 = redirects();
    assert_int_equal(r0, 0);

    setslot((size_t)b, keys[0].slot, "IMPORTING", id_a);
    setslot((size_t)a, keys[0].slot, "MIGRATING", id_b);
    step(at, ask); /* the slot open, both counters still on a: ASK, then each on a */
    assert_true(redirects() > r0);

    migrate((size_t)a, (size_t)b, keys[0].name);
    assert_int_equal(total_on((size_t)a, keys[0].name, false), -1); /* a says ASK now */
    at[0] = b;
    ask[0] = true;
    step(at, ask); /* key 0 on b (after ASKING), key 1 still on a */

    /* a node stopped now pushes what it kept over blocking connections:
     * the migrating master refuses the call over both keys of the slot,
     * so each goes alone, key 0 on to b after ASK */
    load_on(0, 0, 3);
    sl__store_free(nodes[0]);
    nodes[0] = NULL;
    for (int k = 0; k < 2; k++)
        assert_int_equal(total_on((size_t)at[k], keys[k].name, ask[k]), keys[k].admitted);
    assert_int_equal(total_on((size_t)rc_owner(&cl, 0, keys[2].slot), keys[2].name, false),
                     keys[2].admitted);
    assert_int_equal(sl__store_hybrid_new(&loop, &hcfg, &nodes[0]), SL_OK);
    wait_connected(0);
    step(at, ask); /* the new node syncs there too */

    migrate((size_t)a, (size_t)b, keys[1].name);
    at[1] = b;
    ask[1] = true;
    step(at, ask); /* both on b */

    r0 = redirects();
    for (size_t i = 0; i < cl.n; i++)
        setslot(i, keys[0].slot, "NODE", id_b);
    ask[0] = ask[1] = false;
    step(at, ask); /* the slot is b's: MOVED, then b */
    assert_true(redirects() > r0);
    r0 = redirects();
    step(at, ask); /* straight to b now */
    assert_int_equal(redirects(), r0);

    /* no loss, nothing twice: Redis holds exactly what the fleet admitted */
    for (int k = 0; k < KEYS; k++)
        fleet += keys[k].admitted;
    assert_int_equal(total_on((size_t)b, keys[0].name, false) +
                         total_on((size_t)b, keys[1].name, false) +
                         total_on((size_t)rc_owner(&cl, 0, keys[2].slot), keys[2].name, false),
                     fleet);
}

/* Checks of o on every node, all admitted; the count. */
static long long load_one(struct one *o, int rounds)
{
    long long n = 0;

    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < NODES; i++) {
            struct sl__store_req q = {.req = &o->req, .m = &o->m, .n = 1};
            struct answer a;
            memset(&a, 0, sizeof(a));
            now_ns += 1000;
            o->req.now_ns = now_ns;
            assert_int_equal(nodes[i]->ops->check(nodes[i], &q, sw_on_answer, &a), SL_OK);
            assert_true(a.done);
            assert_int_equal(a.res.verdict, SL_ALLOW);
            n++;
        }
    o->admitted += n;
    return n;
}

static void test_clusterdown_is_retried_then_kept(void **state)
{
    struct one o;
    char key[32];
    int owner = -1;
    uint64_t r0, f0 = 0, f1 = 0, kept = 0;
    long long fresh;
    (void)state;

    for (int i = 0; owner < 0 || owner == rc_owner(&cl, 0, keys[0].slot); i++) {
        snprintf(key, sizeof(key), "down-%d", i);
        one_init(&o, key);
        owner = rc_owner(&cl, 0, o.slot); /* a master the migration left alone */
    }
    load_one(&o, 3);
    sync_all();
    assert_int_equal(total_on((size_t)owner, o.name, false), o.admitted);

    /* the slot served by no one: its master answers CLUSTERDOWN */
    redisReply *x = rc_command(&cl, (size_t)owner, "CLUSTER DELSLOTS %u", o.slot);
    assert_non_null(x);
    assert_int_equal(x->type, REDIS_REPLY_STATUS);
    freeReplyObject(x);
    r0 = redirects();
    for (int i = 0; i < NODES; i++)
        f0 += stats(i).sync_failures;
    fresh = load_one(&o, 2);
    sync_all(); /* every call answered: sent again a bounded number of times, then lost */
    assert_true(redirects() > r0);
    for (int i = 0; i < NODES; i++) {
        f1 += stats(i).sync_failures;
        kept += stats(i).kept;
    }
    assert_true(f1 > f0);
    assert_true(kept >= (uint64_t)fresh);                         /* nothing lost: pending again */
    assert_int_equal(total_on((size_t)owner, o.name, false), -1); /* not served: CLUSTERDOWN */

    /* served again: what was kept arrives, once */
    x = rc_command(&cl, (size_t)owner, "CLUSTER ADDSLOTS %u", o.slot);
    assert_non_null(x);
    assert_int_equal(x->type, REDIS_REPLY_STATUS);
    freeReplyObject(x);
    assert_true(rc_wait_ok(&cl, 20000));
    for (int i = 0; i < NODES; i++)
        wait_connected(i); /* the map names a master for every slot again */
    sync_all();
    assert_int_equal(total_on((size_t)owner, o.name, false), o.admitted);
    for (int i = 0; i < NODES; i++)
        assert_int_equal(stats(i).kept, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_follows_a_slot_migration),
        cmocka_unit_test(test_clusterdown_is_retried_then_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
