/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_health.c - the Redis store's state as other threads read it: per
 * node, its address, how many of its connections are ready, whether it is
 * down (none ready and one failed) and its breaker; and with Sentinel,
 * whether a master is known. The worker publishes it under a mutex when
 * something changes (a connection's state, the map, the breaker, the
 * master) - never per call - and meanwhile tells redis_events.c about the
 * edges it sees.
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
    st->policy_decides = st->cfg.policy != SL__POLICY_DENY;
    for (size_t i = 0; i < st->cfg.n_domains; i++)
        st->policy_decides = st->policy_decides || st->cfg.domains[i].policy != SL__POLICY_DENY;
    st->pub.sentinel = st->cfg.sentinels[0] != '\0';
    return uv_mutex_init(&st->pub.lock) == 0 ? SL_OK : SL_ENOMEM;
}

void sl__rhealth_close(struct sl__rstore *st)
{
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
    struct sl__rpub_node nodes[SL__CLUSTER_MAX_NODES];
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
        struct sl__rpub_node *p = &nodes[k];
        bool failed = false;
        memset(p, 0, sizeof(*p));
        sl__rnode_addr(st, k, p->addr, sizeof(p->addr));
        for (unsigned i = 0; i < st->cfg.connections; i++) {
            const struct sl__rconn *c = &st->conns[k * st->cfg.connections + i];
            p->conns++;
            p->ready += c->state == SL__RC_READY;
            failed = failed || c->failed;
        }
        p->serving = serves[k];
        p->breaker = (st->ev[k] & SL__EV_OPEN) != 0;
        if (!st->cfg.cluster && st->breaker == SL__BREAKER_OPEN)
            p->ready = 0; /* its connections are being dropped */
        p->down = p->ready == 0 && failed;
        if (p->serving || !any) /* a cluster's seeds count until a map names the masters */
            sl__revent_node(st, k, p->ready > 0, p->down, why_down(st, k));
    }
    for (unsigned k = 0; k < n; k++) {
        all_up = all_up && (!nodes[k].serving || (nodes[k].ready > 0 && !nodes[k].breaker));
        any_down = any_down || nodes[k].down;
    }
    uv_mutex_lock(&st->pub.lock);
    memcpy(st->pub.node, nodes, sizeof(nodes[0]) * n);
    st->pub.n = n;
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

/* Why a published store is not up ("" when it is). Under its lock. */
static void why_not_up(const struct sl__rstore *st, char *why, size_t cap)
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
    for (unsigned k = 0; k < p->n; k++) {
        if (!p->node[k].serving)
            continue;
        serving++;
        if (p->node[k].breaker)
            say(why, cap, "circuit breaker open for redis %s", p->node[k].addr);
        else if (p->node[k].ready == 0)
            say(why, cap, "redis %s %s", p->node[k].addr,
                p->node[k].down ? "unreachable" : "not connected yet");
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
    bool starting;

    uv_mutex_lock((uv_mutex_t *)&st->pub.lock);
    why_not_up(st, out->why, sizeof(out->why));
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

/* One node over the workers' stores, matched by address. */
struct node_sum {
    char addr[SL__CLUSTER_HOST_MAX + 8];
    unsigned workers, up, breakers;
    unsigned ready, conns;
    bool serving;
};

/* Every node any store publishes, summed; returns how many. */
static unsigned sum_nodes(struct sl__store *const *stores, unsigned n, struct node_sum *out,
                          unsigned max)
{
    unsigned m = 0;

    for (unsigned i = 0; i < n; i++) {
        const struct sl__rstore *st = of(stores[i]);
        uv_mutex_lock((uv_mutex_t *)&st->pub.lock);
        for (unsigned k = 0; k < st->pub.n; k++) {
            const struct sl__rpub_node *p = &st->pub.node[k];
            unsigned j = 0;
            while (j < m && strcmp(out[j].addr, p->addr) != 0)
                j++;
            if (j == m && m == max)
                continue;
            if (j == m) {
                memset(&out[m], 0, sizeof(out[m]));
                snprintf(out[m].addr, sizeof(out[m].addr), "%s", p->addr);
                m++;
            }
            out[j].workers++;
            out[j].up += p->ready > 0 && !p->breaker;
            out[j].breakers += p->breaker;
            out[j].ready += p->ready;
            out[j].conns += p->conns;
            out[j].serving = out[j].serving || p->serving;
        }
        uv_mutex_unlock((uv_mutex_t *)&st->pub.lock);
    }
    return m;
}

static const char *node_state(const struct node_sum *s)
{
    return s->up == s->workers ? "up" : s->up == 0 ? "down" : "partial";
}

static bool put_sentinel(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                         size_t *len)
{
    const struct sl__rstore *st0 = of(stores[0]);
    char master[SL__CLUSTER_HOST_MAX + 8] = "";
    unsigned subscribed = 0, known = 0;
    bool ok;

    for (unsigned i = 0; i < n; i++) {
        const struct sl__rstore *st = of(stores[i]);
        uv_mutex_lock((uv_mutex_t *)&st->pub.lock);
        subscribed += st->pub.sentinel_sub;
        known += st->pub.master_known;
        if (st->pub.master_known && st->pub.n > 0 && master[0] == '\0')
            snprintf(master, sizeof(master), "%s", st->pub.node[0].addr);
        uv_mutex_unlock((uv_mutex_t *)&st->pub.lock);
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
    static __thread struct node_sum sum[SL__CLUSTER_MAX_NODES];
    unsigned m = n > 0 ? sum_nodes(stores, n, sum, SL__CLUSTER_MAX_NODES) : 0;
    size_t start = *len;
    bool ok = sl__store_put(buf, cap, len, ",\"nodes\":[");

    for (unsigned j = 0; ok && j < m; j++) {
        const struct node_sum *s = &sum[j];
        ok = sl__store_put(buf, cap, len, "%s{\"address\":", j > 0 ? "," : "");
        ok = ok && sl__store_put_json_str(buf, cap, len, s->addr);
        ok = ok && sl__store_put(buf, cap, len,
                                 ",\"role\":\"%s\",\"state\":\"%s\",\"workers_up\":%u,"
                                 "\"workers\":%u,\"connections_ready\":%u,\"connections\":%u,"
                                 "\"breakers_open\":%u}",
                                 s->serving ? "master" : "seed", node_state(s), s->up, s->workers,
                                 s->ready, s->conns, s->breakers);
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
    static __thread struct node_sum sum[SL__CLUSTER_MAX_NODES];
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
                           sum[j].up == sum[j].workers);
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
