/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rcluster.c - the Redis link's cluster layer on links (rcluster.h): the
 * CLUSTER SLOTS question on a link, the seeds' follower, and one blocking
 * command on a cluster with its redirections followed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcluster.h"
#include "sluice.h"

#define RUN_HOPS 5 /* redirections a blocking command follows */

/* ------------------------------------------------------------ the question */

static void on_slots(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rcslots *q = priv;
    int rc;

    (void)l;
    if (!q->out)
        return; /* given up: its NULL reply, or a late answer */
    q->out = false;
    rc = r == NULL ? SL_ENOENT : sl__cmap_load(q->map, r, q->host) == SL_OK ? SL_OK : SL_EINVAL;
    q->done(q->arg, rc);
}

int sl__rcslots_ask(struct sl__rlink *l, struct sl__rcslots *q, const char *host)
{
    size_t n = strlen(host);
    int rc;

    if (n >= sizeof(q->host))
        return SL_EINVAL;
    memcpy(q->host, host, n + 1);
    q->out = true;
    rc = sl__rlink_command(l, on_slots, q, "CLUSTER SLOTS");
    if (rc != SL_OK)
        q->out = false;
    return rc;
}

/* ------------------------------------------------------------ the follower */

struct sl__rcfollow {
    struct sl__rcfollow_conf c;
    struct sl__cmap *map;
    const struct sl__rcfollow_events *ev;
    void *arg;
    struct sl__rlink *link; /* to the seed in use, while a question is out */
    struct sl__rcslots q;
    uv_timer_t tick;
    unsigned seed, ticks;
    bool stale;
};

/* Give up on the question out (its NULL reply is no answer); `next`: ask
 * the next seed the next time. */
static void give_up(struct sl__rcfollow *f, bool next)
{
    if (!f->q.out)
        return;
    f->q.out = false;
    if (next)
        f->seed = (f->seed + 1) % f->c.n_seeds;
    sl__rlink_drop(f->link);
}

static void on_answer(void *arg, int rc)
{
    struct sl__rcfollow *f = arg;

    sl__rlink_drop(f->link); /* one question per connection */
    if (rc != SL_OK) {
        f->seed = (f->seed + 1) % f->c.n_seeds;
        return;
    }
    f->stale = !sl__cmap_complete(f->map);
    f->ev->map(f->arg);
}

static void on_up(struct sl__rlink *l, void *arg)
{
    (void)l;
    (void)arg;
}

/* The link went down before the answer (its NULL reply came first and
 * gave it up), or could not be made. */
static void on_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    (void)l;
    (void)why;
    give_up(arg, true);
}

static const struct sl__rlink_events link_events = {.up = on_up, .down = on_down};

static void on_tick(uv_timer_t *t)
{
    struct sl__rcfollow *f = t->data;
    const struct sl__cnode *s;

    if (f->q.out) { /* not answered in a tick: the next seed */
        give_up(f, true);
        return;
    }
    if (!f->stale && ++f->ticks % f->c.fresh_ticks != 0)
        return;
    s = &f->c.seeds[f->seed];
    if (sl__rlink_connect(f->link, s->host, s->port) != SL_OK ||
        sl__rcslots_ask(f->link, &f->q, s->host) != SL_OK) {
        f->q.out = false;
        sl__rlink_drop(f->link);
        f->seed = (f->seed + 1) % f->c.n_seeds;
    }
}

struct sl__rcfollow *sl__rcfollow_new(uv_loop_t *loop, struct sl__rlink_group *g,
                                      const struct sl__rcfollow_conf *c, struct sl__cmap *map,
                                      const struct sl__rcfollow_events *ev, void *arg)
{
    struct sl__rcfollow *f;

    if (c->n_seeds == 0 || c->tick_ms == 0 || c->fresh_ticks == 0)
        return NULL;
    f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    f->c = *c;
    f->map = map;
    f->ev = ev;
    f->arg = arg;
    f->stale = true;
    f->q = (struct sl__rcslots){.map = map, .done = on_answer, .arg = f};
    f->link = sl__rlink_new(g, c->link, &link_events, f);
    if (f->link == NULL) {
        free(f);
        return NULL;
    }
    uv_timer_init(loop, &f->tick);
    uv_unref((uv_handle_t *)&f->tick);
    f->tick.data = f;
    uv_timer_start(&f->tick, on_tick, 0, c->tick_ms);
    return f;
}

void sl__rcfollow_stale(struct sl__rcfollow *f)
{
    if (f != NULL)
        f->stale = true;
}

unsigned sl__rcfollow_seed(const struct sl__rcfollow *f)
{
    return f != NULL ? f->seed : 0;
}

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

void sl__rcfollow_free(struct sl__rcfollow *f)
{
    if (f == NULL)
        return;
    give_up(f, false);
    sl__rlink_free(f->link); /* its NULL replies find nothing out */
    f->link = NULL;
    uv_close((uv_handle_t *)&f->tick, on_closed); /* the memory goes then */
}

/* ------------------------------------------------------------ blocking */

redisReply *sl__rcluster_run(const struct sl__rlink_conf *conf, const char *host, int port,
                             int64_t timeout_ms, const struct sl__rcmd *x)
{
    static const char *const asking[1] = {"ASKING"};
    static const size_t asking_len[1] = {6};
    char to[SL__CLUSTER_HOST_MAX > 256 ? SL__CLUSTER_HOST_MAX : 256];
    bool ask = false;
    char err[256];

    snprintf(to, sizeof(to), "%s", host);
    for (int hop = 0; hop < RUN_HOPS; hop++) {
        struct sl__rlink_sync *s =
            sl__rlink_sync_open(conf, to, port, timeout_ms, err, sizeof(err));
        redisReply *r = NULL;
        struct sl__credir d;
        enum sl__cerr e;

        if (s == NULL)
            return NULL;
        if (ask)
            freeReplyObject(
                sl__rlink_sync_argv(s, 1, (const char **)asking, asking_len, err, sizeof(err)));
        r = sl__rlink_sync_argv(s, x->argc, x->argv, x->lens, err, sizeof(err));
        sl__rlink_sync_close(s);
        e = sl__cluster_reply(r, to, &d);
        if (e != SL__CERR_MOVED && e != SL__CERR_ASK)
            return r;
        freeReplyObject(r);
        snprintf(to, sizeof(to), "%s", d.host);
        port = d.port;
        ask = e == SL__CERR_ASK;
    }
    return NULL;
}
