/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sliding_log.c - the exact sliding log (docs/contracts.md §Algorithms), as
 * rolling-rate-limiter (interval, maxInInterval, minDifference): a request
 * of `cost` at `now` is admitted iff the log holds at most requests - cost
 * entries in the window (now - period, now] and, with min_interval_ns set,
 * the newest entry in that window is at least min_interval_ns old. A request
 * of cost c logs c entries at the same time; min_interval spaces requests,
 * not the entries of one request.
 *
 * State (struct sl__sg_state, lib/internal/sluice_state.h): an 8-byte header and a ring of
 * `requests` timestamps (8 bytes each), oldest first. The ring keeps the newest `requests` entries
 * only: when count_rejected logs more, the oldest are overwritten. That loses no decision: a window
 * holding more than `requests` entries is full either way, and every wait depends only on the
 * newest `requests` entries. `requests` must be <= l->log_cap (SL_LOG_CAP_DEFAULT 10,000) so one
 * key costs at most 8 + 8 * log_cap bytes.
 *
 * Deliberately does not: approximate (use sliding_window for O(1) memory),
 * read a clock, allocate, or use floating point.
 */
#include <string.h>

#include "algo/algo.h"
#include "sluice_sat.h"

static int64_t entry(const struct sl__sg_state *s, const struct sl_limit *l, uint64_t i)
{
    return s->ring[(s->head + i) % l->requests];
}

/* The log seen at `now`: the clamped time and the live entries, which are
 * the ring's entries first..len-1 (those newer than t - period). */
struct sg_view {
    int64_t t_ns;
    uint64_t first; /* index (from head) of the oldest live entry */
    uint64_t live;  /* live entries */
};

static bool is_live(int64_t e_ns, int64_t t_ns, const struct sl_limit *l)
{
    return (__int128)e_ns + l->period_ns > t_ns;
}

static void view(const struct sl__sg_state *s, const struct sl_limit *l, int64_t now_ns,
                 struct sg_view *v)
{
    uint64_t lo = 0, hi = s->len;

    v->t_ns = s->len > 0 ? sl__max64(now_ns, entry(s, l, s->len - 1)) : now_ns;
    while (lo < hi) { /* first live entry; entries are sorted */
        uint64_t mid = lo + (hi - lo) / 2;
        if (is_live(entry(s, l, mid), v->t_ns, l))
            hi = mid;
        else
            lo = mid + 1;
    }
    v->first = lo;
    v->live = s->len - lo;
}

/* The newest live request blocks others for min(min_interval, period) after
 * it: once it leaves the window no entry is left to space from. */
static int64_t spacing_wait_ns(const struct sl__sg_state *s, const struct sl_limit *l,
                               const struct sg_view *v)
{
    __int128 until;

    if (l->min_interval_ns == 0 || v->live == 0)
        return 0;
    until = (__int128)entry(s, l, s->len - 1) + sl__min64(l->min_interval_ns, l->period_ns);
    return until > v->t_ns ? (int64_t)(until - v->t_ns) : 0;
}

/* Until the newest entry has left the window; 0 with none live. */
static int64_t reset_ns(const struct sl__sg_state *s, const struct sl_limit *l,
                        const struct sg_view *v)
{
    if (v->live == 0)
        return 0;
    return (int64_t)((__int128)entry(s, l, s->len - 1) + l->period_ns - v->t_ns);
}

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct sl__sg_state) + sizeof(int64_t) * (size_t)l->requests;
}

static int validate(const struct sl_limit *l, const char **why)
{
    if (l->requests > l->log_cap) {
        *why = "sliding_log: requests must be at most log_cap (default 10000), since it logs "
               "one timestamp per request; use sliding_window for larger limits";
        return SL_EINVAL;
    }
    return SL_OK;
}

static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl__sg_state *s = st;

    (void)l;
    (void)now_ns;
    s->head = 0;
    s->len = 0;
}

/* Fills every field of `d` for `cost` at `now` (clamped to the newest
 * entry) without changing the state. remaining is 0 while min_interval
 * blocks (no request of any cost is admissible now), so it is 0 after every
 * admitted request when min_interval_ns > 0. */
static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    const struct sl__sg_state *s = st;
    struct sg_view v;
    uint64_t free_n, wait_n;
    int64_t spacing;

    view(s, l, now_ns, &v);
    free_n = l->requests - v.live;
    spacing = spacing_wait_ns(s, l, &v);
    memset(d, 0, sizeof(*d));
    d->quota = sl_limit_quota(l);
    if (cost == 0 || (cost <= free_n && spacing == 0)) {
        d->verdict = SL_ALLOW;
        if (cost == 0) {
            d->remaining = spacing > 0 ? 0 : sl__sat_i64(free_n);
            d->reset_ns = reset_ns(s, l, &v);
        } else {
            d->remaining = l->min_interval_ns > 0 ? 0 : sl__sat_i64(free_n - cost);
            d->reset_ns = l->period_ns;
        }
        return;
    }
    d->verdict = SL_DENY;
    d->remaining = spacing > 0 ? 0 : sl__sat_i64(free_n);
    d->reset_ns = reset_ns(s, l, &v);
    if (cost > l->requests) {
        d->retry_after_ns = -1;
        return;
    }
    /* Enough entries must leave that live <= requests - cost: the one at
     * position live - (requests - cost) - 1 from the oldest live is last. */
    d->retry_after_ns = spacing;
    if (v.live > l->requests - cost) {
        wait_n = v.live - (l->requests - cost) - 1;
        d->retry_after_ns = sl__max64(
            spacing, (int64_t)((__int128)entry(s, l, v.first + wait_n) + l->period_ns - v.t_ns));
    }
}

/* Appends min(cost, requests) entries at the clamped `now`, dropping expired
 * and, past the ring's size, the oldest entries. For a denial counted
 * because of count_rejected, remaining/reset/retry_after in `d` are
 * refreshed to describe the log with the rejected request in it. */
static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct sl__sg_state *s = st;
    struct sg_view v;
    struct sl_decision after;
    uint64_t n = cost < l->requests ? cost : l->requests;

    view(s, l, now_ns, &v);
    s->head = (uint32_t)((s->head + v.first) % l->requests);
    s->len = (uint32_t)v.live;
    for (uint64_t i = 0; i < n; i++) {
        if (s->len == l->requests) {
            s->ring[s->head] = v.t_ns;
            s->head = (uint32_t)((s->head + 1) % l->requests);
        } else {
            s->ring[(s->head + s->len) % l->requests] = v.t_ns;
            s->len++;
        }
    }
    if (d->verdict == SL_DENY) {
        check(s, l, now_ns, cost, &after);
        d->remaining = after.remaining;
        d->reset_ns = after.reset_ns;
        d->retry_after_ns = after.retry_after_ns;
    }
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct sl__sg_state *s = st;
    __int128 end;

    if (s->len == 0)
        return INT64_MIN;
    end = (__int128)entry(s, l, s->len - 1) + l->period_ns;
    return end > INT64_MAX ? INT64_MAX : (int64_t)end;
}

/* Remove min(cost, requests) entries logged at or after `now` (the check
 * logged them at `now`, or at the newest entry's time when the caller's
 * clock was behind it), the oldest of those first; the ring is compacted in
 * place, oldest entry back at `head`. */
static bool refund(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost)
{
    struct sl__sg_state *s = st;
    uint64_t take = cost < l->requests ? cost : l->requests, kept = 0;

    for (uint64_t i = 0; i < s->len; i++) {
        int64_t e = entry(s, l, i);
        if (take > 0 && e >= now_ns) {
            take--;
            continue;
        }
        s->ring[(s->head + kept++) % l->requests] = e;
    }
    s->len = (uint32_t)kept;
    return true;
}

/* Out of quota: a peek leaves no request (the general answer; this
 * algorithm's check is cheap enough and rarely asked). */
static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl_decision d;

    check(st, l, now_ns, 0, &d);
    return d.remaining == 0;
}

/* The entries logged (live or not: more is more restrictive). */
static bool fold(const void *st, size_t bytes, uint64_t *amount)
{
    const struct sl__sg_state *s = st;

    (void)bytes;
    *amount = s->len;
    return true;
}

/* `amount` entries (at most the ring) all at the newest time a folded state
 * can have logged, `until` - period (no later than now): each folded entry
 * was logged no later, so leaves the window no later, and spaces no less. */
static void restore(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount)
{
    struct sl__sg_state *s = st;
    int64_t at = sl__min64(sl__sat_sub(until_ns, l->period_ns), now_ns);
    uint64_t n = amount < l->requests ? amount : l->requests;

    s->head = 0;
    s->len = (uint32_t)n;
    for (uint64_t i = 0; i < n; i++)
        s->ring[i] = at;
}

const struct sl__algo_ops sl__algo_sliding_log = {
    .name = "sliding_log",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .denying = denying,
    .release = NULL,
    .fold = fold,
    .restore = restore,
    .refund = refund,
};
