/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_health.c - the Redis store's state as other threads read it: per
 * node, its address, how many of its connections are ready, whether it is
 * down (none ready and one failed) and its breaker, kept by the link's
 * node health (link/rnode.h: st->nodes); and with Sentinel, whether a
 * master is known. The worker notes and publishes it when something
 * changes (a connection's state, the map, the breaker, the master) -
 * never per call; the edges the link finds come back to redis_events.c
 * (sl__revent_node) for their lines.
 *
 * From it: the store's health (store.h: up, degraded or down, and why),
 * the "nodes" and "sentinel" members of /healthz?verbose over every
 * worker's store, and the per-node gauge of /metrics.
 *
 * It does not connect or decide anything.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kind.h"
#include "redis_int.h"

int sl__rhealth_init(struct sl__rstore *st)
{
    static const struct sl__rnode_events node_events = {.edge = sl__revent_node};

    st->policy_decides = st->cfg.policy != SL__POLICY_DENY;
    for (size_t i = 0; i < st->cfg.n_domains; i++)
        st->policy_decides = st->policy_decides || st->cfg.domains[i].policy != SL__POLICY_DENY;
    st->pub.sentinel = st->cfg.sentinels[0] != '\0';
    if (uv_mutex_init(&st->pub.lock) != 0)
        return SL_ENOMEM;
    if (sl__rnode_set_init(&st->nodes, sl__rshared_conds(st->shared), &node_events, st) != 0) {
        uv_mutex_destroy(&st->pub.lock);
        return SL_ENOMEM;
    }
    return SL_OK;
}

void sl__rhealth_close(struct sl__rstore *st)
{
    sl__rnode_set_close(&st->nodes);
    uv_mutex_destroy(&st->pub.lock);
}

/* Which nodes serve: without cluster the one Redis; on a cluster the
 * masters that own a slot (a seed that is a replica does not), computed
 * again only when the map changed (a MOVED publishes too). */
static void serving(struct sl__rstore *st, bool *out)
{
    if (!st->cfg.cluster) {
        memset(out, 0, sizeof(bool) * SL__CLUSTER_MAX_NODES);
        out[0] = sl__rsentinel_known(st);
        return;
    }
    if (!st->serves_valid || st->serves_version != st->map->version) {
        memset(st->serves, 0, sizeof(st->serves));
        for (unsigned s = 0; s < SL__CLUSTER_SLOTS; s++) {
            int node = sl__cmap_lookup(st->map, s);
            if (node >= 0)
                st->serves[node] = true;
        }
        st->serves_version = st->map->version;
        st->serves_valid = true;
    }
    memcpy(out, st->serves, sizeof(st->serves));
}

/* The first reason a connection of `node` gave for failing, or "". */
static const char *why_down(const struct sl__rstore *st, unsigned node)
{
    for (unsigned i = 0; i < st->cfg.connections && node < st->n_nodes_started; i++)
        if (st->conns[node * st->cfg.connections + i].why[0] != '\0')
            return st->conns[node * st->cfg.connections + i].why;
    return "";
}

void sl__rhealth_publish(struct sl__rstore *st)
{
    bool serves[SL__CLUSTER_MAX_NODES], any = false, all_up = true, any_down = false;
    unsigned n = st->n_nodes_started;

    if (st->closing || st->quiet)
        return; /* stopping, or moving to a new master: published once moved */
    if (!sl__rsentinel_known(st))
        n = 0; /* node 0 is no Redis until Sentinel names the master */
    serving(st, serves);
    for (unsigned k = 0; k < n; k++)
        any = any || serves[k];
    for (unsigned k = 0; k < n; k++) {
        char addr[SL__RNODE_ADDR_MAX];
        struct sl__rnode_state s = {.addr = addr, .why = why_down(st, k), .serving = serves[k]};
        sl__rnode_addr(st, k, addr, sizeof(addr));
        for (unsigned i = 0; i < st->cfg.connections; i++) {
            const struct sl__rconn *c = &st->conns[k * st->cfg.connections + i];
            s.conns++;
            s.ready += c->state == SL__RC_READY;
            s.failed = s.failed || c->failed;
        }
        s.held = (st->ev[k] & SL__EV_OPEN) != 0;
        if (!st->cfg.cluster && st->breaker == SL__BREAKER_OPEN)
            s.ready = 0;             /* its connections are being dropped */
        s.edges = s.serving || !any; /* a cluster's seeds count until a map names the masters */
        sl__rnode_note(&st->nodes, k, &s);
        all_up = all_up && (!s.serving || (s.ready > 0 && !s.held));
        any_down = any_down || (s.ready == 0 && s.failed);
    }
    sl__rnode_publish(&st->nodes, n);
    uv_mutex_lock(&st->pub.lock);
    st->pub.master_known = sl__rsentinel_known(st);
    /* what Sentinel last said of itself (redis_sentinel.c writes it) */
    st->pub.sentinel_sub = st->sview.subscribed;
    st->pub.failed = st->pub.failed || st->sview.failed;
    memcpy(st->pub.sentinel_at, st->sview.at, sizeof(st->pub.sentinel_at));
    st->pub.ever_up = st->pub.ever_up || (all_up && any && st->pub.master_known);
    st->pub.failed = st->pub.failed || any_down;
    uv_mutex_unlock(&st->pub.lock);
}

static const struct sl__rstore *of(const struct sl__store *s)
{
    return (const struct sl__rstore *)(const void *)s;
}

/* A sentence for `why`, cut to cap bytes (a long address may not fit). */
static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

/* Why a published store is not up ("" when it is), from its nodes as
 * published (node[0..n)). Under its lock. */
static void why_not_up(const struct sl__rstore *st, const struct sl__rnode_pub *node, unsigned n,
                       char *why, size_t cap)
{
    const struct sl__rpub *p = &st->pub;
    unsigned serving = 0;

    why[0] = '\0';
    if (p->sentinel && !p->master_known) {
        say(why, cap, "no master known for '%s' yet (Sentinel%s%s)", st->cfg.master_name,
            p->sentinel_at[0] != '\0' ? " at " : " unreachable",
            p->sentinel_at[0] != '\0' ? p->sentinel_at : "");
        return;
    }
    for (unsigned k = 0; k < n; k++) {
        if (!node[k].serving)
            continue;
        serving++;
        if (node[k].held)
            say(why, cap, "circuit breaker open for redis %s", node[k].addr);
        else if (node[k].ready == 0)
            say(why, cap, "redis %s %s", node[k].addr,
                node[k].down ? "unreachable" : "not connected yet");
        if (why[0] != '\0')
            return;
    }
    if (serving == 0)
        say(why, cap,
            st->cfg.cluster ? "no slot map from the cluster yet" : "redis not connected yet");
}

/* Up; starting (never up yet, and nothing has failed: a load balancer
 * waits the moment a connection takes); else degraded (a local or allow
 * policy answers) or down (only deny would). */
void sl__rhealth_get(const struct sl__store *s, struct sl__store_health *out)
{
    const struct sl__rstore *st = of(s);
    struct sl__rnode_pub node[SL__CLUSTER_MAX_NODES];
    unsigned n = sl__rnode_read((struct sl__rnode_set *)&st->nodes, node, SL__CLUSTER_MAX_NODES);
    bool starting;

    uv_mutex_lock((uv_mutex_t *)&st->pub.lock);
    why_not_up(st, node, n, out->why, sizeof(out->why));
    starting = !st->pub.ever_up && !st->pub.failed;
    uv_mutex_unlock((uv_mutex_t *)&st->pub.lock);
    /* A store whose connections are up may still refuse (breaker closing). */
    if (out->why[0] == '\0' && !sl__store_redis_ready(s))
        snprintf(out->why, sizeof(out->why), "redis not ready");
    if (out->why[0] == '\0')
        out->state = SL__STORE_UP;
    else if (starting)
        out->state = SL__STORE_STARTING;
    else
        out->state = st->policy_decides ? SL__STORE_DEGRADED : SL__STORE_DOWN;
}

/* ------------------------------------------------------------ over the workers */

/* Every node any store publishes, summed over the workers (by address);
 * returns how many. */
static unsigned sum_nodes(struct sl__store *const *stores, unsigned n, struct sl__rnode_sum *out,
                          unsigned max)
{
    unsigned m = 0;

    for (unsigned i = 0; i < n; i++)
        m = sl__rnode_sum_add(&((struct sl__rstore *)(void *)stores[i])->nodes, out, m, max);
    return m;
}

static const char *node_state(const struct sl__rnode_sum *s)
{
    return s->up == s->owners ? "up" : s->up == 0 ? "down" : "partial";
}

static bool put_sentinel(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                         size_t *len)
{
    const struct sl__rstore *st0 = of(stores[0]);
    char master[SL__CLUSTER_HOST_MAX + 8] = "";
    unsigned subscribed = 0, known = 0;
    bool ok;

    for (unsigned i = 0; i < n; i++) {
        struct sl__rstore *st = (struct sl__rstore *)(void *)stores[i];
        struct sl__rnode_pub node0;
        bool has = sl__rnode_read(&st->nodes, &node0, 1) > 0;
        uv_mutex_lock(&st->pub.lock);
        subscribed += st->pub.sentinel_sub;
        known += st->pub.master_known;
        if (st->pub.master_known && has && master[0] == '\0')
            snprintf(master, sizeof(master), "%s", node0.addr);
        uv_mutex_unlock(&st->pub.lock);
    }
    ok = sl__store_put(buf, cap, len, ",\"sentinel\":{\"master_name\":");
    ok = ok && sl__store_put_json_str(buf, cap, len, st0->cfg.master_name);
    ok = ok && sl__store_put(buf, cap, len, ",\"master\":");
    ok = ok && (master[0] != '\0' ? sl__store_put_json_str(buf, cap, len, master)
                                  : sl__store_put(buf, cap, len, "null"));
    ok = ok && sl__store_put(buf, cap, len,
                             ",\"workers_knowing_master\":%u,\"workers_subscribed\":%u,"
                             "\"workers\":%u}",
                             known, subscribed, n);
    return ok;
}

bool sl__rhealth_members(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                         size_t *len)
{
    static __thread struct sl__rnode_sum sum[SL__CLUSTER_MAX_NODES];
    unsigned m = n > 0 ? sum_nodes(stores, n, sum, SL__CLUSTER_MAX_NODES) : 0;
    size_t start = *len;
    bool ok = sl__store_put(buf, cap, len, ",\"nodes\":[");

    for (unsigned j = 0; ok && j < m; j++) {
        const struct sl__rnode_sum *s = &sum[j];
        ok = sl__store_put(buf, cap, len, "%s{\"address\":", j > 0 ? "," : "");
        ok = ok && sl__store_put_json_str(buf, cap, len, s->addr);
        ok = ok && sl__store_put(buf, cap, len,
                                 ",\"role\":\"%s\",\"state\":\"%s\",\"workers_up\":%u,"
                                 "\"workers\":%u,\"connections_ready\":%u,\"connections\":%u,"
                                 "\"breakers_open\":%u}",
                                 s->serving ? "master" : "seed", node_state(s), s->up, s->owners,
                                 s->ready, s->conns, s->held);
    }
    ok = ok && sl__store_put(buf, cap, len, "]");
    if (ok && n > 0 && of(stores[0])->pub.sentinel)
        ok = put_sentinel(stores, n, buf, cap, len);
    if (!ok)
        *len = start;
    return ok;
}

bool sl__rhealth_metrics(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                         size_t *len)
{
    static __thread struct sl__rnode_sum sum[SL__CLUSTER_MAX_NODES];
    unsigned m = n > 0 ? sum_nodes(stores, n, sum, SL__CLUSTER_MAX_NODES) : 0;
    size_t start = *len;
    bool ok = sl__store_put(buf, cap, len,
                            "# HELP sluice_store_redis_node_up 1 while every worker reaches this "
                            "Redis node (its breaker closed), else 0.\n"
                            "# TYPE sluice_store_redis_node_up gauge\n");

    for (unsigned j = 0; ok && j < m; j++) {
        char label[2 * sizeof(sum[j].addr)];
        size_t at = 0;
        if (!sum[j].serving)
            continue;                                        /* a seed that serves no slot */
        for (const char *c = sum[j].addr; *c != '\0'; c++) { /* the format's escapes */
            if (*c == '"' || *c == '\\' || *c == '\n')
                label[at++] = '\\';
            label[at++] = *c == '\n' ? 'n' : *c;
        }
        label[at] = '\0';
        ok = sl__store_put(buf, cap, len, "sluice_store_redis_node_up{node=\"%s\"} %d\n", label,
                           sum[j].up == sum[j].owners);
    }
    if (!ok)
        *len = start;
    return ok;
}

bool sl__store_redis_ready(const struct sl__store *s)
{
    const struct sl__rcounters *c = &((const struct sl__rstore *)(const void *)s)->ctr;

    return atomic_load_explicit(&c->breaker, memory_order_relaxed) == SL__BREAKER_CLOSED &&
           atomic_load_explicit(&c->conns_ready, memory_order_relaxed) > 0;
}
