/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_sentinel.c - the Redis store's master found through Redis
 * Sentinel: with store.redis.sentinels and store.redis.master_name, the
 * one Redis of the store (its map's node 0) is the master the sentinels
 * name, and follows it when they fail over.
 *
 * Per store (per worker), two connections to one sentinel at a time:
 *  - a subscriber to +switch-master, whose messages ("<name> <old ip>
 *    <old port> <new ip> <new port>") move the store to the new master at
 *    once;
 *  - a questioner asking SENTINEL get-master-addr-by-name <name>: after
 *    each (re)subscription (so that no switch is missed between the two),
 *    whenever a connection to the master is lost or the Redis it reaches
 *    says it is not a master (ROLE, checked by redis_conn.c on every
 *    connection), at most once per ASK_GAP_MS.
 * A sentinel that cannot be reached, does not answer within the probe
 * timeout, or does not know the name, is left for the next one in the
 * list, with backoff (link/rlink.h's: from 50 ms, doubling to
 * store.redis.backoff_max). Both are Redis links (link/rlink.h), so
 * store.redis.tls covers the sentinels too: a TLS failure is said once
 * per sentinel (store.tls_failed).
 *
 * Until a master is named nothing connects to Redis, and the failure
 * policy answers; between the old master's loss and the switch, the calls
 * fail or time out as with any Redis that is down, and the breaker and
 * the policy do what they always do. A new master is node 0's new address:
 * redis_conn.c's sl__rconn_retarget moves every connection to it.
 *
 * It does not talk to the master, and does not authenticate to the
 * sentinels (a sentinel with requirepass is not supported yet).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

#define ASK_GAP_MS 100 /* never two questions closer than this */

struct sl__rsentinel {
    struct sl__rstore *st;
    struct sl__cnode addr[SL__SENTINEL_MAX];
    unsigned n, at;             /* the sentinels, and the one to ask next */
    unsigned sub_at;            /* the one the subscriber is on */
    struct sl__rlink *sub;      /* SUBSCRIBE +switch-master (pub/sub) */
    struct sl__rlink *ask;      /* SENTINEL get-master-addr-by-name */
    bool subscribed;            /* the subscription is confirmed */
    bool asking;                /* a question is out */
    bool again;                 /* ask again once it is answered */
    bool known;                 /* node 0 is a master they named */
    uint8_t bad;                /* sentinels counted unreachable by this store (the log) */
    bool failed;                /* a sentinel has failed to answer once */
    uv_timer_t retry;           /* reconnecting the subscriber */
    uv_timer_t ask_timer;       /* while asking, its timeout; else a deferred question */
    struct sl__rbackoff bo;     /* the subscriber's reconnection waits */
    struct sl__rbackoff ask_bo; /* the waits after a question failed */
    int64_t asked_ms;           /* when the last question was sent */
    int handles;                /* timers not yet closed */
};

static void connect_sub(struct sl__rsentinel *se);
static void ask(struct sl__rsentinel *se);
static int64_t probe_ms(const struct sl__rsentinel *se);
static void on_retry(uv_timer_t *t);
static void sub_event(struct sl__rsentinel *se, bool lost, const char *why);

/* ------------------------------------------------------------ pure parts */

/* The next space-separated field of msg[*at..len): its start and length. */
static size_t field(const char *msg, size_t len, size_t *at, const char **start)
{
    size_t b = *at, e;

    while (b < len && msg[b] == ' ')
        b++;
    for (e = b; e < len && msg[e] != ' '; e++)
        ;
    *start = msg + b;
    *at = e;
    return e - b;
}

int sl__sentinel_parse_switch(const char *msg, size_t len, const char *name, struct sl__cnode *out)
{
    const char *f[5];
    size_t fl[5], at = 0;
    long port = 0;

    for (int i = 0; i < 5; i++)
        if ((fl[i] = field(msg, len, &at, &f[i])) == 0)
            return SL_EINVAL;
    while (at < len && msg[at] == ' ')
        at++;
    if (at != len)
        return SL_EINVAL; /* more than five fields */
    if (fl[0] != strlen(name) || memcmp(f[0], name, fl[0]) != 0)
        return SL_ENOENT;
    if (fl[3] >= SL__CLUSTER_HOST_MAX || fl[4] > 5)
        return SL_EINVAL;
    for (size_t i = 0; i < fl[4]; i++) {
        if (f[4][i] < '0' || f[4][i] > '9')
            return SL_EINVAL;
        port = port * 10 + (f[4][i] - '0');
    }
    if (port <= 0 || port > 65535)
        return SL_EINVAL;
    memcpy(out->host, f[3], fl[3]);
    out->host[fl[3]] = '\0';
    out->port = (int)port;
    return SL_OK;
}

/* ------------------------------------------------------------ the master */

static int64_t now_ms(const struct sl__rsentinel *se)
{
    return (int64_t)uv_now(se->st->loop);
}

static void sentinel_addr(const struct sl__rsentinel *se, unsigned i, char *out, size_t cap)
{
    const struct sl__cnode *a = &se->addr[i];

    snprintf(out, cap, strchr(a->host, ':') != NULL ? "[%s]:%d" : "%s:%d", a->host, a->port);
}

/* Sentinel `via` named (host, port): make it node 0 if it is not. */
static void set_master(struct sl__rsentinel *se, unsigned via_i, const char *host, int port)
{
    struct sl__rstore *st = se->st;
    struct sl__cnode *n0 = &st->map->nodes[0];
    char addr[SL__CLUSTER_HOST_MAX + 8], via[SL__CLUSTER_HOST_MAX + 8];

    if (se->known && n0->port == port && strcmp(n0->host, host) == 0)
        return; /* the same: its connections come back by themselves */
    if (strlen(host) >= sizeof(n0->host))
        return;
    if (se->known)
        SL__CNT(st, master_switches, 1);
    sl__revent_forget(st, 0); /* what was said of the old address */
    memcpy(n0->host, host, strlen(host) + 1);
    n0->port = port;
    st->map->version++;
    se->known = st->sview.known = true;
    sl__rnode_addr(st, 0, addr, sizeof(addr));
    sentinel_addr(se, via_i, via, sizeof(via));
    sl__revent_master(st, addr, via);
    st->up.master_moved(st); /* redis_conn.c moves every connection to it */
}

/* What the health view shows of Sentinel (redis_health.c copies it,
 * calling nothing here), then the view published. */
static void publish(struct sl__rsentinel *se)
{
    struct sl__rsview *v = &se->st->sview;

    v->subscribed = se->subscribed;
    v->failed = se->failed;
    v->at[0] = '\0';
    if (se->subscribed)
        sentinel_addr(se, se->sub_at, v->at, sizeof(v->at));
    sl__rhealth_publish(se->st);
}

/* Leave this sentinel for the next one. */
static void rotate(struct sl__rsentinel *se)
{
    se->at = (se->at + 1) % se->n;
}

static void on_ask_timer(uv_timer_t *t);

/* Ask again after `wait_ms` (a failed question, or the gap). */
static void ask_later(struct sl__rsentinel *se, int64_t wait_ms)
{
    se->again = true;
    uv_timer_start(&se->ask_timer, on_ask_timer, (uint64_t)(wait_ms > 0 ? wait_ms : 0), 0);
}

/* The question was not answered (no connection, lost, too slow, nil):
 * the next sentinel, after the backoff. */
static void ask_failed(struct sl__rsentinel *se)
{
    se->asking = false;
    se->failed = true;
    sl__rlink_drop(se->ask); /* on_master gets its NULL: ignored */
    rotate(se);
    ask_later(se, sl__rbackoff_next(&se->ask_bo));
    publish(se);
}

static void on_master(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rsentinel *se = priv;
    char key[256];
    const char *host;
    int port;

    (void)l;
    if (se->st->closing || r == NULL)
        return; /* dropped, or lost: ask_failed or ask_down does what follows */
    se->asking = false;
    uv_timer_stop(&se->ask_timer);
    if (sl__redis_master_addr(r, &host, &port)) {
        snprintf(key, sizeof(key), "sentinel unknown %s", se->st->cfg.master_name);
        sl__revent_clear(se->st, key);
        sl__rbackoff_reset(&se->ask_bo);
        if (port != 0)
            set_master(se, se->at, host, port);
    } else { /* nil: it does not know the name; or an error */
        char at[SL__CLUSTER_HOST_MAX + 8];
        sentinel_addr(se, se->at, at, sizeof(at));
        snprintf(key, sizeof(key), "sentinel unknown %s", se->st->cfg.master_name);
        if (sl__revent_once(se->st, key))
            sl__rlog(se->st, SL__SLOG_ERROR, "store.sentinel_no_master",
                     "sentinel %s does not name a master '%s'%s%s (check "
                     "store.redis.master_name)",
                     at, se->st->cfg.master_name, r->type == REDIS_REPLY_ERROR ? ": " : "",
                     r->type == REDIS_REPLY_ERROR ? r->str : "");
        ask_failed(se); /* the next question goes to the next sentinel */
        return;
    }
    if (se->again) {
        se->again = false;
        ask(se);
    }
}

/* A TLS failure with a sentinel: said once per sentinel and reason. */
static void say_tls(struct sl__rsentinel *se, unsigned i, const struct sl__rlink_why *why)
{
    char at[SL__CLUSTER_HOST_MAX + 8], key[SL__CLUSTER_HOST_MAX + 48];

    if (why->kind != SL__RLINK_TLS)
        return;
    sentinel_addr(se, i, at, sizeof(at));
    snprintf(key, sizeof(key), "tls %d sentinel %s", (int)why->tls, at);
    if (sl__revent_once(se->st, key))
        sl__rlog(se->st, SL__SLOG_ERROR, "store.tls_failed",
                 "sentinel %s: %s (check store.redis.tls)", at, why->text);
}

/* The questioner's connection failed or was lost: a question that was
 * out is asked of the next sentinel. */
static void ask_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__rsentinel *se = arg;

    (void)l;
    if (se->st->closing)
        return;
    say_tls(se, se->at, why);
    if (se->asking)
        ask_failed(se);
}

/* While asking: no answer in time (a frozen sentinel). Else: the deferred
 * question. */
static void on_ask_timer(uv_timer_t *t)
{
    struct sl__rsentinel *se = t->data;

    if (se->st->closing)
        return;
    if (se->asking) {
        ask_failed(se); /* on_master then gets NULL: ignored, no longer ours */
        return;
    }
    if (se->again) {
        se->again = false;
        ask(se);
    }
}

/* Connect `l` to sentinel i unless it is connected or connecting. */
static int open_link(struct sl__rsentinel *se, struct sl__rlink *l, unsigned i)
{
    if (sl__rlink_is_busy(l))
        return SL_OK;
    return l == NULL ? SL_ENOMEM : sl__rlink_connect(l, se->addr[i].host, se->addr[i].port);
}

/* Ask which master; not closer than ASK_GAP_MS to the last question
 * (later questions fold into one). */
static void ask(struct sl__rsentinel *se)
{
    struct sl__rstore *st = se->st;
    int64_t wait = se->asked_ms + ASK_GAP_MS - now_ms(se);

    if (st->closing)
        return;
    if (se->asking) {
        se->again = true;
        return;
    }
    if (wait > 0) {
        if (!uv_is_active((uv_handle_t *)&se->ask_timer))
            ask_later(se, wait);
        se->again = true;
        return;
    }
    se->again = false;
    se->asked_ms = now_ms(se);
    if (open_link(se, se->ask, se->at) != SL_OK ||
        sl__rlink_command(se->ask, on_master, se, "SENTINEL get-master-addr-by-name %s",
                          st->cfg.master_name) != SL_OK) {
        se->asking = true; /* so that ask_failed takes the next sentinel */
        ask_failed(se);
        return;
    }
    se->asking = true;
    uv_timer_start(&se->ask_timer, on_ask_timer, (uint64_t)probe_ms(se), 0);
}

/* ------------------------------------------------------------ the subscriber */

static void on_switch(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rsentinel *se = priv;
    struct sl__cnode to;

    (void)l;
    if (se->st->closing || r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    if (strcmp(r->element[0]->str, "subscribe") == 0) {
        uv_timer_stop(&se->retry);
        se->subscribed = true;
        sl__rbackoff_reset(&se->bo);
        sub_event(se, false, NULL);
        publish(se);
        ask(se); /* what may have changed before the subscription */
        return;
    }
    if (strcmp(r->element[0]->str, "message") == 0 && r->element[2]->type == REDIS_REPLY_STRING &&
        sl__sentinel_parse_switch(r->element[2]->str, r->element[2]->len, se->st->cfg.master_name,
                                  &to) == SL_OK)
        set_master(se, se->sub_at, to.host, to.port);
}

/* The log: the sentinel the subscriber is on was lost (or answers): each
 * sentinel's loss is one line per process, and its return another; the
 * first subscription through each sentinel is said once. */
static void sub_event(struct sl__rsentinel *se, bool lost, const char *why)
{
    char at[SL__CLUSTER_HOST_MAX + 8], key[sizeof(at) + 160];
    unsigned bit = 1u << se->sub_at;

    sentinel_addr(se, se->sub_at, at, sizeof(at));
    if (!lost) { /* subscribed: this sentinel answers (again) */
        snprintf(key, sizeof(key), "following %s via %s", se->st->cfg.master_name, at);
        if (sl__revent_once(se->st, key))
            sl__rlog(se->st, SL__SLOG_INFO, "store.sentinel_following",
                     "following master '%s' through sentinel %s", se->st->cfg.master_name, at);
    }
    if (lost == !!(se->bad & bit))
        return;
    se->bad ^= (uint8_t)bit;
    snprintf(key, sizeof(key), "sentinel %s", at);
    if (!sl__revent_edge(se->st, key, lost))
        return;
    if (lost)
        sl__rlog(se->st, SL__SLOG_WARN, "store.sentinel_unreachable",
                 "sentinel %s unreachable (%s): trying the other sentinels; a failover of '%s' "
                 "is noticed only once one answers",
                 at, why != NULL && why[0] != '\0' ? why : "connection lost",
                 se->st->cfg.master_name);
    else
        sl__rlog(se->st, SL__SLOG_INFO, "store.sentinel_back", "sentinel %s reachable again", at);
}

/* The subscriber is lost: the next sentinel, after the backoff. */
static void sub_lost(struct sl__rsentinel *se, const char *why)
{
    sub_event(se, true, why);
    se->subscribed = false;
    if (se->at == se->sub_at) /* the questions leave it too */
        rotate(se);
    uv_timer_start(&se->retry, on_retry, (uint64_t)sl__rbackoff_next(&se->bo), 0);
    publish(se);
}

static void sub_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__rsentinel *se = arg;

    (void)l;
    if (se->st->closing)
        return;
    say_tls(se, se->sub_at, why);
    sub_lost(se, why->text);
}

static int64_t probe_ms(const struct sl__rsentinel *se)
{
    return se->st->cfg.timeout_ms * 20 < 200 ? 200 : se->st->cfg.timeout_ms * 20;
}

static void connect_sub(struct sl__rsentinel *se)
{
    if (se->st->closing || sl__rlink_is_busy(se->sub))
        return;
    se->sub_at = se->at;
    if (open_link(se, se->sub, se->sub_at) != SL_OK ||
        sl__rlink_command(se->sub, NULL, NULL, "SUBSCRIBE +switch-master") != SL_OK) {
        sl__rlink_drop(se->sub);
        sub_lost(se, "cannot connect");
        return;
    }
    /* confirmed in time, or given up (a sentinel that accepts and says
     * nothing) */
    uv_timer_start(&se->retry, on_retry, (uint64_t)probe_ms(se), 0);
    if (!se->known)
        ask(se); /* at start, do not wait for the subscription to know a master */
}

/* The timer: a subscription not confirmed in time is given up; a lost
 * one is made again. */
static void on_retry(uv_timer_t *t)
{
    struct sl__rsentinel *se = t->data;

    if (se->st->closing)
        return;
    if (sl__rlink_is_busy(se->sub) && !se->subscribed) {
        sl__rlink_drop(se->sub);
        sub_lost(se, "no answer in time");
        return;
    }
    connect_sub(se);
}

/* ------------------------------------------------------------ the store's side */

void sl__rsentinel_lost(struct sl__rstore *st)
{
    if (st->sentinel != NULL && !st->closing)
        ask(st->sentinel);
}

int sl__rsentinel_init(struct sl__rstore *st)
{
    struct sl__rsentinel *se;
    int n;

    if (st->cfg.sentinels[0] == '\0')
        return SL_OK;
    if ((se = calloc(1, sizeof(*se))) == NULL)
        return SL_ENOMEM;
    n = sl__redis_parse_addrs(st->cfg.sentinels, se->addr, SL__SENTINEL_MAX);
    if (n <= 0) {
        free(se);
        return SL_EINVAL;
    }
    se->st = st;
    se->n = (unsigned)n;
    static const struct sl__rlink_events sub_ev = {.down = sub_down, .push = on_switch};
    static const struct sl__rlink_events ask_ev = {.down = ask_down};

    sl__rbackoff_init(&se->bo, st->cfg.backoff_min_ms, st->cfg.backoff_max_ms);
    sl__rbackoff_init(&se->ask_bo, st->cfg.backoff_min_ms, st->cfg.backoff_max_ms);
    se->sub = sl__rlink_new(st->group, &st->sentinel_link, &sub_ev, se);
    se->ask = sl__rlink_new(st->group, &st->sentinel_link, &ask_ev, se);
    se->asked_ms = INT64_MIN / 2;
    uv_timer_init(st->loop, &se->retry);
    uv_timer_init(st->loop, &se->ask_timer);
    uv_unref((uv_handle_t *)&se->retry);
    uv_unref((uv_handle_t *)&se->ask_timer);
    se->retry.data = se->ask_timer.data = se;
    se->handles = 2;
    st->sentinel = se;
    connect_sub(se);
    return SL_OK;
}

static void on_closed(uv_handle_t *h)
{
    struct sl__rsentinel *se = h->data;

    if (--se->handles == 0)
        free(se);
}

void sl__rsentinel_close(struct sl__rstore *st)
{
    struct sl__rsentinel *se = st->sentinel;

    if (se == NULL)
        return;
    sl__rlink_free(se->sub); /* st->closing: their callbacks do nothing */
    sl__rlink_free(se->ask);
    se->sub = se->ask = NULL;
    st->sentinel = NULL;
    uv_close((uv_handle_t *)&se->retry, on_closed);
    uv_close((uv_handle_t *)&se->ask_timer, on_closed);
}
