/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid_sync.c - the hybrid store's syncs: one Redis link per worker and
 * Redis (link/rlink.h: the worker's loop, TLS and AUTH as configured), the
 * sync script loaded on it, and every sync_interval one script call per
 * batch of kept keys, all sent at once (pipelined, one write), each
 * adding its keys' deltas and returning their fleet totals.
 *
 * A lost call (timeout, error reply, connection gone) puts its deltas back
 * as pending: they go with the next sync once Redis answers again. A call
 * that timed out may still have been executed by Redis; its deltas are
 * then counted twice (never fewer: the error is on the side of denying).
 * A timeout drops the connection (freeing the calls stuck on it) and it
 * reconnects with the links' backoff (sl__rbackoff: from 50 ms doubling
 * to store.redis.backoff_max, each wait drawn in its upper half).
 *
 * A reset is one more script call on the same connection (not waited
 * for): the key's counters deleted and its reset marker set, which every
 * sync reads back with the counters (hybrid.c acts on it).
 *
 * Behind Sentinel the one link goes to the master the sentinels name
 * (the links' follower, link/rmaster.h: +switch-master and the question,
 * one sentinel at a time), asked again whenever the connection is lost
 * or the Redis says it is not a master (ROLE on every connection, a
 * -READONLY or -MASTERDOWN); a master named anew leaves the old one at
 * once, its calls out lost (their deltas pending). On a cluster
 * there is one link per master of the slot map (redis_cluster.h's pure
 * map, read from CLUSTER SLOTS on the same kind of link to one seed at a
 * time), every call carries keys of one slot (the hash tag of the key
 * names). A call answered MOVED, ASK, TRYAGAIN or CLUSTERDOWN was not run
 * and is sent again with the same deltas (`follow`: to the new owner, to
 * the importing master after ASKING, split into one call per counter
 * while its slot migrates, or after a short wait), at most MAX_HOPS
 * times; a MOVED or a lost master marks the map stale: it is asked again
 * at the next tick. Either way a lost call's deltas are pending, as
 * above, and go where the next sync finds the master.
 *
 * When the store is freed, kept deltas are pushed once more over a
 * blocking connection (the blocking Redis link, link/rlink.h: TLS and
 * AUTH as configured; behind Sentinel to the master a sentinel names, on
 * a cluster to each slot's master in a map read then; a slot whose
 * master refuses the call, moved or migrating, key by key with MOVED and
 * ASK followed), bounded by 1 s
 * (or store.hybrid.timeout if longer) per step, so a node that restarts
 * loses nothing it had recorded while Redis was up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "hybrid_int.h"
#include "rcluster.h"
#include "rlink.h"
#include "store_log.h"

/*
 * KEYS[1..n]: the counters, KEYS[n+i]: counter i's reset marker;
 * ARGV[2i-1]: counter i's delta (a decimal), ARGV[2i]: its expiry in ms. A
 * delta of 0 only reads. Returns, per counter, its total and the time of
 * the latest reset of its key (ms; 0: none, or not a number: a value
 * written there by something else must not stop every sync).
 */
static const char sync_lua[] =
    "local n, r = #KEYS / 2, {}\n"
    "for i = 1, n do\n"
    "  local d = ARGV[2 * i - 1]\n"
    "  if d ~= '0' then\n"
    "    r[2 * i - 1] = redis.call('INCRBY', KEYS[i], d)\n"
    "    redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])\n"
    "  else\n"
    "    r[2 * i - 1] = tonumber(redis.call('GET', KEYS[i]) or '0') or 0\n"
    "  end\n"
    "  r[2 * i] = tonumber(redis.call('GET', KEYS[n + i]) or '0') or 0\n"
    "end\n"
    "return r\n";

/*
 * A reset of one key and limit for the whole fleet. KEYS[1]: its reset
 * marker, KEYS[2..]: its counters; ARGV[1]: the reset's time (ms), ARGV[2]:
 * how long the marker lives (ms: as long as a counter may). The counters
 * are deleted, and the marker keeps the latest reset's time.
 */
static const char reset_lua[] = "if #KEYS > 1 then redis.call('DEL', unpack(KEYS, 2)) end\n"
                                "local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0\n"
                                "if tonumber(ARGV[1]) > cur then\n"
                                "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                                "end\n"
                                "return 1\n";

/*
 * One counter's sync, while its slot migrates: KEYS[1] the counter,
 * ARGV[1] its delta, ARGV[2] its expiry in ms; the total and 0 (no reset
 * read). A call over several keys of a migrating slot some of which are
 * missing (a reset marker usually is) is answered ASK or TRYAGAIN by both
 * nodes until the migration ends; a single key is served by the node that
 * has it, or, after ASKING, by the importing node when the migrating one
 * no longer has it (Redis Cluster's ASK rule), so its count is never
 * written on both.
 */
static const char one_lua[] = "local t\n"
                              "if ARGV[1] ~= '0' then\n"
                              "  t = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
                              "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                              "else\n"
                              "  t = tonumber(redis.call('GET', KEYS[1]) or '0') or 0\n"
                              "end\n"
                              "return {t, 0}\n";

/* A cluster's call follows at most MAX_HOPS redirections and retries;
 * after TRYAGAIN or CLUSTERDOWN (or no connection to the node named) it
 * waits RETRY_MS, doubling with each hop up to 32 times that. */
#define MAX_HOPS 8
#define RETRY_MS 10

/* Bytes of arguments one key takes at most: key, its marker, delta, ttl. */
#define KEY_BYTES (SL__REDIS_PREFIX_MAX + 64)
#define ARG_BYTES (2 * KEY_BYTES + 24 + 24)

static void node_start(struct sl__hy_node *n);
static void update(struct sl__hystore *st);

/* store.redis.host into a node's address (at most 63 bytes: a longer name
 * is refused rather than cut). */
static bool set_host(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);

    if (n >= cap)
        return false;
    memcpy(dst, src, n + 1);
    return true;
}

static struct sl__hy_node *node0(struct sl__hystore *st)
{
    return &st->nodes[0];
}

/* Call c is no longer out on its node's link (answered, or waiting). */
static void call_off(struct sl__hy_call *c)
{
    struct sl__hy_node *n = c->node;

    if (c->on == NULL)
        return;
    c->on = NULL;
    if (--n->calls_out == 0)
        uv_timer_stop(&n->call_timer);
}

static void finish_call(struct sl__hy_call *c)
{
    struct sl__hystore *st = c->st;

    call_off(c);
    c->busy = false;
    st->calls_out--;
    SL__HY_SET(st, in_flight, st->calls_out);
}

static void lose_call(struct sl__hy_call *c)
{
    struct sl__hystore *st = c->st;

    for (unsigned i = 0; i < c->n; i++)
        sl__hy_restore(st, &st->ents[c->idx[i]]);
    SL__HY_CNT(st, sync_failures, 1);
    finish_call(c);
}

/* A Redis of this worker (`at`) stopped answering (why) or they all
 * answer again: the link's node health (link/rnode.h) says it once per
 * process (the first worker to see it, the last to see it end) when the
 * stores share state; its edge comes back to on_health. */
static void stall_edge(struct sl__hystore *st, const struct sl__cnode *at, bool bad,
                       const char *why)
{
    char addr[SL__RNODE_ADDR_MAX];
    struct sl__rnode_edge e = {.node = 0, .addr = addr, .why = why};

    snprintf(addr, sizeof(addr), "%s:%d", at->host, at->port);
    sl__rnode_stall(&st->health, bad, &e);
}

/* The node health's edges: the stall's lines; a node's own edges
 * (connected, unreachable, back) are the Redis path's to say, not the
 * sync's. */
static void on_health(void *arg, const struct sl__rnode_edge *e)
{
    (void)arg;
    if (!e->say)
        return;
    if (e->what == SL__RNODE_STALLED)
        sl__store_log(SL__SLOG_WARN, "store.hybrid_stalled",
                      "hybrid: redis %s %s: decisions stay local, their counts are kept "
                      "and pushed once it answers",
                      e->addr, e->why);
    else if (e->what == SL__RNODE_ANSWERS)
        sl__store_log(SL__SLOG_INFO, "store.hybrid_back", "hybrid: redis %s answers again",
                      e->addr);
}

static void on_node_timer(uv_timer_t *t);

static void retry_later(struct sl__hy_node *n)
{
    uv_timer_start(&n->timer, on_node_timer, (uint64_t)sl__rbackoff_next(&n->backoff), 0);
}

static int64_t probe_ms(const struct sl__hystore *st)
{
    int64_t t = 4 * st->cfg.timeout_ms;
    return t < 200 ? 200 : t;
}

/* The time a connection in progress has to become ready. */
static void probe(struct sl__hy_node *n)
{
    uv_timer_start(&n->timer, on_node_timer, (uint64_t)probe_ms(n->st), 0);
}

static void set_conn(struct sl__hy_node *n, enum sl__hy_conn c)
{
    n->conn = c;
    if (c != SL__HY_READY)
        n->sha[0] = '\0';
    update(n->st);
}

/* Close node n's connection now: every call on it comes back lost, and it
 * connects again after the backoff (behind Sentinel: the sentinels are
 * asked meanwhile, and a master they name anew is connected at once). */
static void node_drop(struct sl__hy_node *n)
{
    struct sl__hystore *st = n->st;

    if (st->sentinel)
        sl__rmaster_ask(st->follow);
    if (n->link == NULL || !sl__rlink_is_busy(n->link))
        return;
    for (unsigned i = 0; i < st->n_calls; i++)
        if (st->calls[i].busy && st->calls[i].node == n)
            lose_call(&st->calls[i]);
    if (st->cluster)
        sl__rcfollow_stale(st->mapf);
    if (!st->closing)
        retry_later(n);
    sl__rlink_drop(n->link); /* the NULL replies find nothing busy */
    set_conn(n, SL__HY_DOWN);
}

static void on_node_timer(uv_timer_t *t)
{
    struct sl__hy_node *n = t->data;
    struct sl__hystore *st = n->st;

    if (st->closing)
        return;
    if (n->conn == SL__HY_CONNECTING) {
        stall_edge(st, &n->addr, true, "does not answer a new connection");
        node_drop(n); /* no answer in time (a frozen Redis accepts, then says nothing) */
    } else if (n->conn == SL__HY_DOWN)
        node_start(n);
}

static void on_loaded(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hy_node *n = priv;

    if (r == NULL || n->st->closing || l != n->link)
        return;
    if (r->type != REDIS_REPLY_STRING || r->len != 40) {
        node_drop(n);
        return;
    }
    memcpy(n->sha, r->str, 40);
    n->sha[40] = '\0';
    sl__rbackoff_reset(&n->backoff);
    uv_timer_stop(&n->timer);
    set_conn(n, SL__HY_READY);
}

static void on_up(struct sl__rlink *l, void *arg)
{
    (void)l;
    (void)arg; /* ready once the script is loaded (on_loaded) */
}

/* Lost, never made, or AUTH refused: the calls on it have had their NULL
 * replies (lost) already. */
static void on_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__hy_node *n = arg;

    (void)l;
    if (n->st->closing)
        return;
    if (why->kind == SL__RLINK_TLS && !n->tls_said) { /* once per worker and node */
        n->tls_said = true;
        sl__store_log(SL__SLOG_ERROR, "store.tls_failed",
                      "hybrid: redis %s:%d: %s (check store.redis.tls)", n->addr.host, n->addr.port,
                      why->text);
    }
    if (n->st->cluster)
        sl__rcfollow_stale(n->st->mapf);
    if (n->st->sentinel)
        sl__rmaster_ask(n->st->follow);
    if (!n->st->closing)
        retry_later(n);
    set_conn(n, SL__HY_DOWN);
}

static const struct sl__rlink_events link_events = {.up = on_up, .down = on_down};

/* Sentinel: ROLE's reply on a new connection. A Redis that says it is not
 * a master (a demoted one the sentinels have not caught up with) is left,
 * and the sentinels are asked again; a refused ROLE (an ACL without
 * +role) is no proof either way: the -READONLY of a sync would be. */
static void on_role(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hy_node *n = priv;

    if (r == NULL || n->st->closing || l != n->link)
        return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") != 0)
        node_drop(n);
}

static void connect_at(struct sl__hy_node *n)
{
    struct sl__hystore *st = n->st;

    if (sl__rlink_connect(n->link, n->addr.host, n->addr.port) != SL_OK) {
        retry_later(n);
        set_conn(n, SL__HY_DOWN);
        return;
    }
    n->conn = SL__HY_CONNECTING;
    /* after the link's AUTH; the script's reply says the connection is ready */
    if ((st->sentinel && sl__rlink_command(n->link, on_role, n, "ROLE") != SL_OK) ||
        sl__rlink_command(n->link, on_loaded, n, "SCRIPT LOAD %s", sync_lua) != SL_OK) {
        node_drop(n);
        return;
    }
    probe(n);
}

/* Sentinel: a sentinel names host:port the master (an answer, or a
 * +switch-master): sync with it, leaving another one synced with. */
static void on_named(void *arg, const char *host, int port, unsigned via)
{
    struct sl__hystore *st = arg;
    struct sl__hy_node *n = node0(st);
    bool same = st->master_known && n->addr.port == port && strcmp(n->addr.host, host) == 0;

    (void)via;
    if (st->closing)
        return;
    if (same) {
        if (n->conn == SL__HY_DOWN && !uv_is_active((uv_handle_t *)&n->timer))
            connect_at(n);
        return; /* else it comes back by itself, after its backoff */
    }
    if (!set_host(n->addr.host, sizeof(n->addr.host), host))
        return;
    if (st->master_known && n->conn != SL__HY_DOWN) {
        stall_edge(st, &n->addr, true, "is not the master the sentinels name any more");
        node_drop(n); /* its calls out come back lost: pending for the new one */
    }
    n->addr.port = port;
    st->master_known = true;
    uv_timer_stop(&n->timer);
    if (n->conn == SL__HY_DOWN)
        connect_at(n);
}

/* What the follower notes: a failure to reach the sentinels or to have a
 * master named is the store's stall (before a master is known); a TLS
 * failure with a sentinel is said once per worker and sentinel. */
static void on_sentinel_note(void *arg, enum sl__rmaster_note what, unsigned at, const char *text)
{
    struct sl__hystore *st = arg;
    char addr[SL__CLUSTER_HOST_MAX + 8];

    if (st->closing)
        return;
    if (what == SL__RMASTER_TLS && at < 8 && !(st->sentinel_tls_said & (1u << at))) {
        st->sentinel_tls_said |= (uint8_t)(1u << at);
        sl__rmaster_addr(st->follow, at, addr, sizeof(addr));
        sl__store_log(SL__SLOG_ERROR, "store.tls_failed",
                      "hybrid: sentinel %s: %s (check store.redis.tls)", addr, text);
    }
    if (!st->master_known && (what == SL__RMASTER_NO_MASTER || what == SL__RMASTER_UNREACHABLE))
        stall_edge(st, &node0(st)->addr, true, "has no master a sentinel names");
}

/* The nodes as the map names them (after CLUSTER SLOTS or a MOVED):
 * every master that serves a slot connected. */
static void nodes_from_map(struct sl__hystore *st)
{
    for (size_t i = 0; i < st->map->n_nodes; i++)
        st->nodes[i].owns = false;
    for (unsigned slot = 0; slot < SL__CLUSTER_SLOTS; slot++)
        if (st->map->owner[slot] != SL__CLUSTER_NO_NODE)
            st->nodes[st->map->owner[slot]].owns = true;
    st->n_nodes = (unsigned)st->map->n_nodes;
    for (unsigned i = 0; i < st->n_nodes; i++) {
        struct sl__hy_node *n = &st->nodes[i];
        if (n->link == NULL) {
            n->link = sl__rlink_new(st->group, &st->link_conf, &link_events, n);
            if (n->link == NULL)
                continue;
        }
        n->addr = st->map->nodes[i];
        if (n->owns && n->conn == SL__HY_DOWN && !uv_is_active((uv_handle_t *)&n->timer))
            connect_at(n);
    }
    update(st);
}

/* A cluster: the follower (link/rcluster.h) loaded the map anew. */
static void on_map(void *arg)
{
    struct sl__hystore *st = arg;

    if (!st->closing)
        nodes_from_map(st);
}

static void node_start(struct sl__hy_node *n)
{
    struct sl__hystore *st = n->st;

    if (st->cluster) {
        if (n->owns)
            connect_at(n);
        return;
    }
    if (!st->sentinel || st->master_known) {
        connect_at(n);
        return;
    }
    set_conn(n, SL__HY_DOWN); /* the follower's first answer connects it (on_named) */
}

/* Node i's link as the node health sees it: ready once the script is
 * loaded, failed while it waits to connect again. */
static void note(struct sl__hystore *st, unsigned i)
{
    const struct sl__hy_node *n = &st->nodes[i];
    char addr[SL__RNODE_ADDR_MAX];
    struct sl__rnode_state s = {.addr = addr, .why = "", .edges = true};

    snprintf(addr, sizeof(addr), "%s:%d", n->addr.host, n->addr.port);
    s.conns = n->link != NULL;
    s.ready = n->conn == SL__HY_READY;
    s.failed = n->conn == SL__HY_DOWN && uv_is_active((const uv_handle_t *)&n->timer);
    s.serving = !st->cluster || n->owns;
    sl__rnode_note(&st->health, i, &s);
}

/* The worker's state, from its nodes': ready when every node it syncs
 * with is (on a cluster: the map names a master for every slot and each
 * is ready); said in the log when it becomes so. */
static void update(struct sl__hystore *st)
{
    bool ready = st->n_nodes > 0, connecting = false;

    if (st->cluster)
        ready = ready && sl__cmap_complete(st->map);
    for (unsigned i = 0; i < st->n_nodes; i++) {
        const struct sl__hy_node *n = &st->nodes[i];
        note(st, i);
        if (st->cluster && !n->owns)
            continue;
        ready = ready && n->conn == SL__HY_READY;
        connecting = connecting || n->conn == SL__HY_CONNECTING;
    }
    sl__rnode_publish(&st->health, st->n_nodes);
    st->conn = ready ? SL__HY_READY : connecting ? SL__HY_CONNECTING : SL__HY_DOWN;
    SL__HY_SET(st, connected, ready);
    if (ready) {
        SL__HY_SET(st, ever_connected, true);
        stall_edge(st, &node0(st)->addr, false, "");
    }
}

static int node_init(struct sl__hystore *st, struct sl__hy_node *n)
{
    const struct sl__redis_config *rc = st->cfg.redis;

    n->st = st;
    uv_timer_init(st->loop, &n->timer);
    uv_unref((uv_handle_t *)&n->timer);
    n->timer.data = n;
    uv_timer_init(st->loop, &n->call_timer);
    uv_unref((uv_handle_t *)&n->call_timer);
    n->call_timer.data = n;
    sl__rbackoff_init(&n->backoff, rc->backoff_min_ms, rc->backoff_max_ms);
    return SL_OK;
}

/* A cluster's seeds: store.redis.host:port and .nodes. */
static int seeds_init(struct sl__hystore *st)
{
    const struct sl__redis_config *rc = st->cfg.redis;
    int n;

    if (!set_host(st->seeds[0].host, sizeof(st->seeds[0].host), rc->host))
        return SL_EINVAL;
    st->seeds[0].port = rc->port;
    n = sl__redis_parse_addrs(rc->nodes, st->seeds + 1, SL__HY_SEEDS - 1);
    st->n_seeds = n < 0 ? 1 : (unsigned)n + 1; /* too many: the first ones */
    return SL_OK;
}

/* Sentinel: the links' follower, on the sentinels of store.redis. */
static int follow_init(struct sl__hystore *st)
{
    static const struct sl__rmaster_events ev = {.master = on_named, .note = on_sentinel_note};
    const struct sl__redis_config *rc = st->cfg.redis;
    struct sl__rmaster_conf c = {0};
    int n = sl__redis_parse_addrs(rc->sentinels, c.addr, SL__RMASTER_MAX);

    if (n <= 0)
        return SL_EINVAL; /* the configuration's check refused it already */
    c.n = (unsigned)n;
    c.name = rc->master_name;
    c.probe_ms = probe_ms(st);
    c.gap_ms = 100;
    c.backoff_min_ms = rc->backoff_min_ms;
    c.backoff_max_ms = rc->backoff_max_ms;
    c.link = &st->ask_conf;
    st->follow = sl__rmaster_new(st->loop, st->group, &c, &ev, st);
    return st->follow != NULL ? SL_OK : SL_ENOMEM;
}

static void on_call_timeout(uv_timer_t *t);

int sl__hy_sync_init(struct sl__hystore *st)
{
    const struct sl__redis_config *rc = st->cfg.redis;
    unsigned batch = st->cfg.batch;
    unsigned cap;

    static const struct sl__rnode_events health_events = {.edge = on_health};

    if (st->shared == NULL && (st->own_sync = sl__rnode_shared_new()) == NULL)
        return SL_ENOMEM;
    if (sl__rnode_set_init(&st->health, st->shared != NULL ? st->shared->sync : st->own_sync,
                           &health_events, st) != 0)
        return SL_ENOMEM;
    st->sentinel = rc->sentinels[0] != '\0';
    st->cluster = rc->cluster && !st->sentinel;
    cap = st->cluster ? SL__CLUSTER_MAX_NODES : 1;
    st->n_calls = st->cluster ? st->cfg.max_keys : (st->cfg.max_keys + batch - 1) / batch;
    st->calls = calloc(st->n_calls, sizeof(*st->calls));
    st->order = calloc(st->cfg.max_keys, sizeof(*st->order));
    st->pairs = calloc(st->cfg.max_keys, sizeof(*st->pairs));
    st->nodes = calloc(cap, sizeof(*st->nodes));
    st->argv = calloc(3 + 4 * (size_t)batch, sizeof(*st->argv));
    st->argvlen = calloc(3 + 4 * (size_t)batch, sizeof(*st->argvlen));
    st->argbuf_cap = 64 + (size_t)batch * ARG_BYTES;
    st->argbuf = malloc(st->argbuf_cap);
    if (st->cluster)
        st->map = malloc(sizeof(*st->map));
    if (st->calls == NULL || st->order == NULL || st->pairs == NULL || st->nodes == NULL ||
        st->argv == NULL || st->argvlen == NULL || st->argbuf == NULL ||
        (st->cluster && st->map == NULL))
        return SL_ENOMEM;
    for (unsigned i = 0; i < st->n_calls; i++)
        st->calls[i].st = st;
    for (unsigned i = 0; i < cap; i++)
        node_init(st, &st->nodes[i]);
    st->n_nodes = st->cluster ? 0 : 1;
    /* No connect timeout of the link's own: the probe (probe_ms) bounds
     * the whole of it, script load included, and says the stall. */
    st->link_conf.user = rc->user;
    st->link_conf.password = rc->password;
    if (rc->tls.on) {
        /* Files that do not make a context (sluiced -t says why) fail
         * each connection until they are fixed: read again then. */
        (void)sl__rlink_tls_init(&st->tls, &rc->tls);
        st->link_conf.tls = &st->tls;
    }
    st->ask_conf.tls = st->link_conf.tls; /* the sentinels: no AUTH */
    st->group = sl__rlink_group_new(st->loop);
    if (st->group == NULL)
        return SL_ENOMEM;
    if (!st->cluster) {
        struct sl__hy_node *n = node0(st);
        n->link = sl__rlink_new(st->group, &st->link_conf, &link_events, n);
        if (n->link == NULL)
            return SL_ENOMEM;
        if (!set_host(n->addr.host, sizeof(n->addr.host), rc->host))
            return SL_EINVAL;
        n->addr.port = st->sentinel ? 0 : rc->port; /* Sentinel: none named yet */
    } else {
        sl__cmap_init(st->map);
    }
    if (st->cluster) {
        static const struct sl__rcfollow_events map_events = {.map = on_map};
        struct sl__rcfollow_conf fc = {st->seeds, 0, SL__HY_WATCH_MS, 10, &st->link_conf};
        if (seeds_init(st) != SL_OK)
            return SL_EINVAL;
        fc.n_seeds = st->n_seeds;
        st->mapf = sl__rcfollow_new(st->loop, st->group, &fc, st->map, &map_events, st);
        if (st->mapf == NULL)
            return SL_ENOMEM;
        uv_timer_init(st->loop, &st->retry);
        uv_unref((uv_handle_t *)&st->retry);
        st->retry.data = st;
        st->retry_made = true;
    }
    if (st->sentinel) {
        int rc2 = follow_init(st);
        if (rc2 != SL_OK)
            return rc2;
    }
    if (!st->cluster)
        node_start(node0(st));
    return SL_OK;
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

void sl__hy_sync_close(struct sl__hystore *st)
{
    unsigned cap;

    if (st->calls == NULL || st->nodes == NULL) {
        sl__rnode_set_close(&st->health);
        sl__rnode_shared_free(st->own_sync);
        st->own_sync = NULL;
        return;
    }
    cap = st->cluster ? SL__CLUSTER_MAX_NODES : 1;
    sl__rmaster_free(st->follow); /* no callback after this */
    st->follow = NULL;
    for (unsigned i = 0; i < cap; i++) {
        struct sl__hy_node *n = &st->nodes[i];
        if (n->st == NULL)
            continue; /* out of memory before it was made */
        node_drop(n);
        sl__rlink_free(n->link);
        n->link = NULL;
        uv_close((uv_handle_t *)&n->timer, on_closed);
        uv_close((uv_handle_t *)&n->call_timer, on_closed);
    }
    sl__rcfollow_free(st->mapf); /* no callback after this */
    st->mapf = NULL;
    if (st->retry_made) {
        uv_close((uv_handle_t *)&st->retry, on_closed);
        st->retry_made = false;
    }
    sl__rlink_group_free(st->group);
    st->group = NULL;
    if (st->link_conf.tls != NULL) {
        sl__rlink_tls_close(&st->tls);
        st->link_conf.tls = NULL;
    }
    sl__rnode_set_close(&st->health);
    sl__rnode_shared_free(st->own_sync);
    st->own_sync = NULL;
}

static void on_call_timeout(uv_timer_t *t)
{
    struct sl__hy_node *n = t->data;

    if (n->calls_out > 0) {
        char why[64];
        snprintf(why, sizeof(why), "did not answer a sync within %lld ms",
                 (long long)n->st->cfg.timeout_ms);
        stall_edge(n->st, &n->addr, true, why);
        node_drop(n); /* loses every call on the connection */
    }
}

static bool is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str != NULL && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* The Redis is no master (any more): -READONLY (a replica, from the
 * script's write or the command itself) or -MASTERDOWN. */
static bool is_not_master(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str != NULL &&
           (strstr(r->str, "READONLY") != NULL || strncmp(r->str, "MASTERDOWN", 10) == 0);
}

/* A cluster's: the slot is elsewhere (or nowhere now): MOVED, ASK,
 * CLUSTERDOWN, TRYAGAIN (link/rcluster_map.h reads them). */
static bool is_cluster_error(const redisReply *r)
{
    struct sl__credir d;

    return sl__cluster_reply(r, "", &d) != SL__CERR_NONE;
}

/* The keys of a sync call over entries idx[0..k): the counters, then (with
 * `markers`) their markers, as st->argv[at...] in b; the bytes of b used. */
static size_t key_args(struct sl__hystore *st, const uint32_t *idx, unsigned k, size_t at, char *b,
                       bool markers)
{
    size_t used = 0;

    for (int marker = 0; marker < (markers ? 2 : 1); marker++) {
        for (unsigned i = 0; i < k; i++) {
            const struct sl__hy_ent *e = &st->ents[idx[i]];
            const struct sl__hy_key key = {e->h, &e->l, e->w, marker};
            size_t len = sl__hy_key_name(st, &key, b + used, KEY_BYTES);
            st->argv[at] = b + used;
            st->argvlen[at++] = len;
            used += len + 1;
        }
    }
    return used;
}

/* Call c as st->argv (the scratch) for node n: the sync script over its
 * entries' counters and markers (by its SHA once n has it loaded, else
 * whole), or with c->one the one counter's script. The argument count. */
static size_t call_args(struct sl__hystore *st, const struct sl__hy_call *c,
                        const struct sl__hy_node *n)
{
    size_t used, argc = 3;
    char *b = st->argbuf;
    unsigned nk = c->one ? 1 : 2 * c->n;

    if (c->one) {
        st->argv[1] = one_lua;
        st->argvlen[1] = sizeof(one_lua) - 1;
    } else if (n->sha[0] != '\0') {
        st->argv[1] = n->sha;
        st->argvlen[1] = 40;
    } else {
        st->argv[1] = sync_lua;
        st->argvlen[1] = sizeof(sync_lua) - 1;
    }
    st->argv[0] = st->argv[1] == n->sha ? "EVALSHA" : "EVAL";
    st->argvlen[0] = strlen(st->argv[0]);
    st->argv[2] = b;
    st->argvlen[2] = (size_t)snprintf(b, 24, "%u", nk);
    used = st->argvlen[2] + 1;
    used += key_args(st, c->idx, c->n, argc, b + used, !c->one);
    argc += nk;
    for (unsigned i = 0; i < c->n; i++) {
        const struct sl__hy_ent *e = &st->ents[c->idx[i]];
        int w = snprintf(b + used, 24, "%llu", (unsigned long long)e->inflight);
        st->argv[argc] = b + used;
        st->argvlen[argc++] = (size_t)w;
        used += (size_t)w + 1;
        w = snprintf(b + used, 24, "%lld", (long long)sl__hy_limit_ttl_ms(st, &e->l));
        st->argv[argc] = b + used;
        st->argvlen[argc++] = (size_t)w;
        used += (size_t)w + 1;
    }
    return argc;
}

static void on_reply(struct sl__rlink *l, redisReply *r, void *priv);

/* Put call c out on node n's link (after ASKING with c->asking). */
static int send_on(struct sl__hy_call *c, struct sl__hy_node *n)
{
    struct sl__hystore *st = c->st;
    size_t argc;

    if (c->asking && sl__rlink_command(n->link, NULL, NULL, "ASKING") != SL_OK)
        return SL_ENOENT;
    argc = call_args(st, c, n);
    if (sl__rlink_argv(n->link, on_reply, c, (int)argc, st->argv, st->argvlen) != SL_OK)
        return SL_EINVAL;
    c->node = n;
    c->on = n->link;
    if (n->calls_out++ == 0) {
        /* the loop's cached time may be as old as the loop's last wait: a
         * timeout counted from it would fire early */
        uv_update_time(st->loop);
        uv_timer_start(&n->call_timer, on_call_timeout, (uint64_t)st->cfg.timeout_ms, 0);
    }
    return SL_OK;
}

static int send_call(struct sl__hystore *st, struct sl__hy_call *c)
{
    c->one = false;
    c->asking = false;
    c->hops = 0;
    c->on = NULL;
    if (send_on(c, c->node) != SL_OK)
        return SL_EINVAL;
    c->busy = true;
    st->calls_out++;
    SL__HY_SET(st, in_flight, st->calls_out);
    SL__HY_CNT(st, sync_calls, 1);
    SL__HY_CNT(st, sync_keys, c->n);
    return SL_OK;
}

/* ------------------------------------------------------------ redirections */

static void on_retry(uv_timer_t *t);

/* Call c waits (c->on NULL) for the retry timer: RETRY_MS doubling with
 * its hops, or sooner when another call waits already. */
static void wait_retry(struct sl__hy_call *c)
{
    struct sl__hystore *st = c->st;
    unsigned k = c->hops < 5 ? c->hops : 5;

    if (!uv_is_active((uv_handle_t *)&st->retry))
        uv_timer_start(&st->retry, on_retry, (uint64_t)RETRY_MS << k, 0);
}

/* Send call c again on node n (NULL: none to be had now): at once, or
 * after a wait when n cannot take it yet. */
static void resend(struct sl__hy_call *c, struct sl__hy_node *n)
{
    SL__HY_CNT(c->st, sync_redirects, 1);
    if (n != NULL && send_on(c, n) == SL_OK)
        return;
    if (n != NULL)
        c->node = n;
    wait_retry(c);
}

/* Node i of the map with a link, connecting when it is down and not
 * waiting out a backoff (an ASK may name a master not connected yet);
 * NULL when there is none. */
static struct sl__hy_node *node_at(struct sl__hystore *st, int i)
{
    struct sl__hy_node *n;

    if (i < 0 || (size_t)i >= st->map->n_nodes)
        return NULL;
    if ((unsigned)i >= st->n_nodes)
        nodes_from_map(st);
    n = &st->nodes[i];
    if (n->link == NULL &&
        (n->link = sl__rlink_new(st->group, &st->link_conf, &link_events, n)) == NULL)
        return NULL;
    n->addr = st->map->nodes[i];
    if (n->conn == SL__HY_DOWN && !uv_is_active((uv_handle_t *)&n->timer))
        connect_at(n);
    return n->conn != SL__HY_DOWN ? n : NULL;
}

/* A call not busy, for a split (there is always one: every busy call
 * carries at least one entry, and there are max_keys calls). */
static struct sl__hy_call *free_call(struct sl__hystore *st)
{
    for (unsigned k = 0; k < st->n_calls; k++) {
        unsigned i = (st->free_hint + k) % st->n_calls;
        if (!st->calls[i].busy) {
            st->free_hint = i + 1;
            return &st->calls[i];
        }
    }
    return NULL;
}

/* Call c's entries each in a call of its own over its counter alone (c
 * keeps the first), sent again to the node that answered: it runs it for
 * a counter it still has, and answers ASK for one it no longer has. */
static void split(struct sl__hy_call *c)
{
    struct sl__hystore *st = c->st;
    unsigned n = c->n;

    c->one = true;
    c->asking = false;
    c->n = 1;
    for (unsigned k = 1; k < n; k++) {
        struct sl__hy_call *p = free_call(st);
        if (p == NULL) { /* not reached: its delta is pending again */
            sl__hy_restore(st, &st->ents[c->idx[k]]);
            continue;
        }
        *p = (struct sl__hy_call){.st = st,
                                  .node = c->node,
                                  .busy = true,
                                  .one = true,
                                  .hops = c->hops,
                                  .n = 1,
                                  .idx = c->idx + k};
        st->calls_out++;
        resend(p, c->node);
    }
    SL__HY_SET(st, in_flight, st->calls_out);
    resend(c, c->node);
}

/*
 * A cluster's call answered MOVED, ASK, TRYAGAIN or CLUSTERDOWN (r):
 * Redis did not run it, so it is sent again with the same deltas, and
 * nothing is counted twice. MOVED: to the node named, the slot's owner in
 * the map from now on, the map asked again in the background. ASK: after
 * ASKING to the node named, the map unchanged; a call over several keys
 * is first split into one call per counter (one_lua), sent again where it
 * was. TRYAGAIN: the same split, or for one counter a wait; CLUSTERDOWN:
 * a wait. False when it is not to be followed (another error, or
 * MAX_HOPS reached): the caller loses it (its deltas pending again).
 */
static bool follow(struct sl__hy_call *c, const redisReply *r)
{
    struct sl__hystore *st = c->st;
    struct sl__credir d = {0};
    enum sl__cerr e = sl__cluster_reply(r, c->node->addr.host, &d);

    if (c->hops >= MAX_HOPS || e == SL__CERR_NONE || e == SL__CERR_MALFORMED)
        return false;
    c->hops++;
    call_off(c);
    if (!c->one && (e == SL__CERR_TRYAGAIN || e == SL__CERR_ASK)) {
        split(c);
        return true;
    }
    if (e == SL__CERR_TRYAGAIN || e == SL__CERR_DOWN) {
        SL__HY_CNT(st, sync_redirects, 1);
        wait_retry(c);
        return true;
    }
    if (e == SL__CERR_MOVED) {
        if (sl__cmap_moved(st->map, &d) != SL_OK)
            return false;
        sl__rcfollow_stale(st->mapf); /* one slot moved: others probably did too */
        nodes_from_map(st);
        c->asking = false;
        resend(c, node_at(st, sl__cmap_lookup(st->map, d.slot)));
        return true;
    }
    c->asking = true;
    resend(c, node_at(st, sl__cmap_node(st->map, d.host, strlen(d.host), d.port)));
    return true;
}

/* The calls waiting: sent again (a hop was counted for what made them
 * wait; a failed attempt counts one more), or lost at MAX_HOPS. */
static void on_retry(uv_timer_t *t)
{
    struct sl__hystore *st = t->data;

    if (st->closing)
        return;
    for (unsigned i = 0; i < st->n_calls; i++) {
        struct sl__hy_call *c = &st->calls[i];
        if (!c->busy || c->on != NULL)
            continue;
        if (c->hops >= MAX_HOPS) {
            sl__rcfollow_stale(st->mapf);
            lose_call(c);
            continue;
        }
        struct sl__hy_node *n = node_at(st, (int)(c->node - st->nodes));
        if (n == NULL || send_on(c, n) != SL_OK) {
            c->hops++; /* a failed attempt is a hop too */
            wait_retry(c);
        }
    }
}

static void on_reply(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hy_call *c = priv;
    struct sl__hystore *st = c->st;
    struct sl__hy_node *n = c->node;

    if (!c->busy || l != c->on)
        return; /* already lost (timeout), or sent again elsewhere */
    if (r != NULL && st->cluster && is_cluster_error(r) && follow(c, r))
        return;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 * (size_t)c->n) {
        if (r != NULL && is_noscript(r) && n->link != NULL && sl__rlink_is_up(n->link)) {
            n->conn = SL__HY_CONNECTING; /* Redis restarted or flushed: load it again */
            n->sha[0] = '\0';
            update(st);
            (void)sl__rlink_command(n->link, on_loaded, n, "SCRIPT LOAD %s", sync_lua);
            probe(n);
        } else if (r != NULL && is_not_master(r)) {
            /* a failover demoted it: every call out is lost (pending
             * again) and the sentinels say where the master is now; with
             * no sentinels, the same Redis after the backoff */
            lose_call(c);
            stall_edge(st, &n->addr, true, "is not a master any more");
            node_drop(n);
            return;
        } else if (r != NULL && st->cluster && is_cluster_error(r)) {
            sl__rcfollow_stale(st->mapf); /* kept: they go where the new map says */
        }
        lose_call(c);
        return;
    }
    for (unsigned i = 0; i < c->n; i++) {
        const redisReply *e = r->element[2 * i], *m = r->element[2 * i + 1];
        struct sl__hy_ent *x = &st->ents[c->idx[i]];
        if (e->type == REDIS_REPLY_INTEGER && e->integer >= 0 && m->type == REDIS_REPLY_INTEGER)
            sl__hy_apply(st, x, (uint64_t)e->integer, m->integer > 0 ? m->integer : 0);
        else
            sl__hy_restore(st, x);
    }
    finish_call(c);
}

/* The slot of every Redis key of hash h: its hash tag is the 32 hex. */
static unsigned hash_slot(const uint64_t h[2])
{
    char hex[33];

    snprintf(hex, sizeof(hex), "%016llx%016llx", (unsigned long long)h[0],
             (unsigned long long)h[1]);
    return sl__redis_crc16(hex, 32) & (SL__CLUSTER_SLOTS - 1);
}

/* The node that serves hash h now, or NULL (not ready, or not known). */
static struct sl__hy_node *node_for(struct sl__hystore *st, const uint64_t h[2])
{
    struct sl__hy_node *n = node0(st);

    if (st->cluster) {
        int i = sl__cmap_lookup(st->map, hash_slot(h));
        n = i >= 0 && (unsigned)i < st->n_nodes ? &st->nodes[i] : NULL;
    }
    return n != NULL && n->conn == SL__HY_READY && n->link != NULL ? n : NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The entries to sync now, as st->pairs (slot << 32 | entry), by slot on
 * a cluster (there, only those whose node is ready: the others wait).
 * Their count. */
static uint32_t sync_order(struct sl__hystore *st)
{
    uint32_t k = 0;

    for (uint32_t li = 0; li < st->n_live; li++) {
        uint32_t i = st->live[li];
        const struct sl__hy_ent *e = &st->ents[i];
        uint64_t slot = 0;
        if (st->cluster) {
            if (node_for(st, e->h) == NULL)
                continue; /* kept: it goes once its node is back */
            slot = hash_slot(e->h);
        }
        st->pairs[k++] = slot << 32 | i;
    }
    if (st->cluster)
        qsort(st->pairs, k, sizeof(*st->pairs), cmp_u64);
    return k;
}

static void give_back(struct sl__hystore *st, const struct sl__hy_call *c)
{
    for (unsigned k = 0; k < c->n; k++)
        sl__hy_restore(st, &st->ents[c->idx[k]]);
}

void sl__hy_sync_run(struct sl__hystore *st, int64_t now_ns)
{
    unsigned ci = 0;
    struct sl__hy_call *c = NULL;
    bool sent = false;
    uint32_t k;
    uint64_t slot = 0;

    if (st->closing || st->calls_out > 0)
        return; /* the previous sync is still out */
    st->next_sync_ns = now_ns + st->cfg.sync_interval_ms * SL_NS_PER_MS;
    sl__hy_sweep(st, now_ns);
    if (!st->cluster && node_for(st, NULL) == NULL)
        return; /* kept: they go when Redis is back */
    k = sync_order(st);
    for (uint32_t j = 0; j <= k; j++) {
        uint32_t i = j < k ? (uint32_t)st->pairs[j] : 0;
        struct sl__hy_ent *e = &st->ents[i];
        bool cut = c != NULL && (j == k || c->n == st->cfg.batch || st->pairs[j] >> 32 != slot);
        if (cut) {
            if (send_call(st, c) != SL_OK)
                give_back(st, c);
            else
                sent = true;
            c = NULL;
        }
        if (j == k || (c == NULL && ci == st->n_calls))
            break;
        if (c == NULL) {
            c = &st->calls[ci++];
            c->n = 0;
            c->idx = &st->order[j];
            slot = st->pairs[j] >> 32;
            c->node = st->cluster ? node_for(st, e->h) : node0(st);
        }
        e->inflight = e->pending;
        e->pending = 0;
        e->in_call = true;
        SL__HY_SET(st, kept,
                   atomic_load_explicit(&st->ctr.kept, memory_order_relaxed) - e->inflight);
        c->idx[c->n++] = i;
    }
    if (sent)
        SL__HY_CNT(st, syncs, 1);
}

/* ------------------------------------------------------------ shutdown */

/* What a blocking push came to. */
enum push { PUSHED, REFUSED, BROKEN };

/* One blocking EVAL of the script over ents idx[0..k) with their pending
 * deltas: PUSHED when Redis took them, REFUSED when a cluster said the
 * keys are elsewhere (MOVED, ASK, TRYAGAIN, CLUSTERDOWN: not run; the link
 * is fine), BROKEN otherwise. */
static enum push push_blocking(struct sl__hystore *st, struct sl__rlink_sync *s,
                               const uint32_t *idx, unsigned k)
{
    size_t argc = 3, used = 0;
    char nk[16], err[256];
    redisReply *r;
    bool ok, refused;

    st->argv[0] = "EVAL";
    st->argvlen[0] = 4;
    st->argv[1] = sync_lua;
    st->argvlen[1] = sizeof(sync_lua) - 1;
    st->argvlen[2] = (size_t)snprintf(nk, sizeof(nk), "%u", 2 * k);
    st->argv[2] = nk;
    used = key_args(st, idx, k, argc, st->argbuf, true);
    argc += 2 * (size_t)k;
    for (unsigned j = 0; j < k; j++) {
        const struct sl__hy_ent *e = &st->ents[idx[j]];
        int w = snprintf(st->argbuf + used, 24, "%llu", (unsigned long long)e->pending);
        st->argv[argc] = st->argbuf + used;
        st->argvlen[argc++] = (size_t)w;
        used += (size_t)w + 1;
        w = snprintf(st->argbuf + used, 24, "%lld", (long long)sl__hy_limit_ttl_ms(st, &e->l));
        st->argv[argc] = st->argbuf + used;
        st->argvlen[argc++] = (size_t)w;
        used += (size_t)w + 1;
    }
    r = sl__rlink_sync_argv(s, (int)argc, st->argv, st->argvlen, err, sizeof(err));
    ok = r != NULL && r->type == REDIS_REPLY_ARRAY;
    refused = !ok && st->cluster && r != NULL && is_cluster_error(r);
    freeReplyObject(r);
    return ok ? PUSHED : refused ? REFUSED : BROKEN;
}

/* Entry i's pending delta alone (one_lua), blocking, from node `at` on
 * with MOVED and ASK followed (link/rcluster.h): a slot migrating, whose
 * master refused the call over several keys. True when Redis took it. */
static bool push_one(struct sl__hystore *st, const struct sl__rlink_conf *lc, int64_t ms,
                     const struct sl__cnode *at, uint32_t i)
{
    const struct sl__hy_ent *e = &st->ents[i];
    const struct sl__hy_key key = {e->h, &e->l, e->w, false};
    char *b = st->argbuf;
    const char *argv[6] = {"EVAL", one_lua, "1"};
    size_t lens[6] = {4, sizeof(one_lua) - 1, 1};
    const struct sl__rcmd x = {6, argv, lens};
    size_t used;
    redisReply *r;
    bool ok;

    lens[3] = sl__hy_key_name(st, &key, b, KEY_BYTES);
    argv[3] = b;
    used = lens[3] + 1;
    argv[4] = b + used;
    lens[4] = (size_t)snprintf(b + used, 24, "%llu", (unsigned long long)e->pending);
    used += lens[4] + 1;
    argv[5] = b + used;
    lens[5] = (size_t)snprintf(b + used, 24, "%lld", (long long)sl__hy_limit_ttl_ms(st, &e->l));
    r = sl__rcluster_run(lc, at->host, at->port, ms, &x);
    ok = r != NULL && r->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    return ok;
}

/* Where the last push goes: store.redis.host:port; behind Sentinel the
 * master the sentinels named last, or (none yet) the one the first
 * sentinel that answers names (each asked within ms). */
static bool final_target(const struct sl__hystore *st, const struct sl__rlink_conf *lc, int64_t ms,
                         struct sl__cnode *out)
{
    const struct sl__redis_config *rc = st->cfg.redis;
    struct sl__rlink_conf sc = *lc;
    struct sl__cnode sen[SL__RMASTER_MAX];
    int n;

    if (!st->sentinel) {
        out->port = rc->port;
        return set_host(out->host, sizeof(out->host), rc->host);
    }
    if (st->master_known) {
        *out = st->nodes[0].addr;
        return true;
    }
    sc.user = sc.password = NULL; /* the sentinels: no AUTH */
    n = sl__redis_parse_addrs(rc->sentinels, sen, SL__RMASTER_MAX);
    for (int k = 0; k < n; k++) {
        const struct sl__rlink_master_q q = {sen[k].host, sen[k].port, rc->master_name, ms};
        if (sl__rlink_sync_master(&sc, &q, out->host, sizeof(out->host), &out->port) == SL_OK)
            return true;
    }
    return false;
}

/* A cluster's map for the last push: CLUSTER SLOTS of the first seed
 * that answers. */
static bool final_map(const struct sl__hystore *st, const struct sl__rlink_conf *lc, int64_t ms,
                      struct sl__cmap *m)
{
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    const size_t lens[2] = {7, 5};
    char err[256];

    sl__cmap_init(m);
    for (unsigned k = 0; k < st->n_seeds; k++) {
        const struct sl__cnode *s = &st->seeds[(sl__rcfollow_seed(st->mapf) + k) % st->n_seeds];
        struct sl__rlink_sync *c = sl__rlink_sync_open(lc, s->host, s->port, ms, err, sizeof(err));
        redisReply *r = c != NULL ? sl__rlink_sync_argv(c, 2, argv, lens, err, sizeof(err)) : NULL;
        bool ok = r != NULL && sl__cmap_load(m, r, s->host) == SL_OK;
        freeReplyObject(r);
        sl__rlink_sync_close(c);
        if (ok)
            return true;
    }
    return false;
}

/* The last push's links: one per node, opened when first needed. */
struct final_links {
    const struct sl__rlink_conf *lc;
    int64_t ms;
    struct sl__rlink_sync *s[SL__CLUSTER_MAX_NODES];
    bool failed[SL__CLUSTER_MAX_NODES];
};

static struct sl__rlink_sync *final_link(struct final_links *fl, unsigned i,
                                         const struct sl__cnode *at)
{
    char err[256];

    if (fl->s[i] == NULL && !fl->failed[i]) {
        fl->s[i] = sl__rlink_sync_open(fl->lc, at->host, at->port, fl->ms, err, sizeof(err));
        fl->failed[i] = fl->s[i] == NULL;
    }
    return fl->s[i];
}

/* Push the pending deltas of the entries in st->pairs[0..k) (by slot),
 * one call per batch of one slot, each on its node's link (m NULL: node
 * 0's, at `to`). Counted in final_pushes. */
static void final_calls(struct sl__hystore *st, uint32_t k, const struct sl__cmap *m,
                        struct final_links *fl, const struct sl__cnode *to)
{
    uint32_t *idx = st->order;

    for (uint32_t j = 0; j < k;) {
        uint64_t slot = st->pairs[j] >> 32;
        unsigned n = 0;
        int node = m != NULL ? sl__cmap_lookup(m, (unsigned)slot) : 0;
        const struct sl__cnode *at = node >= 0 && m != NULL ? &m->nodes[node] : to;
        struct sl__rlink_sync *s = NULL;
        enum push p = BROKEN;
        while (j < k && n < st->cfg.batch && st->pairs[j] >> 32 == slot)
            idx[n++] = (uint32_t)st->pairs[j++];
        if (node >= 0)
            s = final_link(fl, (unsigned)node, at);
        if (s != NULL)
            p = push_blocking(st, s, idx, n);
        if (p == REFUSED) { /* the slot moved or migrates: each key alone, followed */
            for (unsigned x = 0; x < n; x++)
                if (push_one(st, fl->lc, fl->ms, at, idx[x])) {
                    st->ents[idx[x]].pending = 0;
                    SL__HY_CNT(st, final_pushes, 1);
                }
            continue;
        }
        if (p != PUSHED) {
            if (s != NULL) { /* broken now: not used again */
                sl__rlink_sync_close(s);
                fl->s[node] = NULL;
                fl->failed[node] = true;
            }
            continue;
        }
        for (unsigned x = 0; x < n; x++)
            st->ents[idx[x]].pending = 0;
        SL__HY_CNT(st, final_pushes, n);
    }
}

void sl__hy_final_push(struct sl__hystore *st)
{
    const struct sl__redis_config *rc = st->cfg.redis;
    int64_t ms = st->cfg.timeout_ms > 1000 ? st->cfg.timeout_ms : 1000; /* stopping can wait */
    struct sl__rlink_conf lc = {.user = rc != NULL ? rc->user : NULL,
                                .password = rc != NULL ? rc->password : NULL,
                                .connect_timeout_ms = ms};
    struct sl__rlink_tls tls;
    struct final_links *fl = NULL;
    struct sl__cmap *m = NULL;
    struct sl__cnode to;
    uint32_t k = 0;

    if (st->ents == NULL || st->argv == NULL || st->argbuf == NULL || st->cfg.redis == NULL ||
        st->pairs == NULL || st->order == NULL)
        return;
    for (uint32_t i = 0; i < st->cfg.max_keys; i++)
        if (st->ents[i].used && st->ents[i].pending > 0)
            st->pairs[k++] = (st->cluster ? (uint64_t)hash_slot(st->ents[i].h) << 32 : 0) | i;
    if (k == 0)
        return;
    if (st->cluster)
        qsort(st->pairs, k, sizeof(*st->pairs), cmp_u64);
    if (rc->tls.on) {
        if (sl__rlink_tls_init(&tls, &rc->tls) != SL_OK) {
            sl__rlink_tls_close(&tls);
            return; /* as Redis unreachable: sluiced -t reports the files */
        }
        lc.tls = &tls;
    }
    fl = calloc(1, sizeof(*fl));
    m = st->cluster ? malloc(sizeof(*m)) : NULL;
    if (fl == NULL || (st->cluster && m == NULL))
        goto out;
    fl->lc = &lc;
    fl->ms = ms;
    /* AUTH refused (or any step failing) leaves the deltas unpushed */
    if (st->cluster ? final_map(st, &lc, ms, m) : final_target(st, &lc, ms, &to))
        final_calls(st, k, m, fl, &to);
    for (unsigned i = 0; i < SL__CLUSTER_MAX_NODES; i++)
        sl__rlink_sync_close(fl->s[i]);
out:
    free(fl);
    free(m);
    if (lc.tls != NULL)
        sl__rlink_tls_close(&tls);
}

/* ------------------------------------------------------------ resets */

/* Said at most every 10 s per worker (the line counts what it stands for):
 * an admin script resetting many keys while Redis is away is one line. */
static void unsent(struct sl__hystore *st, const char *why)
{
    uint64_t now = uv_now(st->loop);

    SL__HY_CNT(st, fleet_resets_unsent, 1);
    st->resets_unsaid++;
    if (st->reset_said_ms != 0 && now - st->reset_said_ms < 10000)
        return;
    sl__store_log(SL__SLOG_WARN, "store.hybrid_reset_local",
                  "%llu reset(s) reached no other node (%s): forgotten on this node only, "
                  "the others keep counting until the key's window or bucket is over",
                  (unsigned long long)st->resets_unsaid, why);
    st->reset_said_ms = now;
    st->resets_unsaid = 0;
}

static void on_reset_reply(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hystore *st = priv;

    (void)l;
    if (st->closing)
        return;
    if (r == NULL)
        unsent(st, "the connection to Redis was lost");
    else if (r->type == REDIS_REPLY_ERROR)
        unsent(st, r->str != NULL ? r->str : "Redis answered an error");
}

void sl__hy_reset_fleet(struct sl__hystore *st, const uint64_t h[2], const struct sl_limit *l,
                        int64_t now_ns)
{
    int64_t first, last, now_ms = now_ns / SL_NS_PER_MS;
    size_t nk, argc = 0, used = 0;
    const char **argv = NULL;
    size_t *argvlen = NULL;
    char *b = NULL, head[3][24];
    struct sl__hy_node *n;

    if (st->closing)
        return;
    if ((n = node_for(st, h)) == NULL) {
        unsent(st, "Redis is not connected");
        return;
    }
    sl__hy_reset_windows(l, now_ns, &first, &last);
    nk = 1 + (size_t)(last - first + 1); /* the marker, then the counters */
    argv = malloc((3 + nk + 2) * sizeof(*argv));
    argvlen = malloc((3 + nk + 2) * sizeof(*argvlen));
    b = malloc(nk * KEY_BYTES);
    if (argv == NULL || argvlen == NULL || b == NULL) {
        unsent(st, "out of memory");
        goto out;
    }
    argv[argc] = "EVAL";
    argvlen[argc++] = 4;
    argv[argc] = reset_lua;
    argvlen[argc++] = sizeof(reset_lua) - 1;
    argvlen[argc] = (size_t)snprintf(head[0], sizeof(head[0]), "%zu", nk);
    argv[argc++] = head[0];
    for (int64_t w = first - 1; w <= last; w++) { /* first - 1: the marker */
        const struct sl__hy_key key = {h, l, w, w == first - 1};
        size_t len = sl__hy_key_name(st, &key, b + used, KEY_BYTES);
        argv[argc] = b + used;
        argvlen[argc++] = len;
        used += len + 1;
    }
    argvlen[argc] = (size_t)snprintf(head[1], sizeof(head[1]), "%lld", (long long)now_ms);
    argv[argc++] = head[1];
    argvlen[argc] =
        (size_t)snprintf(head[2], sizeof(head[2]), "%lld", (long long)sl__hy_limit_ttl_ms(st, l));
    argv[argc++] = head[2];
    if (sl__rlink_argv(n->link, on_reset_reply, st, (int)argc, argv, argvlen) != SL_OK) {
        unsent(st, "the command could not be queued");
        goto out;
    }
    SL__HY_CNT(st, fleet_resets, 1);
out:
    free(argv);
    free(argvlen);
    free(b);
}
