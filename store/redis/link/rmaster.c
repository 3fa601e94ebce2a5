/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rmaster.c - the master a set of sentinels names, followed (rmaster.h):
 * a +switch-master subscriber and a questioner, on one sentinel at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaster.h"
#include "sluice.h"

struct sl__rmaster {
    uv_loop_t *loop;
    struct sl__rmaster_conf cfg;
    const struct sl__rmaster_events *ev;
    void *arg;
    unsigned at;                /* the sentinel to ask next */
    unsigned sub_at;            /* the one the subscriber is on */
    struct sl__rlink *sub;      /* SUBSCRIBE +switch-master (pub/sub) */
    struct sl__rlink *ask;      /* SENTINEL get-master-addr-by-name */
    bool subscribed;            /* the subscription is confirmed */
    bool asking;                /* a question is out */
    bool again;                 /* ask again once it is answered */
    bool failed;                /* a sentinel has failed to answer once */
    bool closing;               /* freed: no callback any more */
    uint8_t bad;                /* sentinels lost (the edges of `note`) */
    uv_timer_t retry;           /* the subscriber: confirmation, reconnection */
    uv_timer_t ask_timer;       /* while asking, its timeout; else a deferred question */
    struct sl__rbackoff bo;     /* the subscriber's reconnection waits */
    struct sl__rbackoff ask_bo; /* the waits after a question failed */
    int64_t asked_ms;           /* when the last question was sent */
    int handles;                /* timers not yet closed */
};

static void ask(struct sl__rmaster *m);
static void on_retry(uv_timer_t *t);

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

/* ------------------------------------------------------------ reports */

void sl__rmaster_addr(const struct sl__rmaster *m, unsigned i, char *out, size_t cap)
{
    const struct sl__cnode *a = &m->cfg.addr[i];

    snprintf(out, cap, strchr(a->host, ':') != NULL ? "[%s]:%d" : "%s:%d", a->host, a->port);
}

bool sl__rmaster_subscribed(const struct sl__rmaster *m)
{
    return m->subscribed;
}

bool sl__rmaster_failed(const struct sl__rmaster *m)
{
    return m->failed;
}

unsigned sl__rmaster_at(const struct sl__rmaster *m)
{
    return m->sub_at;
}

static void note(struct sl__rmaster *m, enum sl__rmaster_note what, unsigned at, const char *text)
{
    if (m->ev->note != NULL)
        m->ev->note(m->arg, what, at, text != NULL ? text : "");
}

static void changed(struct sl__rmaster *m)
{
    if (m->ev->changed != NULL)
        m->ev->changed(m->arg);
}

/* Sentinel `at` lost (or answering again): said on the edges only. */
static void edge(struct sl__rmaster *m, unsigned at, bool lost, const char *why)
{
    unsigned bit = 1u << at;

    if (lost == !!(m->bad & bit))
        return;
    m->bad ^= (uint8_t)bit;
    note(m, lost ? SL__RMASTER_UNREACHABLE : SL__RMASTER_BACK, at, why);
}

static void say_tls(struct sl__rmaster *m, unsigned at, const struct sl__rlink_why *why)
{
    if (why->kind == SL__RLINK_TLS)
        note(m, SL__RMASTER_TLS, at, why->text);
}

/* ------------------------------------------------------------ the question */

static int64_t now_ms(const struct sl__rmaster *m)
{
    return (int64_t)uv_now(m->loop);
}

static void rotate(struct sl__rmaster *m)
{
    m->at = (m->at + 1) % m->cfg.n;
}

static void on_ask_timer(uv_timer_t *t);

/* Ask again after `wait_ms` (a failed question, or the gap). */
static void ask_later(struct sl__rmaster *m, int64_t wait_ms)
{
    m->again = true;
    uv_timer_start(&m->ask_timer, on_ask_timer, (uint64_t)(wait_ms > 0 ? wait_ms : 0), 0);
}

/* The question was not answered (no connection, lost, too slow, nil):
 * the next sentinel, after the backoff. */
static void ask_failed(struct sl__rmaster *m)
{
    m->asking = false;
    m->failed = true;
    sl__rlink_drop(m->ask); /* on_answer gets its NULL: ignored */
    rotate(m);
    ask_later(m, sl__rbackoff_next(&m->ask_bo));
    changed(m);
}

static void on_answer(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rmaster *m = priv;
    char host[SL__CLUSTER_HOST_MAX];
    int port;

    (void)l;
    if (m->closing || r == NULL || !m->asking)
        return; /* dropped, or lost: ask_failed or ask_down does what follows */
    m->asking = false;
    uv_timer_stop(&m->ask_timer);
    if (!sl__rlink_master_addr(r, host, sizeof(host), &port)) {
        /* nil: it does not know the name; or an error */
        note(m, SL__RMASTER_NO_MASTER, m->at, r->type == REDIS_REPLY_ERROR ? r->str : "");
        m->asking = true;
        ask_failed(m); /* the next question goes to the next sentinel */
        return;
    }
    sl__rbackoff_reset(&m->ask_bo);
    m->ev->master(m->arg, host, port, m->at);
    if (m->closing)
        return;
    if (m->again) {
        m->again = false;
        ask(m);
    }
}

/* The questioner's connection failed or was lost: a question that was
 * out is asked of the next sentinel. */
static void ask_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__rmaster *m = arg;

    (void)l;
    if (m->closing)
        return;
    say_tls(m, m->at, why);
    if (m->asking)
        ask_failed(m);
}

/* While asking: no answer in time (a frozen sentinel). Else: the deferred
 * question. */
static void on_ask_timer(uv_timer_t *t)
{
    struct sl__rmaster *m = t->data;

    if (m->closing)
        return;
    if (m->asking) {
        ask_failed(m);
        return;
    }
    if (m->again) {
        m->again = false;
        ask(m);
    }
}

/* Connect `l` to sentinel i unless it is connected or connecting. */
static int open_link(struct sl__rmaster *m, struct sl__rlink *l, unsigned i)
{
    if (sl__rlink_is_busy(l))
        return SL_OK;
    return sl__rlink_connect(l, m->cfg.addr[i].host, m->cfg.addr[i].port);
}

static void ask(struct sl__rmaster *m)
{
    int64_t wait = m->asked_ms + m->cfg.gap_ms - now_ms(m);

    if (m->closing)
        return;
    if (m->asking) {
        m->again = true;
        return;
    }
    if (wait > 0) {
        if (!uv_is_active((uv_handle_t *)&m->ask_timer))
            ask_later(m, wait);
        m->again = true;
        return;
    }
    m->again = false;
    m->asked_ms = now_ms(m);
    m->asking = true; /* so that a failure takes the next sentinel */
    if (open_link(m, m->ask, m->at) != SL_OK ||
        sl__rlink_command(m->ask, on_answer, m, "SENTINEL get-master-addr-by-name %s",
                          m->cfg.name) != SL_OK) {
        ask_failed(m);
        return;
    }
    uv_timer_start(&m->ask_timer, on_ask_timer, (uint64_t)m->cfg.probe_ms, 0);
}

void sl__rmaster_ask(struct sl__rmaster *m)
{
    if (m != NULL)
        ask(m);
}

/* ------------------------------------------------------------ the subscriber */

static void on_switch(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rmaster *m = priv;
    struct sl__cnode to;

    (void)l;
    if (m->closing || r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    if (strcmp(r->element[0]->str, "subscribe") == 0) {
        uv_timer_stop(&m->retry);
        m->subscribed = true;
        sl__rbackoff_reset(&m->bo);
        note(m, SL__RMASTER_FOLLOWING, m->sub_at, NULL);
        edge(m, m->sub_at, false, NULL);
        changed(m);
        ask(m); /* what may have changed before the subscription */
        return;
    }
    if (strcmp(r->element[0]->str, "message") == 0 && r->element[2]->type == REDIS_REPLY_STRING &&
        sl__sentinel_parse_switch(r->element[2]->str, r->element[2]->len, m->cfg.name, &to) ==
            SL_OK)
        m->ev->master(m->arg, to.host, to.port, m->sub_at);
}

/* The subscriber is lost: the next sentinel, after the backoff. */
static void sub_lost(struct sl__rmaster *m, const char *why)
{
    edge(m, m->sub_at, true, why);
    if (m->closing)
        return;
    m->subscribed = false;
    if (m->at == m->sub_at) /* the questions leave it too */
        rotate(m);
    uv_timer_start(&m->retry, on_retry, (uint64_t)sl__rbackoff_next(&m->bo), 0);
    changed(m);
}

static void sub_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__rmaster *m = arg;

    (void)l;
    if (m->closing)
        return;
    say_tls(m, m->sub_at, why);
    sub_lost(m, why->text);
}

static void connect_sub(struct sl__rmaster *m)
{
    if (m->closing || sl__rlink_is_busy(m->sub))
        return;
    m->sub_at = m->at;
    if (open_link(m, m->sub, m->sub_at) != SL_OK ||
        sl__rlink_command(m->sub, NULL, NULL, "SUBSCRIBE +switch-master") != SL_OK) {
        sl__rlink_drop(m->sub);
        sub_lost(m, "cannot connect");
        return;
    }
    /* confirmed in time, or given up (a sentinel that accepts and says
     * nothing) */
    uv_timer_start(&m->retry, on_retry, (uint64_t)m->cfg.probe_ms, 0);
}

/* The timer: a subscription not confirmed in time is given up; a lost
 * one is made again. */
static void on_retry(uv_timer_t *t)
{
    struct sl__rmaster *m = t->data;

    if (m->closing)
        return;
    if (sl__rlink_is_busy(m->sub) && !m->subscribed) {
        sl__rlink_drop(m->sub);
        sub_lost(m, "no answer in time");
        return;
    }
    connect_sub(m);
}

/* ------------------------------------------------------------ life */

struct sl__rmaster *sl__rmaster_new(uv_loop_t *loop, struct sl__rlink_group *g,
                                    const struct sl__rmaster_conf *c,
                                    const struct sl__rmaster_events *ev, void *arg)
{
    static const struct sl__rlink_events sub_ev = {.down = sub_down, .push = on_switch};
    static const struct sl__rlink_events ask_ev = {.down = ask_down};
    struct sl__rmaster *m;

    if (c->n == 0 || c->n > SL__RMASTER_MAX || (m = calloc(1, sizeof(*m))) == NULL)
        return NULL;
    m->loop = loop;
    m->cfg = *c;
    m->ev = ev;
    m->arg = arg;
    sl__rbackoff_init(&m->bo, c->backoff_min_ms, c->backoff_max_ms);
    sl__rbackoff_init(&m->ask_bo, c->backoff_min_ms, c->backoff_max_ms);
    m->sub = sl__rlink_new(g, c->link, &sub_ev, m);
    m->ask = sl__rlink_new(g, c->link, &ask_ev, m);
    if (m->sub == NULL || m->ask == NULL) {
        sl__rlink_free(m->sub);
        sl__rlink_free(m->ask);
        free(m);
        return NULL;
    }
    m->asked_ms = INT64_MIN / 2;
    uv_timer_init(loop, &m->retry);
    uv_timer_init(loop, &m->ask_timer);
    uv_unref((uv_handle_t *)&m->retry);
    uv_unref((uv_handle_t *)&m->ask_timer);
    m->retry.data = m->ask_timer.data = m;
    m->handles = 2;
    /* Both start from the loop, never inside this call: the subscriber
     * (on_retry connects it), and the first question at once, without
     * waiting for the subscription. */
    uv_timer_start(&m->retry, on_retry, 0, 0);
    ask_later(m, 0);
    return m;
}

static void on_closed(uv_handle_t *h)
{
    struct sl__rmaster *m = h->data;

    if (--m->handles == 0)
        free(m);
}

void sl__rmaster_free(struct sl__rmaster *m)
{
    if (m == NULL || m->closing)
        return;
    m->closing = true;
    sl__rlink_free(m->sub); /* closing: their callbacks do nothing */
    sl__rlink_free(m->ask);
    m->sub = m->ask = NULL;
    uv_close((uv_handle_t *)&m->retry, on_closed);
    uv_close((uv_handle_t *)&m->ask_timer, on_closed);
}
