/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_events.c - what an operator reads in the log about the Redis
 * store: a node becoming unreachable and coming back, a circuit breaker
 * opening and closing, the master Sentinel names, and decisions falling
 * back to a failure policy.
 *
 * Every worker has its own store, and each of them sees the same outage.
 * So that a process says each event once, the stores made from one
 * configuration share a struct sl__rshared, whose conditions table is the
 * link's (link/rnode.h): a condition ("unreachable 10.0.0.5:6379", "breaker
 * 10.0.0.5:6379") is logged when the first store sees it go bad and when
 * the last one sees it good again, with how long it lasted. The nodes'
 * edges (connected, unreachable, back) are found by the link's node health
 * and reported here (sl__revent_node) for their lines. Policy answers
 * are counted in it and logged at the first one, then at most once per
 * SL__REVENT_POLICY_MS with how many there were: never a line per request.
 *
 * It does not decide when a node is up (link/rnode.h does, from what
 * redis_health.c notes of the connections of redis_conn.c) and does no
 * I/O but the log line. The shared state is the only state here touched
 * by several threads: mutexes for the conditions and the master (state
 * changes only), atomics for the policy counts (one add per policy
 * answer).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redis_int.h"

void sl__rnode_addr(const struct sl__rstore *st, unsigned node, char *out, size_t cap)
{
    const struct sl__cnode *n = &st->map->nodes[node];

    snprintf(out, cap, strchr(n->host, ':') != NULL ? "[%s]:%d" : "%s:%d", n->host, n->port);
}

struct sl__rshared {
    /* the conditions and the nodes' edges, once per process (link/rnode.h) */
    struct sl__rnode_shared *conds;
    uv_mutex_t lock;                       /* guards master */
    char master[SL__CLUSTER_HOST_MAX + 8]; /* the last master logged */
    /* per policy (allow, deny, local): answers not yet logged, last line */
    _Atomic uint64_t policy_n[3];
    _Atomic int64_t policy_at_ms[3];
};

struct sl__rshared *sl__rshared_new(void)
{
    struct sl__rshared *sh = calloc(1, sizeof(*sh));

    if (sh == NULL)
        return NULL;
    if ((sh->conds = sl__rnode_shared_new()) == NULL || uv_mutex_init(&sh->lock) != 0) {
        sl__rnode_shared_free(sh->conds);
        free(sh);
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        atomic_init(&sh->policy_at_ms[i], INT64_MIN / 2);
    return sh;
}

void sl__rshared_free(struct sl__rshared *sh)
{
    if (sh == NULL)
        return;
    uv_mutex_destroy(&sh->lock);
    sl__rnode_shared_free(sh->conds);
    free(sh);
}

struct sl__rnode_shared *sl__rshared_conds(struct sl__rshared *sh)
{
    return sh->conds;
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sl__rlog_line(struct sl__rstore *st, enum sl__store_level level, const char *event,
                   const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (st->log != NULL)
        st->log(st->log_arg, level, event, line);
    else
        fprintf(stderr, "sluiced: %s %s\n", event, line);
}

bool sl__revent_edge(struct sl__rstore *st, const char *key, bool bad)
{
    int64_t lasted;

    return sl__rnode_shared_edge(st->shared->conds, key, bad, &lasted);
}

bool sl__revent_once(struct sl__rstore *st, const char *key)
{
    int64_t lasted;

    return sl__rnode_shared_edge(st->shared->conds, key, true, &lasted);
}

void sl__revent_clear(struct sl__rstore *st, const char *key)
{
    sl__rnode_shared_clear(st->shared->conds, key);
}

/* What the node is, after its address: " (cluster master)", " (master
 * 'mymaster')", or nothing for the one Redis. */
static const char *role(const struct sl__rstore *st, char *buf, size_t cap)
{
    if (st->cfg.cluster)
        return " (cluster master)";
    if (st->sentinel == NULL)
        return "";
    snprintf(buf, cap, " (master '%s')", st->cfg.master_name);
    return buf;
}

/* The link's node health (link/rnode.h) found an edge: the lines, once
 * per process. */
void sl__revent_node(void *arg, const struct sl__rnode_edge *e)
{
    struct sl__rstore *st = arg;
    char rb[160];

    if (!e->say)
        return;
    if (e->what == SL__RNODE_REACHED)
        sl__rlog(st, SL__SLOG_INFO, "store.node_connected", "redis %s%s connected", e->addr,
                 role(st, rb, sizeof(rb)));
    else if (e->what == SL__RNODE_DOWN)
        sl__rlog(st, SL__SLOG_WARN, "store.node_unreachable",
                 "redis %s%s unreachable: %s; its checks are answered by the failure "
                 "policy until it is back",
                 e->addr, role(st, rb, sizeof(rb)), e->why[0] != '\0' ? e->why : "connection lost");
    else if (e->what == SL__RNODE_BACK)
        sl__rlog(st, SL__SLOG_INFO, "store.node_back",
                 "redis %s%s reachable again after %lld.%03lld s: decisions by Redis", e->addr,
                 role(st, rb, sizeof(rb)), (long long)(e->lasted_ms / 1000),
                 (long long)(e->lasted_ms % 1000));
}

/* A cluster has a breaker per master; one Redis (also behind Sentinel,
 * whose master may change while it is open) has the store's one. */
void sl__revent_breaker(struct sl__rstore *st, unsigned node, bool open)
{
    char key[SL__CLUSTER_HOST_MAX + 160], addr[SL__RNODE_ADDR_MAX];
    int64_t lasted;

    if (open == !!(st->ev[node] & SL__EV_OPEN))
        return;
    st->ev[node] ^= SL__EV_OPEN;
    sl__rnode_addr(st, node, addr, sizeof(addr));
    if (st->cfg.cluster)
        snprintf(key, sizeof(key), "breaker %s", addr);
    else
        snprintf(key, sizeof(key), "breaker %s", st->cfg.master_name); /* "" without Sentinel */
    if (!sl__rnode_shared_edge(st->shared->conds, key, open, &lasted))
        return;
    if (open)
        sl__rlog(st, SL__SLOG_WARN, "store.breaker_open",
                 "circuit breaker open for redis %s after %u consecutive failures: nothing is "
                 "sent to it for %lld ms at a time, the failure policy answers",
                 addr, st->cfg.breaker_failures, (long long)st->cfg.breaker_open_ms);
    else
        sl__rlog(st, SL__SLOG_INFO, "store.breaker_closed",
                 "circuit breaker closed after %lld.%03lld s: redis %s answers again",
                 (long long)(lasted / 1000), (long long)(lasted % 1000), addr);
}

void sl__revent_forget(struct sl__rstore *st, unsigned node)
{
    /* the breaker is the store's: it closes on the new one */
    sl__rnode_forget(&st->nodes, node);
}

void sl__revent_master(struct sl__rstore *st, const char *addr, const char *via)
{
    struct sl__rshared *sh = st->shared;
    char was[sizeof(sh->master)];
    bool changed;

    uv_mutex_lock(&sh->lock);
    changed = strcmp(sh->master, addr) != 0;
    snprintf(was, sizeof(was), "%s", sh->master);
    if (changed)
        snprintf(sh->master, sizeof(sh->master), "%s", addr);
    uv_mutex_unlock(&sh->lock);
    if (changed && was[0] == '\0')
        sl__rlog(st, SL__SLOG_INFO, "store.master_found",
                 "redis master '%s' is %s (from sentinel %s)", st->cfg.master_name, addr, via);
    else if (changed)
        sl__rlog(st, SL__SLOG_WARN, "store.master_changed",
                 "redis master '%s' is now %s, was %s (from sentinel %s)", st->cfg.master_name,
                 addr, was, via);
}

static const char *const policy_names[] = {"allow", "deny", "local"};

void sl__revent_policy(struct sl__rstore *st, enum sl__redis_policy pol)
{
    struct sl__rshared *sh = st->shared;
    unsigned p = (unsigned)pol < 3 ? (unsigned)pol : 2;
    int64_t now = mono_ms(), at = atomic_load_explicit(&sh->policy_at_ms[p], memory_order_relaxed);
    uint64_t n;

    atomic_fetch_add_explicit(&sh->policy_n[p], 1, memory_order_relaxed);
    if (now - at < SL__REVENT_POLICY_MS ||
        !atomic_compare_exchange_strong(&sh->policy_at_ms[p], &at, now))
        return; /* counted; the next line says how many */
    n = atomic_exchange(&sh->policy_n[p], 0);
    if (now - at >= 2 * SL__REVENT_POLICY_MS) /* none in the last period: a new episode */
        sl__rlog(st, SL__SLOG_WARN, "store.policy_answering",
                 "decisions falling back to the failure policy '%s': Redis cannot answer them "
                 "(next line in %d s if this goes on)",
                 policy_names[p], SL__REVENT_POLICY_MS / 1000);
    else
        sl__rlog(st, SL__SLOG_WARN, "store.policy_answered",
                 "%llu decisions answered by the failure policy '%s' in the last %lld s",
                 (unsigned long long)n, policy_names[p], (long long)((now - at) / 1000));
}
