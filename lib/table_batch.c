/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table_batch.c - sl_table_check_batch: many checks with their memory
 * fetched in parallel. Over a table larger than the caches each check waits
 * for two dependent misses (index slot, then entry); one check at a time the
 * CPU cannot overlap them with the next check's (the shard lock's atomic
 * exchange is a full barrier). Here a group of keys is hashed and their
 * index slots prefetched together (no lock: sl__table_prefetch_slot), then,
 * in a table larger than the caches, each slot is read under its shard's
 * lock to prefetch its entry, and only then are the checks made, in order,
 * exactly as sl_table_check makes them.
 *
 * It does not change any decision or its order (the same key twice in a
 * batch is checked twice, in order), reorder locks, or hold more than one
 * lock at a time. Allocates nothing.
 */
#include "algo/algo.h"
#include "table.h"

/* Keys in flight at once: enough misses to cover the memory latency
 * (~200 ns here against ~25 ns per overlapped miss), few enough that the
 * prefetched lines are still in L1/L2 when used. */
#define GROUP 16u

/* SL_OK if item `it` can go through the hashed fast path; else the result
 * sl_table_check gives for it (peeks go through sl_table_peek). */
static int item_ok(const struct sl_table_item *it)
{
    if ((it->key == NULL && it->key_len > 0) || it->limit == NULL ||
        sl__algo_ops(it->limit->algo) == NULL)
        return SL_EINVAL;
    if (it->key_len > SL_KEY_MAX)
        return SL_ETOOBIG;
    return SL_OK;
}

static void check_group(sl_table *t, struct sl_table_item *it, size_t n)
{
    struct sl__fp fp[GROUP];
    int ok[GROUP];
    bool large = false;

    for (size_t i = 0; i < n; i++) {
        ok[i] = item_ok(&it[i]);
        if (ok[i] != SL_OK || it[i].cost == 0)
            continue;
        sl__table_hash(t, it[i].key, it[i].key_len, &fp[i]);
        large |= sl__table_prefetch_slot(t, &fp[i]);
    }
    /* In a table that fits the caches the extra lock costs more than the
     * entry's miss it would hide. */
    for (size_t i = 0; large && i < n; i++)
        if (ok[i] == SL_OK && it[i].cost > 0)
            sl__table_prefetch_entry(t, &fp[i]);
    for (size_t i = 0; i < n; i++) {
        if (ok[i] != SL_OK)
            it[i].rc = ok[i];
        else if (it[i].cost == 0)
            it[i].rc = sl_table_peek(t, it[i].key, it[i].key_len, it[i].limit, it[i].now_ns,
                                     &it[i].decision);
        else
            it[i].rc = sl__table_check_fp(t, &fp[i], it[i].limit, it[i].now_ns, it[i].cost,
                                          &it[i].decision);
    }
}

int sl_table_check_batch(sl_table *t, struct sl_table_item *items, size_t n)
{
    if (t == NULL || (items == NULL && n > 0))
        return SL_EINVAL;
    for (size_t i = 0; i < n; i += GROUP)
        check_group(t, items + i, n - i < GROUP ? n - i : GROUP);
    return SL_OK;
}
