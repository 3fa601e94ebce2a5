/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * memory.c - the memory store: decisions in this process's state table,
 * through the shared limiter, completed before the start call returns. It is
 * the default store and the reference the remote stores must agree with.
 *
 * It does not queue, retry or time out: nothing here waits. No allocation
 * per request: results and matches live on the stack for the call.
 */
#include <stdlib.h>
#include <string.h>

#include "kind.h"

struct memory {
    struct sl__store base;
    sl_limiter *lim; /* shared by every worker; thread-safe */
    /* check_batch's items and results, reused (the store is one worker's) */
    struct sl_limiter_item items[SL__STORE_BATCH_MAX];
    struct sl_result res[SL__STORE_BATCH_MAX];
};

static sl_limiter *lim_of(struct sl__store *s)
{
    return ((struct memory *)(void *)s)->lim;
}

static int decide(struct sl__store *s, const struct sl__store_req *q, struct sl_result *res)
{
    if (q->rules != NULL)
        return sl_limiter_check(lim_of(s), q->rules, q->req, res);
    return sl_limiter_check_matched(lim_of(s), q->m, q->n, q->req, res);
}

static int check(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    struct sl_result res;
    int r = decide(s, q, &res);

    cb(arg, r, r == SL_OK ? &res : NULL, SL__BY_STATE);
    return SL_OK;
}

/* Every check through the limiter's batch path (the table memory of a
 * group fetched together), then the callbacks in order: the decisions are
 * those of check() one at a time. */
static void check_batch(struct sl__store *s, const struct sl__store_req *q, size_t n,
                        sl__store_cb cb, void *const *args)
{
    struct memory *m = (struct memory *)(void *)s;

    for (size_t i = 0; i < n; i++)
        m->items[i] =
            (struct sl_limiter_item){q[i].rules, q[i].m, q[i].n, q[i].req, &m->res[i], SL_OK};
    (void)sl_limiter_check_batch(m->lim, m->items, n);
    for (size_t i = 0; i < n; i++)
        cb(args[i], m->items[i].rc, m->items[i].rc == SL_OK ? &m->res[i] : NULL, SL__BY_STATE);
}

/* A cost-0 check: the limiter reports without creating or consuming. */
static int peek(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    const struct sl_request *req = q->req;
    struct sl_request zero = *req;
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl__store_req qz = *q;

    if (req->n_descriptors > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    for (size_t i = 0; i < req->n_descriptors; i++) {
        d[i] = req->descriptors[i];
        d[i].hits = 0;
    }
    zero.descriptors = d;
    zero.hits = 0;
    qz.req = &zero;
    return check(s, &qz, cb, arg);
}

/* Forget every limit of the matches, then report the fresh state. */
static int reset(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    struct sl_match m;
    int r = SL_OK;

    if (q->rules == NULL) {
        r = sl_limiter_reset(lim_of(s), q->m, q->n);
    } else {
        for (size_t i = 0; i < q->req->n_descriptors && (r == SL_OK || r == SL_ENOENT); i++) {
            r = sl_rules_match(q->rules, q->req, i, &m);
            if (r == SL_OK)
                r = sl_limiter_reset(lim_of(s), &m, 1);
        }
    }
    if (r != SL_OK && r != SL_ENOENT)
        return r;
    return peek(s, q, cb, arg);
}

static int release(struct sl__store *s, const struct sl__store_lease *rl, sl__store_cb cb,
                   void *arg)
{
    int r = sl_limiter_release_latency(lim_of(s), rl->lease, rl->len, rl->now_ns, rl->latency_ns);

    cb(arg, r, NULL, SL__BY_STATE);
    return SL_OK;
}

/* Always up: it decides in this process. */
static void health(const struct sl__store *s, struct sl__store_health *out)
{
    (void)s;
    out->state = SL__STORE_UP;
    out->why[0] = '\0';
}

static void destroy(struct sl__store *s)
{
    free(s);
}

static const struct sl__store_ops memory_ops = {
    .name = "memory",
    .check = check,
    .check_batch = check_batch,
    .peek = peek,
    .reset = reset,
    .release = release,
    .health = health,
    .free = destroy,
};

static int create(const void *cfg, const struct sl__store_env *env, struct sl__store **out)
{
    struct memory *m = calloc(1, sizeof(*m));

    (void)cfg;
    *out = NULL;
    if (m == NULL)
        return SL_ENOMEM;
    m->base.ops = &memory_ops;
    m->lim = env->lim;
    *out = &m->base;
    return SL_OK;
}

/* The memory store has no keys of its own: the table it decides in is the
 * server's (store.max_bytes, store.shards, store.on_full). */
const struct sl__store_kind sl__store_kind_memory = {
    .config = &sl__store_kind_memory_config,
    .create = create,
};
