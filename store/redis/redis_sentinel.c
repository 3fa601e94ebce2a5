/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_sentinel.c - the Redis store's master found through Redis
 * Sentinel: with store.redis.sentinels and store.redis.master_name, the
 * one Redis of the store (its map's node 0) is the master the sentinels
 * name, and follows it when they fail over.
 *
 * The following itself is the links' Sentinel client (link/rmaster.h: a
 * +switch-master subscriber and a questioner, one sentinel at a time,
 * with backoff; store.redis.tls covers them). This file is the store's
 * side of it: a master named moves node 0 (redis_conn.c's
 * sl__rconn_retarget moves every connection to it), the sentinels are
 * asked again whenever a connection to the master is lost or the Redis
 * it reaches says it is not a master (ROLE, checked by redis_conn.c on
 * every connection), and what the follower notes becomes the store's log
 * lines and its health view.
 *
 * Until a master is named nothing connects to Redis, and the failure
 * policy answers; between the old master's loss and the switch, the calls
 * fail or time out as with any Redis that is down, and the breaker and
 * the policy do what they always do.
 *
 * It does not talk to the master, and does not authenticate to the
 * sentinels (a sentinel with requirepass is not supported yet).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"
#include "rmaster.h"

#define ASK_GAP_MS 100 /* never two questions closer than this */

struct sl__rsentinel {
    struct sl__rstore *st;
    struct sl__rmaster *follow;
};

static void via_addr(const struct sl__rsentinel *se, unsigned i, char *out, size_t cap)
{
    sl__rmaster_addr(se->follow, i, out, cap);
}

/* Sentinel `via` named (host, port): make it node 0 if it is not. */
static void on_master(void *arg, const char *host, int port, unsigned via_i)
{
    struct sl__rsentinel *se = arg;
    struct sl__rstore *st = se->st;
    struct sl__cnode *n0 = &st->map->nodes[0];
    char addr[SL__CLUSTER_HOST_MAX + 8], via[SL__CLUSTER_HOST_MAX + 8], key[256];

    if (st->closing)
        return;
    snprintf(key, sizeof(key), "sentinel unknown %s", st->cfg.master_name);
    sl__revent_clear(st, key);
    if (st->sview.known && n0->port == port && strcmp(n0->host, host) == 0)
        return; /* the same: its connections come back by themselves */
    if (strlen(host) >= sizeof(n0->host))
        return;
    if (st->sview.known)
        SL__CNT(st, master_switches, 1);
    sl__revent_forget(st, 0); /* what was said of the old address */
    memcpy(n0->host, host, strlen(host) + 1);
    n0->port = port;
    st->map->version++;
    st->sview.known = true;
    sl__rnode_addr(st, 0, addr, sizeof(addr));
    via_addr(se, via_i, via, sizeof(via));
    sl__revent_master(st, addr, via);
    st->up.master_moved(st); /* redis_conn.c moves every connection to it */
}

/* What the health view shows of Sentinel (redis_health.c copies it,
 * calling nothing here), then the view published. */
static void on_changed(void *arg)
{
    struct sl__rsentinel *se = arg;
    struct sl__rsview *v = &se->st->sview;

    if (se->st->closing)
        return;
    v->subscribed = sl__rmaster_subscribed(se->follow);
    v->failed = sl__rmaster_failed(se->follow);
    v->at[0] = '\0';
    if (v->subscribed)
        via_addr(se, sl__rmaster_at(se->follow), v->at, sizeof(v->at));
    sl__rhealth_publish(se->st);
}

/* The follower's notes as the store's log lines: the first subscription
 * through each sentinel is said once; each sentinel's loss is one line
 * per process, and its return another; a name no sentinel knows and a
 * TLS failure, once each. */
static void on_note(void *arg, enum sl__rmaster_note what, unsigned i, const char *text)
{
    struct sl__rsentinel *se = arg;
    struct sl__rstore *st = se->st;
    const char *name = st->cfg.master_name;
    char at[SL__CLUSTER_HOST_MAX + 8], key[sizeof(at) + 200];

    if (st->closing)
        return;
    via_addr(se, i, at, sizeof(at));
    switch (what) {
    case SL__RMASTER_FOLLOWING:
        snprintf(key, sizeof(key), "following %s via %s", name, at);
        if (sl__revent_once(st, key))
            sl__rlog(st, SL__SLOG_INFO, "store.sentinel_following",
                     "following master '%s' through sentinel %s", name, at);
        break;
    case SL__RMASTER_UNREACHABLE:
    case SL__RMASTER_BACK:
        snprintf(key, sizeof(key), "sentinel %s", at);
        if (!sl__revent_edge(st, key, what == SL__RMASTER_UNREACHABLE))
            break;
        if (what == SL__RMASTER_UNREACHABLE)
            sl__rlog(st, SL__SLOG_WARN, "store.sentinel_unreachable",
                     "sentinel %s unreachable (%s): trying the other sentinels; a failover of "
                     "'%s' is noticed only once one answers",
                     at, text[0] != '\0' ? text : "connection lost", name);
        else
            sl__rlog(st, SL__SLOG_INFO, "store.sentinel_back", "sentinel %s reachable again", at);
        break;
    case SL__RMASTER_NO_MASTER:
        snprintf(key, sizeof(key), "sentinel unknown %s", name);
        if (sl__revent_once(st, key))
            sl__rlog(st, SL__SLOG_ERROR, "store.sentinel_no_master",
                     "sentinel %s does not name a master '%s'%s%s (check "
                     "store.redis.master_name)",
                     at, name, text[0] != '\0' ? ": " : "", text);
        break;
    case SL__RMASTER_TLS:
        snprintf(key, sizeof(key), "tls sentinel %s %.120s", at, text);
        if (sl__revent_once(st, key))
            sl__rlog(st, SL__SLOG_ERROR, "store.tls_failed",
                     "sentinel %s: %s (check store.redis.tls)", at, text);
        break;
    }
}

/* ------------------------------------------------------------ the store's side */

void sl__rsentinel_lost(struct sl__rstore *st)
{
    if (st->sentinel != NULL && !st->closing)
        sl__rmaster_ask(st->sentinel->follow);
}

int sl__rsentinel_init(struct sl__rstore *st)
{
    static const struct sl__rmaster_events ev = {
        .master = on_master, .note = on_note, .changed = on_changed};
    struct sl__rmaster_conf c = {0};
    struct sl__rsentinel *se;
    int n;

    if (st->cfg.sentinels[0] == '\0')
        return SL_OK;
    n = sl__redis_parse_addrs(st->cfg.sentinels, c.addr, SL__RMASTER_MAX);
    if (n <= 0)
        return SL_EINVAL;
    if ((se = calloc(1, sizeof(*se))) == NULL)
        return SL_ENOMEM;
    se->st = st;
    c.n = (unsigned)n;
    c.name = st->cfg.master_name;
    c.probe_ms = st->cfg.timeout_ms * 20 < 200 ? 200 : st->cfg.timeout_ms * 20;
    c.gap_ms = ASK_GAP_MS;
    c.backoff_min_ms = st->cfg.backoff_min_ms;
    c.backoff_max_ms = st->cfg.backoff_max_ms;
    c.link = &st->sentinel_link;
    st->sentinel = se; /* before: the follower's first callbacks find it */
    se->follow = sl__rmaster_new(st->loop, st->group, &c, &ev, se);
    if (se->follow == NULL) {
        st->sentinel = NULL;
        free(se);
        return SL_ENOMEM;
    }
    return SL_OK;
}

void sl__rsentinel_close(struct sl__rstore *st)
{
    struct sl__rsentinel *se = st->sentinel;

    if (se == NULL)
        return;
    sl__rmaster_free(se->follow); /* no callback after this */
    st->sentinel = NULL;
    free(se);
}
