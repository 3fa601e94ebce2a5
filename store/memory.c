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

#include "store.h"

struct memory {
    struct sl__store base;
    sl_limiter *lim; /* shared by every worker; thread-safe */
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

    cb(arg, r, r == SL_OK ? &res : NULL);
    return SL_OK;
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

/* The state key of one limit of one match: the matched key followed by the
 * limit's id, little-endian - the limiter's scheme (lib/limiter.c). */
static size_t state_key(const struct sl_match *m, const struct sl_limit *l, char *buf)
{
    memcpy(buf, m->key, m->key_len);
    for (int k = 0; k < 8; k++)
        buf[m->key_len + k] = (char)(l->id >> (8 * k));
    return m->key_len + 8;
}

static int reset_match(sl_table *t, const struct sl_match *m)
{
    char buf[SL_KEY_MAX + 8];

    if (m->key_len > SL_KEY_MAX)
        return SL_ETOOBIG;
    for (size_t j = 0; j < m->n_limits; j++) {
        int r = sl_table_reset(t, buf, state_key(m, m->limits[j], buf));
        if (r != SL_OK && r != SL_ENOENT)
            return r;
    }
    return SL_OK;
}

static int reset(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    sl_table *t = sl_limiter_table(lim_of(s));
    struct sl_match m;
    int r = SL_OK;

    if (q->rules == NULL) {
        for (size_t i = 0; i < q->n && r == SL_OK; i++)
            r = reset_match(t, &q->m[i]);
    } else {
        for (size_t i = 0; i < q->req->n_descriptors && r == SL_OK; i++) {
            r = sl_rules_match(q->rules, q->req, i, &m);
            if (r == SL_OK)
                r = reset_match(t, &m);
        }
    }
    if (r != SL_OK)
        return r;
    return peek(s, q, cb, arg);
}

static int release(struct sl__store *s, const char *lease, size_t len, int64_t now_ns,
                   sl__store_cb cb, void *arg)
{
    int r = sl_limiter_release(lim_of(s), lease, len, now_ns);

    cb(arg, r, NULL);
    return SL_OK;
}

static void destroy(struct sl__store *s)
{
    free(s);
}

static const struct sl__store_ops memory_ops = {
    .name = "memory",
    .check = check,
    .peek = peek,
    .reset = reset,
    .release = release,
    .free = destroy,
};

int sl__store_memory_new(sl_limiter *lim, struct sl__store **out)
{
    struct memory *m = calloc(1, sizeof(*m));

    *out = NULL;
    if (m == NULL)
        return SL_ENOMEM;
    m->base.ops = &memory_ops;
    m->lim = lim;
    *out = &m->base;
    return SL_OK;
}
