/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * leaky_bucket.c - nginx limit_req (docs/contracts.md §Algorithms): a bucket that leaks
 * `requests` per `period`; a request adds its cost; 1 + burst requests pass
 * at one instant; a request whose excess (water above the one request being
 * served) is above `delay` is admitted but must wait (excess - delay) / rate;
 * one that would overflow burst + 1 is denied and not counted.
 *
 * nginx keeps excess in 1/1000 requests and time in ms, truncating the leak
 * at each request; here the water is a backlog (backlog.h), exact in units of
 * 1/requests ns of drain time, and durations are reported rounded up to whole
 * ns. So decisions match nginx whenever nginx's own arithmetic is exact, and
 * are finer otherwise.
 *
 * It does not read a clock, allocate, or hold a request for its delay (the
 * caller does). A denial counted because of count_rejected adds its cost to
 * the water as an admission would (so it leaks out like one), and its
 * decision then describes the state with it recorded.
 */
#include "algo/algo.h"
#include "algo/backlog.h"

static uint64_t burst_of(const struct sl_limit *l)
{
    return l->burst < 0 ? 0 : (uint64_t)l->burst;
}

/* What the bucket holds: burst + 1 requests. */
static unsigned __int128 capacity_of(const struct sl_limit *l)
{
    return sl__backlog_requests(l, (unsigned __int128)burst_of(l) + 1);
}

/* Water up to which nothing waits: the request served plus `delay` of
 * excess (nodelay: all of the burst). */
static unsigned __int128 undelayed_of(const struct sl_limit *l)
{
    uint64_t delay = l->nodelay ? burst_of(l) : (uint64_t)l->delay;
    return sl__backlog_requests(l, (unsigned __int128)delay + 1);
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
    if (l->min_interval_ns != 0 || l->lease_ns != 0) {
        *why = "min_interval and lease do not apply to leaky_bucket";
        return SL_EINVAL;
    }
    if (l->nodelay && l->delay != 0) {
        *why = "nodelay and delay cannot be combined: nodelay means delay = burst";
        return SL_EINVAL;
    }
    if ((uint64_t)l->delay > burst_of(l)) {
        *why = "delay must not exceed burst";
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
    unsigned __int128 water = sl__backlog_check(st, l, now_ns, cost, capacity_of(l), d);
    unsigned __int128 undelayed = undelayed_of(l);

    if (cost != 0 && d->verdict == SL_ALLOW && water > undelayed) {
        d->verdict = SL_DELAY;
        d->delay_ns = sl__backlog_ns(l, water - undelayed);
    }
}

static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    sl__backlog_commit(st, l, now_ns, cost, capacity_of(l), d);
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
    return sl__backlog_denying(st, l, now_ns, capacity_of(l));
}

/* Policing and shaping alike: the water that drains at `until`. */
static void restore(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount)
{
    (void)amount;
    sl__backlog_restore(st, l, now_ns, until_ns);
}

const struct sl__algo_ops sl__algo_leaky_bucket = {
    .name = "leaky_bucket",
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
