/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_sync_sub.c - the subscriber half of rules across nodes (see
 * rules_sync.h): one hiredis async connection on the given loop, subscribed
 * to "<prefix>:v1:rules" on one seed (any node of a cluster: cluster
 * pub/sub reaches every node), reconnecting with backoff to the next seed
 * when it is lost; and a pull on libuv's thread pool after every
 * subscription, every announcement, and every period_ms, one at a time
 * (requests during a pull are folded into one more pull after it).
 *
 * With Sentinel the seeds are sentinels: before each subscription one is
 * asked (asynchronously, on its own short-lived connection) which master
 * it names, and the subscription goes there.
 *
 * It does not decide what a pull applies (rules_sync.c) nor reload rules
 * (the change callback does). A missed announcement costs nothing but
 * time: the pull after the next subscription or period catches up.
 */
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "rules_sync.h"
#include "sluice.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

struct sl__rsync {
    uv_loop_t *loop;
    struct sl__rsync_config cfg;
    char *db_path;
    sl__rsync_change_cb cb;
    void *arg;
    char channel[SL__RSYNC_PREFIX_MAX + 16];

    redisAsyncContext *ac;
    redisAsyncContext *ask; /* Sentinel: the question which master, or NULL */
    size_t seed;            /* the seed in use */
    int64_t backoff_ms;     /* the next reconnection wait */
    uv_timer_t retry;       /* reconnection */
    uv_timer_t period;      /* periodic pull */

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
    if (!s->closing || s->pulling || s->handles_open > 0 || s->ac != NULL || s->ask != NULL)
        return;
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

static void on_message(redisAsyncContext *ac, void *reply, void *priv)
{
    struct sl__rsync *s = priv;
    redisReply *r = reply;

    if (r == NULL || s->closing || ac != s->ac || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    if (strcmp(r->element[0]->str, "subscribe") == 0) {
        uv_timer_stop(&s->retry);
        s->st.subscribed = true;
        s->backoff_ms = BACKOFF_MIN_MS;
        request_pull(s); /* catch up with what was missed while away */
    } else if (strcmp(r->element[0]->str, "message") == 0) {
        s->st.messages++;
        request_pull(s);
    }
}

static void drop_ask(struct sl__rsync *s)
{
    redisAsyncContext *ask = s->ask;

    s->ask = NULL; /* its callbacks see it is no longer ours */
    if (ask != NULL)
        redisAsyncFree(ask);
}

/* The timer: reconnect; or give up on a sentinel that did not answer, or
 * on a subscription not confirmed in time (a Redis that is gone: hiredis's
 * libuv adapter never reports a refused connection). */
static void on_retry(uv_timer_t *t)
{
    struct sl__rsync *s = t->data;
    redisAsyncContext *ac = s->ac;

    if (s->ask != NULL) {
        drop_ask(s);
        schedule_retry(s);
        return;
    }
    if (ac != NULL && !s->st.subscribed) {
        s->ac = NULL; /* its callbacks see it is no longer ours */
        redisAsyncFree(ac);
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
    uv_timer_start(&s->retry, on_retry, (uint64_t)s->backoff_ms, 0);
    s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct sl__rsync *s = ac->data;

    if (status != REDIS_OK && s != NULL && s->ac == ac) {
        s->ac = NULL; /* hiredis frees it after this callback */
        if (s->closing)
            maybe_free(s);
        else
            schedule_retry(s);
    }
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct sl__rsync *s = ac->data;

    (void)status;
    if (s == NULL || s->ac != ac)
        return;
    s->ac = NULL;
    if (s->closing)
        maybe_free(s);
    else
        schedule_retry(s);
}

static void subscribe_at(struct sl__rsync *s, const char *host, int port);

/* A sentinel's answer: subscribe on the master it names, or try the next. */
static void on_master(redisAsyncContext *ac, void *reply, void *priv)
{
    struct sl__rsync *s = priv;
    redisReply *r = reply;
    char host[256];
    long port = 0;

    if (s->closing || ac != s->ask)
        return;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[0]->len < sizeof(host)) {
        memcpy(host, r->element[0]->str, r->element[0]->len + 1);
        port = strtol(r->element[1]->str, NULL, 10);
    }
    uv_timer_stop(&s->retry);
    drop_ask(s); /* freed once this callback returns */
    if (port > 0 && port <= 65535)
        subscribe_at(s, host, (int)port);
    else
        schedule_retry(s);
}

static void on_ask_connect(const redisAsyncContext *ac, int status)
{
    struct sl__rsync *s = ac->data;

    if (status != REDIS_OK && s != NULL && s->ask == ac) {
        s->ask = NULL; /* hiredis frees it after this callback */
        uv_timer_stop(&s->retry);
        if (s->closing)
            maybe_free(s);
        else
            schedule_retry(s);
    }
}

static void on_ask_disconnect(const redisAsyncContext *ac, int status)
{
    struct sl__rsync *s = ac->data;

    (void)status;
    if (s == NULL)
        return;
    if (s->ask == ac) { /* lost before it answered */
        s->ask = NULL;
        uv_timer_stop(&s->retry);
        if (!s->closing)
            schedule_retry(s);
    }
    maybe_free(s);
}

/* Sentinel: ask the seed in use which master it names. */
static void ask_master(struct sl__rsync *s)
{
    const struct sl__rsync_seed *seed = &s->cfg.seeds[s->seed];
    redisAsyncContext *ac = redisAsyncConnect(seed->host, seed->port);

    if (ac == NULL || ac->err != 0 || redisLibuvAttach(ac, s->loop) != REDIS_OK) {
        if (ac != NULL)
            redisAsyncFree(ac);
        schedule_retry(s);
        return;
    }
    ac->data = s;
    s->ask = ac;
    redisAsyncSetConnectCallback(ac, on_ask_connect);
    redisAsyncSetDisconnectCallback(ac, on_ask_disconnect);
    redisAsyncCommand(ac, on_master, s, "SENTINEL get-master-addr-by-name %s", s->cfg.master_name);
    uv_timer_start(&s->retry, on_retry, (uint64_t)s->cfg.timeout_ms * 2, 0); /* its answer's */
}

static void connect_next(struct sl__rsync *s)
{
    if (s->closing || s->cfg.n_seeds == 0)
        return;
    if (s->cfg.master_name[0] != '\0')
        ask_master(s);
    else
        subscribe_at(s, s->cfg.seeds[s->seed].host, s->cfg.seeds[s->seed].port);
}

static void subscribe_at(struct sl__rsync *s, const char *host, int port)
{
    redisAsyncContext *ac;

    ac = redisAsyncConnect(host, port);
    if (ac == NULL || ac->err != 0 || redisLibuvAttach(ac, s->loop) != REDIS_OK) {
        if (ac != NULL)
            redisAsyncFree(ac);
        schedule_retry(s);
        return;
    }
    ac->data = s;
    s->ac = ac;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (s->cfg.password[0] != '\0' && s->cfg.user[0] != '\0')
        redisAsyncCommand(ac, NULL, NULL, "AUTH %s %s", s->cfg.user, s->cfg.password);
    else if (s->cfg.password[0] != '\0')
        redisAsyncCommand(ac, NULL, NULL, "AUTH %s", s->cfg.password);
    redisAsyncCommand(ac, on_message, s, "SUBSCRIBE %s", s->channel);
    uv_timer_start(&s->retry, on_retry, (uint64_t)s->cfg.timeout_ms * 2, 0); /* confirmed by */
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
    s->backoff_ms = BACKOFF_MIN_MS;
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
    redisAsyncContext *ac;

    if (s == NULL)
        return;
    s->closing = true;
    uv_close((uv_handle_t *)&s->retry, on_closed);
    uv_close((uv_handle_t *)&s->period, on_closed);
    if ((ac = s->ac) != NULL) {
        s->ac = NULL;
        ac->data = NULL;
        redisAsyncFree(ac); /* a subscribed connection never drains on its own */
    }
    if ((ac = s->ask) != NULL) {
        s->ask = NULL;
        ac->data = NULL;
        redisAsyncFree(ac);
    }
}
