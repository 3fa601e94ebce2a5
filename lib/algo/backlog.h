/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * backlog.h - the exact fixed-point core the bucket algorithms share
 * (internal): token_bucket without warm-up (the deficit), gcra (TAT - now)
 * and leaky_bucket (the water) are all one quantity, a backlog that drains
 * at a constant rate, and a request of cost c is admitted iff backlog + c
 * requests fits the limit's capacity.
 *
 * Units: 1/requests ns of drain time, so one request is exactly period_ns
 * units whatever the ratio, and a ns drains `requests` units. Values are
 * 128-bit: a capacity is at most 2^63 * 2^64, a cost at most 2^64 * 2^63.
 * The stored backlog saturates at INT64_MAX ns of drain, or at the capacity
 * if that is larger, so an admission is never clipped and nothing wraps.
 *
 * It does not know what the capacity means (each algorithm passes its own)
 * or anything about delays or warm-up.
 */
#ifndef SL_ALGO_BACKLOG_H
#define SL_ALGO_BACKLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "sluice.h"
#include "sluice_sat.h"
#include "sluice_state.h" /* struct sl__backlog: the last time recorded and the backlog then */

/* v / by, rounded up if `up`; a 64-bit division when v fits (the usual
 * case: a 128-bit division is several times slower). */
static inline unsigned __int128 sl__div_u128(unsigned __int128 v, uint64_t by, bool up)
{
    unsigned __int128 q;
    bool rem;

    if ((v >> 64) == 0) {
        q = (uint64_t)v / by;
        rem = (uint64_t)v % by != 0;
    } else {
        q = v / by;
        rem = v % by != 0;
    }
    return q + (up && rem);
}

static inline int64_t sl__u128_to_i64(unsigned __int128 v)
{
    return v > (unsigned __int128)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* `n` requests in backlog units (n * period_ns; < 2^127 for n < 2^64). */
static inline unsigned __int128 sl__backlog_requests(const struct sl_limit *l, unsigned __int128 n)
{
    return n * (uint64_t)l->period_ns;
}

/* Backlog units as ns, rounded up, saturated at INT64_MAX. */
static inline int64_t sl__backlog_ns(const struct sl_limit *l, unsigned __int128 v)
{
    return sl__u128_to_i64(sl__div_u128(v, l->requests, true));
}

static inline void sl__backlog_init(struct sl__backlog *b, int64_t now_ns)
{
    memset(b, 0, sizeof(*b));
    b->last_ns = now_ns;
}

static inline unsigned __int128 sl__backlog_get(const struct sl__backlog *b)
{
    return ((unsigned __int128)b->hi << 64) | b->lo;
}

/* The backlog left at `now`, `now` clamped to the last time recorded. */
static inline unsigned __int128 sl__backlog_at(const struct sl__backlog *b,
                                               const struct sl_limit *l, int64_t now_ns)
{
    unsigned __int128 v = sl__backlog_get(b);
    uint64_t elapsed = now_ns > b->last_ns ? (uint64_t)now_ns - (uint64_t)b->last_ns : 0;
    unsigned __int128 drained = (unsigned __int128)elapsed * l->requests;

    return drained >= v ? 0 : v - drained;
}

/*
 * Decide `cost` against `capacity` (backlog units) at `now` without changing
 * `b`: verdict ALLOW or DENY, remaining (cost-1 requests that still fit),
 * reset (until the backlog is 0), retry_after (0, -1 when the cost alone
 * exceeds the capacity, else until it fits). Cost 0 peeks. Returns the
 * backlog the decision leaves (unchanged for a peek or a denial).
 */
static inline unsigned __int128 sl__backlog_check(const struct sl__backlog *b,
                                                  const struct sl_limit *l, int64_t now_ns,
                                                  uint64_t cost, unsigned __int128 capacity,
                                                  struct sl_decision *d)
{
    unsigned __int128 v = sl__backlog_at(b, l, now_ns);
    unsigned __int128 add = sl__backlog_requests(l, cost);
    unsigned __int128 next = v + add; /* < 2^128: both < 2^127 */
    bool admit = cost == 0 || next <= capacity;
    unsigned __int128 left = admit && cost != 0 ? next : v;

    memset(d, 0, sizeof(*d));
    d->verdict = admit ? SL_ALLOW : SL_DENY;
    d->quota = sl_limit_quota(l);
    d->remaining =
        left >= capacity
            ? 0
            : sl__u128_to_i64(sl__div_u128(capacity - left, (uint64_t)l->period_ns, false));
    d->reset_ns = sl__backlog_ns(l, left);
    if (!admit)
        d->retry_after_ns = add > capacity ? -1 : sl__backlog_ns(l, next - capacity);
    return left;
}

/* Record `cost` at `now` (an admission, or a denial counted because of
 * count_rejected), saturating as the file comment says. */
static inline void sl__backlog_add(struct sl__backlog *b, const struct sl_limit *l, int64_t now_ns,
                                   uint64_t cost, unsigned __int128 capacity)
{
    unsigned __int128 v = sl__backlog_at(b, l, now_ns) + sl__backlog_requests(l, cost);
    unsigned __int128 max = (unsigned __int128)INT64_MAX * l->requests;

    if (max < capacity)
        max = capacity;
    if (v > max)
        v = max;
    b->lo = (uint64_t)v;
    b->hi = (uint64_t)(v >> 64);
    b->last_ns = sl__max64(b->last_ns, now_ns);
}

/* After a counted denial: report the state with it recorded (`after` is a
 * check() of the same cost on the updated state), so that waiting
 * retry_after is enough. */
static inline void sl__backlog_refresh(struct sl_decision *d, const struct sl_decision *after)
{
    d->remaining = after->remaining;
    d->reset_ns = after->reset_ns;
    d->retry_after_ns = after->retry_after_ns;
}

/* commit() of a backlog algorithm: record `cost` and, for a denial counted
 * because of count_rejected, refresh `d` to the state with it recorded
 * (the delay, if any, is irrelevant to a denial). */
static inline void sl__backlog_commit(struct sl__backlog *b, const struct sl_limit *l,
                                      int64_t now_ns, uint64_t cost, unsigned __int128 capacity,
                                      struct sl_decision *d)
{
    struct sl_decision after;

    sl__backlog_add(b, l, now_ns, cost, capacity);
    if (d->verdict == SL_DENY) {
        sl__backlog_check(b, l, now_ns, cost, capacity, &after);
        sl__backlog_refresh(d, &after);
    }
}

/* Lower the backlog by `cost` requests, not below 0; the time is kept (a
 * refund, see sluice_state.h). */
static inline void sl__backlog_refund(struct sl__backlog *b, const struct sl_limit *l,
                                      uint64_t cost)
{
    unsigned __int128 v = sl__backlog_get(b), back = sl__backlog_requests(l, cost);

    v = back >= v ? 0 : v - back;
    b->lo = (uint64_t)v;
    b->hi = (uint64_t)(v >> 64);
}

/* Out of quota at `now`: not even one request fits the capacity (exactly
 * when sl__backlog_check() would report remaining 0). */
static inline bool sl__backlog_denying(const struct sl__backlog *b, const struct sl_limit *l,
                                       int64_t now_ns, unsigned __int128 capacity)
{
    return sl__backlog_at(b, l, now_ns) + sl__backlog_requests(l, 1) > capacity;
}

/* When the backlog is 0: from then on the state equals a fresh one. */
static inline int64_t sl__backlog_whole_at(const struct sl__backlog *b, const struct sl_limit *l)
{
    return sl__sat_add(b->last_ns, sl__backlog_ns(l, sl__backlog_get(b)));
}

/* The summary's restore for a backlog (see algo.h): the backlog that drains
 * exactly at `until` (> now), which is what every backlog whole then was at
 * most. */
static inline void sl__backlog_restore(struct sl__backlog *b, const struct sl_limit *l,
                                       int64_t now_ns, int64_t until_ns)
{
    unsigned __int128 v = (unsigned __int128)((uint64_t)until_ns - (uint64_t)now_ns) * l->requests;

    b->last_ns = now_ns;
    b->lo = (uint64_t)v;
    b->hi = (uint64_t)(v >> 64);
}

/* The summary's fold for a backlog: its whole_at says it all. */
static inline bool sl__backlog_fold(const void *st, size_t bytes, uint64_t *amount)
{
    (void)st;
    (void)bytes;
    *amount = 0;
    return true;
}

#endif /* SL_ALGO_BACKLOG_H */
