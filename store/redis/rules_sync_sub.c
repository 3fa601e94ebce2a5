/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_sync_sub.c - the subscriber half of rules across nodes (see
 * rules_sync.h): one Redis link (link/rlink.h: TLS and AUTH as
 * configured) on the given loop, subscribed to "<prefix>:v1:rules" on one
 * seed (any node of a cluster: cluster pub/sub reaches every node),
 * reconnecting with the links' backoff (sl__rbackoff) to the next seed
 * when it is lost; and a pull on libuv's thread pool after every
 * subscription, every announcement, and every period_ms, one at a time
 * (requests during a pull are folded into one more pull after it).
 *
 * With Sentinel the seeds are sentinels, followed by the links' Sentinel
 * client (link/rmaster.h: +switch-master and the question, one sentinel
 * at a time): the subscription goes to the master they name, moves when
 * they name another (a failover), and a lost subscription asks them
 * again before it is made again.
 *
 * It does not decide what a pull applies (rules_sync.c) nor reload rules
 * (the change callback does). A missed announcement costs nothing but
 * time: the pull after the next subscription or period catches up.
 */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "rmaster.h"
#include "rules_sync.h"
#include "sluice.h"
#include "store_log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

struct sl__rsync {
    uv_loop_t *loop;
    struct sl__rsync_config cfg;
    char *db_path;
    sl__rsync_change_cb cb;
    void *arg;
    char channel[SL__RSYNC_PREFIX_MAX + 16];

    struct sl__rlink_group *group;
    struct sl__rlink *sub;          /* the subscription (pub/sub) */
    struct sl__rmaster *follow;     /* Sentinel: the master they name */
    struct sl__rlink_conf sub_conf; /* AUTH as configured */
    struct sl__rlink_conf ask_conf; /* the sentinels: no AUTH */
    struct sl__rlink_tls tls;       /* store.redis.tls, when on */
    struct sl__rsync_seed master;   /* Sentinel: the one named last (port 0: none yet) */
    bool tls_said;                  /* a TLS failure is in the log */
    size_t seed;                    /* the seed in use */
    struct sl__rbackoff backoff;    /* reconnection */
    uv_timer_t retry;               /* reconnection */
    uv_timer_t period;              /* periodic pull */

    uv_work_t work;
    bool pulling, again, closing;
    int handles_open; /* timers not yet closed */
    struct sl__rsync_known known;
    int pull_rc; /* written by the pool thread, read after it */
    unsigned pull_changed;
    struct sl__rsync_stats st;
};

static void connect_next(struct sl__rsync *s);
static void schedule_retry(struct sl__rsync *s);

static void maybe_free(struct sl__rsync *s)
{
    if (!s->closing || s->pulling || s->handles_open > 0)
        return;
    if (s->sub_conf.tls != NULL)
        sl__rlink_tls_close(&s->tls);
    sl__rsync_known_free(&s->known);
    free(s->db_path);
    free(s);
}

static void do_pull(uv_work_t *w)
{
    struct sl__rsync *s = w->data;

    s->pull_rc = sl__rsync_pull(&s->cfg, s->db_path, &s->known, &s->pull_changed);
}

static void request_pull(struct sl__rsync *s);

static void after_pull(uv_work_t *w, int status)
{
    struct sl__rsync *s = w->data;

    s->pulling = false;
    if (s->closing) {
        maybe_free(s);
        return;
    }
    s->st.pulls++;
    if (status != 0 || s->pull_rc == SL_ENOENT)
        s->st.failures++;
    s->st.applied += s->pull_changed;
    if (s->pull_changed > 0 && s->cb != NULL)
        s->cb(s->arg);
    if (s->again) {
        s->again = false;
        request_pull(s);
    }
}

static void request_pull(struct sl__rsync *s)
{
    if (s->closing)
        return;
    if (s->pulling) {
        s->again = true;
        return;
    }
    s->pulling = true;
    s->work.data = s;
    if (uv_queue_work(s->loop, &s->work, do_pull, after_pull) != 0)
        s->pulling = false;
}

static void on_period(uv_timer_t *t)
{
    request_pull(t->data);
}

/* Every reply on the subscription: its confirmation, then announcements. */
static void on_push(struct sl__rlink *l, redisReply *r, void *arg)
{
    struct sl__rsync *s = arg;

    if (r == NULL || s->closing || l != s->sub || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    if (strcmp(r->element[0]->str, "subscribe") == 0) {
        uv_timer_stop(&s->retry);
        s->st.subscribed = true;
        sl__rbackoff_reset(&s->backoff);
        request_pull(s); /* catch up with what was missed while away */
    } else if (strcmp(r->element[0]->str, "message") == 0) {
        s->st.messages++;
        request_pull(s);
    }
}

/* The timer: reconnect; or give up on a sentinel that did not answer, or
 * on a subscription not confirmed in time (a Redis that is gone, or
 * frozen: it may accept and never answer). */
static void on_retry(uv_timer_t *t)
{
    struct sl__rsync *s = t->data;

    if (sl__rlink_is_busy(s->sub) && !s->st.subscribed) {
        sl__rlink_drop(s->sub);
        schedule_retry(s);
        return;
    }
    connect_next(s);
}

static void schedule_retry(struct sl__rsync *s)
{
    if (s->closing)
        return;
    s->st.subscribed = false;
    s->seed = (s->seed + 1) % (s->cfg.n_seeds ? s->cfg.n_seeds : 1);
    sl__rmaster_ask(s->follow); /* Sentinel: has the master moved? */
    uv_timer_start(&s->retry, on_retry, (uint64_t)sl__rbackoff_next(&s->backoff), 0);
}

static void on_up(struct sl__rlink *l, void *arg)
{
    (void)l;
    (void)arg; /* the subscription's confirmation, or the answer, says more */
}

/* The subscription is lost, or was never made. */
static void on_sub_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__rsync *s = arg;

    if (s->closing || l != s->sub)
        return;
    if (why->kind == SL__RLINK_TLS && !s->tls_said) {
        s->tls_said = true;
        sl__store_log(SL__SLOG_ERROR, "store.tls_failed", "rules sync: %s (check store.redis.tls)",
                      why->text);
    }
    schedule_retry(s);
}

static void subscribe_at(struct sl__rsync *s, const char *host, int port);

/* Sentinel: a sentinel names host:port the master (an answer, or a
 * +switch-master): the subscription goes there, leaving another. */
static void on_named(void *arg, const char *host, int port, unsigned via)
{
    struct sl__rsync *s = arg;
    bool same = s->master.port == port && strcmp(s->master.host, host) == 0;

    (void)via;
    if (s->closing || strlen(host) >= sizeof(s->master.host))
        return;
    if (same && (sl__rlink_is_busy(s->sub) || uv_is_active((uv_handle_t *)&s->retry)))
        return; /* subscribed there, or coming back by itself */
    memcpy(s->master.host, host, strlen(host) + 1);
    s->master.port = port;
    uv_timer_stop(&s->retry);
    sl__rlink_drop(s->sub);
    s->st.subscribed = false;
    subscribe_at(s, host, port);
}

/* A TLS failure with a sentinel, said once. */
static void on_sentinel_note(void *arg, enum sl__rmaster_note what, unsigned at, const char *text)
{
    struct sl__rsync *s = arg;
    char addr[SL__CLUSTER_HOST_MAX + 8];

    if (s->closing || what != SL__RMASTER_TLS || s->tls_said)
        return;
    s->tls_said = true;
    sl__rmaster_addr(s->follow, at, addr, sizeof(addr));
    sl__store_log(SL__SLOG_ERROR, "store.tls_failed",
                  "rules sync: sentinel %s: %s (check store.redis.tls)", addr, text);
}

static const struct sl__rlink_events sub_events = {
    .up = on_up, .down = on_sub_down, .push = on_push};

static void connect_next(struct sl__rsync *s)
{
    if (s->closing || s->cfg.n_seeds == 0)
        return;
    if (s->cfg.master_name[0] != '\0') {
        if (s->master.port != 0) /* else the follower's first answer subscribes */
            subscribe_at(s, s->master.host, s->master.port);
    } else
        subscribe_at(s, s->cfg.seeds[s->seed].host, s->cfg.seeds[s->seed].port);
}

static void subscribe_at(struct sl__rsync *s, const char *host, int port)
{
    /* AUTH (the link's own) goes first */
    if (sl__rlink_connect(s->sub, host, port) != SL_OK ||
        sl__rlink_command(s->sub, NULL, NULL, "SUBSCRIBE %s", s->channel) != SL_OK) {
        sl__rlink_drop(s->sub);
        schedule_retry(s);
        return;
    }
    uv_timer_start(&s->retry, on_retry, (uint64_t)s->cfg.timeout_ms * 2, 0); /* confirmed by */
}

/* Sentinel: the follower, on the seeds (the sentinels). */
static int follow_new(struct sl__rsync *s)
{
    static const struct sl__rmaster_events ev = {.master = on_named, .note = on_sentinel_note};
    struct sl__rmaster_conf c = {0};

    for (size_t i = 0; i < s->cfg.n_seeds && c.n < SL__RMASTER_MAX; i++) {
        size_t len = strlen(s->cfg.seeds[i].host);
        if (len >= sizeof(c.addr[0].host))
            continue; /* longer than any address Redis prints */
        memcpy(c.addr[c.n].host, s->cfg.seeds[i].host, len + 1);
        c.addr[c.n++].port = s->cfg.seeds[i].port;
    }
    c.name = s->cfg.master_name;
    c.probe_ms = s->cfg.timeout_ms * 2;
    c.gap_ms = 100;
    c.backoff_min_ms = BACKOFF_MIN_MS;
    c.backoff_max_ms = BACKOFF_MAX_MS;
    c.link = &s->ask_conf;
    s->follow = sl__rmaster_new(s->loop, s->group, &c, &ev, s);
    return s->follow != NULL ? SL_OK : SL_ENOMEM;
}

/* The links and their TLS; SL_OK or SL_ENOMEM. */
static int links_new(struct sl__rsync *s)
{
    /* no connect timeout of the links' own: the retry timer bounds the
     * answer and the subscription's confirmation, as it always did */
    s->sub_conf.user = s->cfg.user;
    s->sub_conf.password = s->cfg.password;
    if (s->cfg.tls.on) {
        /* Files that do not make a context (sluiced -t says why) fail
         * each connection until they are fixed: read again then. */
        (void)sl__rlink_tls_init(&s->tls, &s->cfg.tls);
        s->sub_conf.tls = s->ask_conf.tls = &s->tls;
    }
    s->group = sl__rlink_group_new(s->loop);
    if (s->group == NULL)
        return SL_ENOMEM;
    s->sub = sl__rlink_new(s->group, &s->sub_conf, &sub_events, s);
    if (s->sub == NULL)
        return SL_ENOMEM;
    return s->cfg.master_name[0] != '\0' ? follow_new(s) : SL_OK;
}

static void links_free(struct sl__rsync *s)
{
    sl__rmaster_free(s->follow); /* no callback after this */
    s->follow = NULL;
    sl__rlink_free(s->sub); /* a subscribed connection never drains on its own */
    s->sub = NULL;
    sl__rlink_group_free(s->group);
    s->group = NULL;
}

int sl__rsync_start(uv_loop_t *loop, const struct sl__rsync_config *c, const char *db_path,
                    sl__rsync_change_cb cb, void *arg, struct sl__rsync **out)
{
    struct sl__rsync *s;
    int n;

    *out = NULL;
    if (c->n_seeds == 0 || db_path == NULL)
        return SL_EINVAL;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return SL_ENOMEM;
    s->cfg = *c;
    n = snprintf(s->channel, sizeof(s->channel), "%s:v1:rules", c->prefix);
    s->db_path = strdup(db_path);
    if (n < 0 || (size_t)n >= sizeof(s->channel) || s->db_path == NULL) {
        free(s->db_path);
        free(s);
        return n < 0 || (size_t)n >= sizeof(s->channel) ? SL_EINVAL : SL_ENOMEM;
    }
    s->loop = loop;
    s->cb = cb;
    s->arg = arg;
    sl__rbackoff_init(&s->backoff, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
    if (links_new(s) != SL_OK) {
        links_free(s);
        if (s->sub_conf.tls != NULL)
            sl__rlink_tls_close(&s->tls);
        free(s->db_path);
        free(s);
        return SL_ENOMEM;
    }
    uv_timer_init(loop, &s->retry);
    uv_timer_init(loop, &s->period);
    s->retry.data = s->period.data = s;
    s->handles_open = 2;
    if (c->period_ms > 0)
        uv_timer_start(&s->period, on_period, (uint64_t)c->period_ms, (uint64_t)c->period_ms);
    connect_next(s);
    *out = s;
    return SL_OK;
}

void sl__rsync_stats(const struct sl__rsync *s, struct sl__rsync_stats *out)
{
    *out = s->st;
}

static void on_closed(uv_handle_t *h)
{
    struct sl__rsync *s = h->data;

    s->handles_open--;
    maybe_free(s);
}

void sl__rsync_stop(struct sl__rsync *s)
{
    if (s == NULL)
        return;
    s->closing = true;
    uv_close((uv_handle_t *)&s->retry, on_closed);
    uv_close((uv_handle_t *)&s->period, on_closed);
    links_free(s);
}
