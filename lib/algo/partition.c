/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * partition.c - a concurrency limit divided among priority classes
 * (include/sluice_adaptive.h, docs/algorithms.md §Partitions), after
 * Netflix's partitioned limiter: class k is guaranteed
 * floor(limit x share_k / 100) slots and may borrow whatever else is free.
 * A request of class k is admitted iff
 *
 *     inflight_k < guaranteed_k   or   inflight_total < limit
 *     or  above_k < below_k
 *
 * where above_k is what classes 0..k hold beyond their shares and below_k
 * what the classes less critical than k hold beyond theirs. So a class
 * within its share is never shed, whatever the others do; once the limit
 * is reached a class may still take back, slot for slot, what less
 * critical classes borrowed (each borrowed slot once), so the least
 * critical are shed first. The price: the total may go above the limit
 * while borrowed slots drain (the shares, plus at most twice what was
 * borrowed: under 3 x the limit, transiently), and nothing is borrowed
 * again until the total is back under it.
 *
 * Deliberately does not: know where the limit comes from (any number, e.g.
 * sl_adaptive_limit()), queue, allocate, lock, or use floating point.
 */
#include <string.h>

#include "sluice_adaptive.h"

void sl_partition_config_init(struct sl_partition_config *c)
{
    memset(c, 0, sizeof(*c));
    c->n = 3;
    c->share_pct[0] = 50;
    c->share_pct[1] = 35;
    c->share_pct[2] = 15;
}

int sl_partition_config_validate(const struct sl_partition_config *c, const char **why)
{
    uint32_t sum = 0;
    const char *msg = NULL;

    if (c->n < 1 || c->n > SL_PARTITION_MAX)
        msg = "partitions: there must be from 1 to 8 classes";
    for (uint32_t k = 0; msg == NULL && k < c->n; k++) {
        if (c->share_pct[k] > 100)
            msg = "partitions: a class's share is a percentage from 0 to 100";
        else
            sum += c->share_pct[k];
    }
    if (msg == NULL && sum > 100)
        msg = "partitions: the classes' shares must add up to at most 100 percent";
    if (msg == NULL)
        return SL_OK;
    if (why != NULL)
        *why = msg;
    return SL_EINVAL;
}

int sl_partition_init(struct sl_partition *p, const struct sl_partition_config *c, const char **why)
{
    int rc = sl_partition_config_validate(c, why);

    if (rc != SL_OK)
        return rc;
    memset(p, 0, sizeof(*p));
    p->cfg = *c;
    return SL_OK;
}

uint32_t sl_partition_guaranteed(const struct sl_partition *p, uint32_t cls, uint32_t limit)
{
    if (cls >= p->cfg.n)
        return 0;
    return (uint32_t)((uint64_t)limit * p->cfg.share_pct[cls] / 100);
}

/* May class `cls`, at or beyond its share, take back a slot a less
 * critical class borrowed? While the classes less critical than it hold
 * more beyond their shares than it and the more critical ones hold beyond
 * theirs (a slot borrowed is taken back once, not once per class above). */
static bool may_take_back(const struct sl_partition *p, uint32_t cls, uint32_t limit)
{
    uint64_t above = 0, below = 0;

    for (uint32_t j = 0; j < p->cfg.n; j++) {
        uint32_t g = sl_partition_guaranteed(p, j, limit);
        uint64_t e = p->cls[j].inflight > g ? p->cls[j].inflight - g : 0;
        if (j <= cls)
            above += e;
        else
            below += e;
    }
    return above < below;
}

bool sl_partition_try_acquire(struct sl_partition *p, uint32_t cls, uint32_t limit)
{
    struct sl_partition_class *c;
    uint32_t g;

    if (cls >= p->cfg.n)
        return false;
    c = &p->cls[cls];
    g = sl_partition_guaranteed(p, cls, limit);
    /* within its share; or a free slot; or one a less critical class
     * borrowed, taken back (as many as they hold beyond their shares) */
    if (c->inflight < g || p->inflight < limit || may_take_back(p, cls, limit)) {
        c->inflight++;
        c->admitted++;
        p->inflight++;
        return true;
    }
    c->shed++;
    return false;
}

int sl_partition_release(struct sl_partition *p, uint32_t cls)
{
    if (cls >= p->cfg.n || p->cls[cls].inflight == 0)
        return SL_ENOENT;
    p->cls[cls].inflight--;
    p->inflight--;
    return SL_OK;
}
