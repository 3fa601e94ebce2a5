/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * gcra.c - the generic cell rate algorithm, with redis-cell's CL.THROTTLE
 * semantics (docs/contracts.md §Algorithms): emission interval T = period / requests, delay
 * variation tolerance DVT = T * (burst + 1), limit = burst + 1. A request of
 * cost c moves the theoretical arrival time to TAT' = max(TAT, now) + c * T
 * and is admitted iff TAT' - DVT <= now.
 *
 * The state is TAT - now as a backlog (backlog.h): exact in units of
 * 1/requests ns, so T = period_ns units with no rounding, and the
 * admission test is backlog + c * T <= DVT.
 *
 * It does not read a clock, allocate, or know about keys; it does not map
 * durations to redis-cell's seconds or its -1 "allowed" retry (the RESP layer
 * does). A denial counted because of count_rejected pushes the TAT forward
 * exactly as an admission of the same cost would, and its decision then
 * describes the state with it recorded (so retry_after is honest).
 */
#include "algo/algo.h"
#include "algo/backlog.h"

/* DVT = T * (burst + 1) in backlog units. */
static unsigned __int128 dvt_of(const struct sl_limit *l)
{
    uint64_t burst = l->burst < 0 ? 0 : (uint64_t)l->burst;
    return sl__backlog_requests(l, (unsigned __int128)burst + 1);
}

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct sl__backlog);
}

static int validate(const struct sl_limit *l, const char **why)
{
    if (l->warmup_ns != 0) {
        *why = "warmup applies only to token_bucket";
        return SL_EINVAL;
    }
    if (l->delay != 0 || l->nodelay) {
        *why = "delay and nodelay apply only to leaky_bucket";
        return SL_EINVAL;
    }
    if (l->min_interval_ns != 0 || l->lease_ns != 0) {
        *why = "min_interval and lease do not apply to gcra";
        return SL_EINVAL;
    }
    return SL_OK;
}

static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    sl__backlog_init(st, now_ns);
}

static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    sl__backlog_check(st, l, now_ns, cost, dvt_of(l), d);
}

static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    sl__backlog_commit(st, l, now_ns, cost, dvt_of(l), d);
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    return sl__backlog_whole_at(st, l);
}

static bool refund(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost)
{
    (void)now_ns;
    sl__backlog_refund(st, l, cost);
    return true;
}

static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    return sl__backlog_denying(st, l, now_ns, dvt_of(l));
}

static void restore(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount)
{
    (void)amount;
    sl__backlog_restore(st, l, now_ns, until_ns);
}

const struct sl__algo_ops sl__algo_gcra = {
    .name = "gcra",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .denying = denying,
    .release = NULL,
    .fold = sl__backlog_fold,
    .restore = restore,
    .refund = refund,
};
