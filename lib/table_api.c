/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table_api.c - the public per-key calls of the state table other than the
 * hot path (sl_table_check lives in table.c, beside the layout, so that it
 * inlines): peek, reset and release, each hashing the key and locking one
 * shard.
 *
 * It does not know the table's layout (table.c does) and does not combine
 * limits (the limiter does). No allocation per call, except creating an
 * out-of-line state (and, once per shard, the scratch buffer in which a peek
 * at an absent key builds a fresh state too large for the stack).
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "table.h"

/* Fresh states up to this size are built on the stack for a peek. */
#define FRESH_STACK_BYTES 2048

int sl__fresh_check(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l, int64_t now_ns,
                    uint64_t cost, struct sl_decision *d)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);
    uint64_t buf[FRESH_STACK_BYTES / sizeof(uint64_t)];
    size_t size = ops->state_size(l);
    void *st = buf, *heap = NULL;

    if (size > sizeof(buf)) {
        st = sl__table_scratch(t, sl__table_shard(t, fp), size);
        if (st == NULL)
            st = heap = malloc(size);
        if (st == NULL)
            return SL_ENOMEM;
    }
    ops->init(st, l, now_ns);
    sl__table_restore_fresh(t, fp, l, st, now_ns);
    ops->check(st, l, now_ns, cost, d);
    free(heap);
    return SL_OK;
}

static int check_args(const sl_table *t, const void *key, size_t key_len, const struct sl_limit *l)
{
    if (t == NULL || (key == NULL && key_len > 0) || l == NULL || sl__algo_ops(l->algo) == NULL)
        return SL_EINVAL;
    if (key_len > SL_KEY_MAX)
        return SL_ETOOBIG;
    return SL_OK;
}

int sl_table_peek(sl_table *t, const void *key, size_t key_len, const struct sl_limit *l,
                  int64_t now_ns, struct sl_decision *d)
{
    struct sl__fp fp;
    struct sl__ref ref;
    int rc = check_args(t, key, key_len, l);

    if (rc != SL_OK)
        return rc;
    sl__table_hash(t, key, key_len, &fp);
    unsigned shard = sl__table_shard(t, &fp);
    sl__table_lock(t, shard);
    rc = sl__table_get(t, &fp, l, now_ns, 0, &ref);
    if (rc == SL_OK)
        sl__algo_ops(l->algo)->check(ref.state, l, now_ns, 0, d);
    else if (rc == SL_ENOENT)
        rc = sl__fresh_check(t, &fp, l, now_ns, 0, d);
    sl__table_unlock(t, shard);
    return rc;
}

int sl_table_reset(sl_table *t, const void *key, size_t key_len)
{
    struct sl__fp fp;
    struct sl__ref ref;
    int rc;

    if (t == NULL || (key == NULL && key_len > 0))
        return SL_EINVAL;
    if (key_len > SL_KEY_MAX)
        return SL_ETOOBIG;
    sl__table_hash(t, key, key_len, &fp);
    sl__table_lock(t, sl__table_shard(t, &fp));
    rc = sl__table_find(t, &fp, &ref);
    if (rc == SL_OK)
        sl__table_remove(t, &ref);
    sl__table_unlock(t, sl__table_shard(t, &fp));
    return rc;
}

int sl_table_release(sl_table *t, const void *key, size_t key_len, const struct sl_limit *l,
                     int64_t now_ns, uint64_t lease)
{
    const struct sl__algo_ops *ops;
    struct sl__fp fp;
    struct sl__ref ref;
    int rc = check_args(t, key, key_len, l);

    if (rc != SL_OK)
        return rc;
    ops = sl__algo_ops(l->algo);
    if (ops->release == NULL)
        return SL_EINVAL;
    sl__table_hash(t, key, key_len, &fp);
    sl__table_lock(t, sl__table_shard(t, &fp));
    rc = sl__table_get(t, &fp, l, now_ns, 0, &ref);
    if (rc == SL_OK) {
        rc = ops->release(ref.state, l, now_ns, lease, -1);
        sl__table_put(t, &ref, l, now_ns, false);
    }
    sl__table_unlock(t, sl__table_shard(t, &fp));
    return rc;
}
