/*
 * concurrency.c - the concurrency algorithm (placeholder ops table).
 *
 * Does: provides a complete ops table so the library links; admits everything.
 * Does not: limit anything yet; the exact implementation replaces this file.
 */
#include <string.h>

#include "algo/algo.h"

static size_t state_size(const struct sl_limit *l)
{
    (void)l;
    return 8;
}

static int validate(const struct sl_limit *l, const char **why)
{
    (void)l;
    (void)why;
    return SL_OK;
}

static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    (void)l;
    (void)now_ns;
    memset(st, 0, 8);
}

static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    (void)st;
    (void)now_ns;
    (void)cost;
    memset(d, 0, sizeof(*d));
    d->verdict = SL_ALLOW;
    d->quota = sl_limit_quota(l);
    d->remaining = d->quota;
}

static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    (void)st;
    (void)l;
    (void)now_ns;
    (void)cost;
    (void)d;
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    (void)st;
    (void)l;
    return INT64_MIN;
}

static int release_(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t lease)
{
    (void)st;
    (void)l;
    (void)now_ns;
    (void)lease;
    return SL_ENOENT;
}

const struct sl__algo_ops sl__algo_concurrency = {
    .name = "concurrency",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .release = release_,
};
