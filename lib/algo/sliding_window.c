/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sliding_window.c - Cloudflare's sliding window counter (docs/contracts.md §Algorithms):
 * two epoch-aligned fixed windows, the previous one weighted by how much of
 * it still overlaps the sliding window ending now.
 *
 * With P the period, e the time elapsed in the current window (0 <= e < P),
 * prev and cur the two counts, a request of `cost` is admitted iff
 *
 *     prev * (P - e) + (cur + cost) * P <= requests * P
 *
 * i.e. estimate + cost <= requests with estimate = prev * (P - e) / P + cur
 * compared exactly, in 128-bit integers, with no rounding at all.
 * retry_after is the exact smallest wait in nanoseconds: the previous
 * window's weight decays by one unit per nanosecond, so the wait is solved
 * for in closed form, within this window or across into the next ones.
 *
 * State (24 bytes, inline): time of the last recorded request, the count of
 * its window and the count of the window before it.
 *
 * Deliberately does not: keep timestamps (use sliding_log for exactness),
 * read a clock, allocate, or use floating point. Counts saturate at 2^64 - 1.
 */
#include <string.h>

#include "algo/algo.h"
#include "sluice_sat.h"

struct sw_state {
    int64_t last_ns; /* time of the last recorded request; INT64_MIN: none */
    uint64_t cur;    /* requests recorded in last_ns's window */
    uint64_t prev;   /* requests recorded in the window before it */
};

_Static_assert(sizeof(struct sw_state) <= SL__STATE_INLINE, "sliding_window state must be inline");

typedef unsigned __int128 u128;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

/* The state seen at `now`: clamped time, elapsed time in its window and the
 * two counts as they stand in that window. */
struct sw_view {
    int64_t t_ns;
    int64_t elapsed_ns; /* 0 <= elapsed < period */
    uint64_t cur, prev;
};

static void view(const struct sw_state *s, const struct sl_limit *l, int64_t now_ns,
                 struct sw_view *v)
{
    int64_t w, w_last;

    v->t_ns = sl__max64(now_ns, s->last_ns);
    w = floor_div(v->t_ns, l->period_ns);
    w_last = floor_div(s->last_ns, l->period_ns);
    v->elapsed_ns = (int64_t)((__int128)v->t_ns - (__int128)w * l->period_ns);
    v->cur = v->prev = 0;
    if (w == w_last) {
        v->cur = s->cur;
        v->prev = s->prev;
    } else if ((__int128)w - w_last == 1) {
        v->prev = s->cur;
    }
}

/* prev * (P - e) + (cur + cost) * P <= requests * P, exactly. Checking
 * cur + cost <= requests first keeps every term below 2^127. */
static bool fits(const struct sw_view *v, const struct sl_limit *l, uint64_t cost)
{
    u128 p = (u128)l->period_ns;
    u128 need = (u128)v->cur + cost;

    if (need > l->requests)
        return false;
    return (u128)v->prev * (u128)(l->period_ns - v->elapsed_ns) + need * p <= (u128)l->requests * p;
}

/* Requests of cost 1 still admissible at this view: the largest k with
 * prev*(P-e) + (cur+k)*P <= requests*P, or 0. */
static int64_t remaining(const struct sw_view *v, const struct sl_limit *l)
{
    u128 p = (u128)l->period_ns;
    u128 cap = (u128)l->requests * p;
    u128 used = (u128)v->prev * (u128)(l->period_ns - v->elapsed_ns) + (u128)v->cur * p;
    u128 k;

    if (used >= cap)
        return 0;
    k = (cap - used) / p;
    return k > INT64_MAX ? INT64_MAX : (int64_t)k;
}

/* Until both counters have aged out: the previous window's weight is gone at
 * the end of this window, the current one's at the end of the next. */
static int64_t reset_ns(const struct sw_view *v, const struct sl_limit *l)
{
    __int128 left = (__int128)l->period_ns - v->elapsed_ns;

    if (v->cur > 0)
        left += l->period_ns;
    else if (v->prev == 0)
        return 0;
    return left > INT64_MAX ? INT64_MAX : (int64_t)left;
}

static int64_t ceil_div128(u128 a, u128 b)
{
    u128 q = a / b + (a % b != 0);
    return q > INT64_MAX ? INT64_MAX : (int64_t)q;
}

/* The smallest wait after which `cost` fits with no further traffic; the
 * view is denied and cost <= requests. */
static int64_t retry_ns(const struct sw_view *v, const struct sl_limit *l, uint64_t cost)
{
    u128 p = (u128)l->period_ns;
    u128 need = (u128)v->cur + cost; /* no saturation: cur, cost < 2^64 */
    u128 cap = (u128)l->requests;
    __int128 w;

    if (need <= cap) {
        /* Within this window: prev * (P - e - w) + need * P <= cap * P. The
         * solution is at most P - e, where prev's weight reaches zero. */
        u128 excess = (u128)v->prev * (u128)(l->period_ns - v->elapsed_ns) - (cap - need) * p;
        return ceil_div128(excess, v->prev);
    }
    /* Next window, `e2` into it: cur * (P - e2) + cost * P <= cap * P, so
     * e2 = ceil((cur + cost - cap) * P / cur) <= P since cost <= cap. */
    w = (__int128)l->period_ns - v->elapsed_ns + ceil_div128((need - cap) * p, v->cur);
    return w > INT64_MAX ? INT64_MAX : (int64_t)w;
}

static size_t state_size(const struct sl_limit *l)
{
    (void)l;
    return sizeof(struct sw_state);
}

static int validate(const struct sl_limit *l, const char **why)
{
    (void)l;
    (void)why;
    return SL_OK;
}

static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sw_state *s = st;

    (void)l;
    (void)now_ns;
    s->last_ns = INT64_MIN;
    s->cur = s->prev = 0;
}

/* Fills every field of `d` for `cost` at `now` (clamped to the last recorded
 * time) without changing the state. */
static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    struct sw_view v;

    view(st, l, now_ns, &v);
    memset(d, 0, sizeof(*d));
    d->quota = sl_limit_quota(l);
    if (cost == 0 || fits(&v, l, cost)) { /* a peek is always admitted */
        d->verdict = SL_ALLOW;
        v.cur = sl__sat_addu(v.cur, cost);
        d->remaining = remaining(&v, l);
        d->reset_ns = reset_ns(&v, l);
        return;
    }
    d->verdict = SL_DENY;
    d->remaining = remaining(&v, l);
    d->reset_ns = reset_ns(&v, l);
    d->retry_after_ns = cost > l->requests ? -1 : retry_ns(&v, l, cost);
}

/* Records `cost` in the current window at the clamped `now`. For a denial
 * counted because of count_rejected, remaining/reset/retry_after in `d` are
 * refreshed to describe the state with the rejected request in it. */
static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct sw_state *s = st;
    struct sw_view v;
    struct sl_decision after;

    view(s, l, now_ns, &v);
    s->last_ns = v.t_ns;
    s->prev = v.prev;
    s->cur = sl__sat_addu(v.cur, cost);
    if (d->verdict == SL_DENY) {
        check(s, l, now_ns, cost, &after);
        d->remaining = after.remaining;
        d->reset_ns = after.reset_ns;
        d->retry_after_ns = after.retry_after_ns;
    }
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct sw_state *s = st;
    __int128 end;

    if (s->cur == 0 && s->prev == 0)
        return INT64_MIN;
    end = (__int128)floor_div(s->last_ns, l->period_ns) * l->period_ns + l->period_ns;
    if (s->cur > 0)
        end += l->period_ns;
    return end > INT64_MAX ? INT64_MAX : (int64_t)end;
}

/* Out of quota: a peek leaves no request (the general answer; this
 * algorithm's check is cheap enough and rarely asked). */
static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl_decision d;

    check(st, l, now_ns, 0, &d);
    return d.remaining == 0;
}

const struct sl__algo_ops sl__algo_sliding_window = {
    .name = "sliding_window",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .denying = denying,
    .release = NULL,
};
