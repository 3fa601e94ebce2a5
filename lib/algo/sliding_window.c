/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sliding_window.c - Cloudflare's sliding window counter (docs/contracts.md §Algorithms),
 * generalised to sub-windows: the period P is split into N = `buckets`
 * epoch-aligned sub-windows of S = P / N each, with one count per
 * sub-window. The sliding window (now - P, now] covers the current
 * sub-window, the N - 1 before it in full, and part of the one before
 * those; that oldest one is weighted by how much of it still overlaps.
 * N = 1 (the default) is the classic two-window counter: the current
 * window plus the weighted previous one.
 *
 * With e the time elapsed in the current sub-window (0 <= e < S), `full` the
 * sum of the N newest counts (the current sub-window's included) and `old`
 * the count of the sub-window N before the current one, a request of
 * `cost` is admitted iff
 *
 *     old * (S - e) + (full + cost) * S <= requests * S
 *
 * i.e. estimate + cost <= requests with estimate = old * (S - e) / S + full,
 * compared exactly, in 128-bit integers, with no rounding at all.
 * retry_after is the exact smallest wait in nanoseconds: within a
 * sub-window the oldest count's weight decays by one unit per nanosecond,
 * and at a boundary every count moves one place, so the wait is solved for
 * in closed form, in the first sub-window (this one or a later one) in
 * which the fully counted ones leave room.
 *
 * State (8 * (N + 2) bytes; inline for N = 1, out of line beyond): time of
 * the last recorded request, then N + 1 counts, the newest (the sub-window
 * of that time) first. For N = 1 that is exactly the former layout: time,
 * current window's count, previous window's count.
 *
 * Deliberately does not: keep timestamps (use sliding_log for exactness),
 * read a clock, allocate, or use floating point. Counts saturate at 2^64 - 1.
 * A check costs O(N) additions; N is capped at SL_SW_BUCKETS_MAX.
 */
#include <string.h>

#include "algo/algo.h"
#include "sluice_sat.h"
#include "sluice_state.h"

_Static_assert(sizeof(struct sl__sw_state) + 2 * sizeof(uint64_t) <= SL__STATE_INLINE,
               "sliding_window's state with one bucket must be inline");

typedef unsigned __int128 u128;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

static unsigned n_buckets(const struct sl_limit *l)
{
    return l->buckets > 1 ? l->buckets : 1;
}

/* The state seen at `now`: clamped time, the sub-window length, elapsed
 * time in the current sub-window, how many sub-windows the counts move by
 * (capped at N + 1: all gone), and the sums the decision needs. */
struct sw_view {
    const struct sl__sw_state *s;
    unsigned n;         /* N */
    int64_t sub_ns;     /* S */
    int64_t t_ns;       /* clamped now */
    int64_t elapsed_ns; /* 0 <= e < S */
    int64_t w;          /* the current sub-window's index */
    unsigned shift;     /* c[j] of the state is count j + shift of the view */
    uint64_t cur;       /* count(0) */
    uint64_t old;       /* count(N) */
    u128 full;          /* count(0) + ... + count(N - 1) */
};

/* Count of the sub-window j before the current one, 0 <= j <= N. */
static uint64_t count(const struct sw_view *v, unsigned j)
{
    return j < v->shift ? 0 : v->s->c[j - v->shift];
}

static void view(const struct sl__sw_state *s, const struct sl_limit *l, int64_t now_ns,
                 struct sw_view *v)
{
    __int128 moved;

    v->s = s;
    v->n = n_buckets(l);
    v->sub_ns = v->n == 1 ? l->period_ns : l->period_ns / v->n; /* no division on N = 1 */
    v->t_ns = sl__max64(now_ns, s->last_ns);
    v->w = floor_div(v->t_ns, v->sub_ns);
    v->elapsed_ns = (int64_t)((__int128)v->t_ns - (__int128)v->w * v->sub_ns);
    moved = (__int128)v->w - floor_div(s->last_ns, v->sub_ns);
    v->shift = moved > v->n ? v->n + 1 : (unsigned)moved;
    if (v->n == 1) { /* the default, without the loop */
        v->cur = v->shift == 0 ? s->c[0] : 0;
        v->old = v->shift == 0 ? s->c[1] : v->shift == 1 ? s->c[0] : 0;
        v->full = v->cur;
        return;
    }
    v->cur = count(v, 0);
    v->old = count(v, v->n);
    v->full = v->cur;
    for (unsigned j = 1; j < v->n; j++)
        v->full += count(v, j);
}

/* old * (S - e) + (full + cost) * S <= requests * S, exactly. Checking
 * full + cost <= requests first keeps every term below 2^127. */
static bool fits(const struct sw_view *v, const struct sl_limit *l, uint64_t cost)
{
    u128 s = (u128)v->sub_ns;
    u128 need = v->full + cost;

    if (need > l->requests)
        return false;
    return (u128)v->old * (u128)(v->sub_ns - v->elapsed_ns) + need * s <= (u128)l->requests * s;
}

/* Requests of cost 1 still admissible at this view with `full` counted in
 * full: the largest k with old*(S-e) + (full+k)*S <= requests*S, or 0. */
static int64_t remaining(const struct sw_view *v, const struct sl_limit *l, u128 full)
{
    u128 s = (u128)v->sub_ns;
    u128 cap = (u128)l->requests * s;
    u128 used, k;

    if (full >= l->requests)
        return 0;
    used = (u128)v->old * (u128)(v->sub_ns - v->elapsed_ns) + full * s;
    if (used >= cap)
        return 0;
    k = (cap - used) / s;
    return k > INT64_MAX ? INT64_MAX : (int64_t)k;
}

static int64_t clamp128(__int128 x)
{
    return x > INT64_MAX ? INT64_MAX : (int64_t)x;
}

/* Until every count has aged out: the count of the sub-window j before the
 * current one is weighted for the last time in the sub-window N after its
 * own, so the newest non-zero one, j, is gone at (N + 1 - j) * S - e.
 * `cur_added`: the current sub-window holds something beyond the view. */
static int64_t reset_ns(const struct sw_view *v, bool cur_added)
{
    for (unsigned j = 0; j <= v->n; j++) {
        if (count(v, j) > 0 || (j == 0 && cur_added))
            return clamp128((__int128)(v->n + 1 - j) * v->sub_ns - v->elapsed_ns);
    }
    return 0;
}

static int64_t ceil_div128(u128 a, u128 b)
{
    u128 q = a / b + (a % b != 0);
    return q > INT64_MAX ? INT64_MAX : (int64_t)q;
}

/* The smallest wait after which `cost` fits with no further traffic; the
 * view is denied and cost <= requests. k sub-windows from now the fully
 * counted ones are count(0..N-1-k), the weighted one count(N-k); the first
 * k at which the full ones leave room for `cost` is where it fits, after
 * the weighted count has decayed enough. */
static int64_t retry_ns(const struct sw_view *v, const struct sl_limit *l, uint64_t cost)
{
    u128 s = (u128)v->sub_ns;
    u128 cap = (u128)l->requests;
    u128 full = v->full;

    for (unsigned k = 0; k <= v->n; k++) {
        u128 old = count(v, v->n - k);
        u128 need;

        if (k > 0)
            full -= old; /* count(N-k) is now the weighted one */
        need = full + cost;
        if (need > cap)
            continue;
        if (k == 0) {
            /* old * (S - e - w) + need * S <= cap * S; at most S - e. */
            u128 excess = old * (u128)(v->sub_ns - v->elapsed_ns) - (cap - need) * s;
            return ceil_div128(excess, old);
        }
        /* e2 into sub-window k: old * (S - e2) <= (cap - need) * S. */
        {
            __int128 w = (__int128)k * v->sub_ns - v->elapsed_ns;
            if (old > cap - need)
                w += ceil_div128((old - (cap - need)) * s, old);
            return clamp128(w);
        }
    }
    return -1; /* not reached: count(N) alone is weighted at k = N, and cost <= cap */
}

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct sl__sw_state) + (n_buckets(l) + 1) * sizeof(uint64_t);
}

static int validate(const struct sl_limit *l, const char **why)
{
    if (l->buckets > SL_SW_BUCKETS_MAX) {
        *why = "sliding_window: buckets must be from 1 to 1024";
        return SL_EINVAL;
    }
    if (l->period_ns % n_buckets(l) != 0) {
        *why = "sliding_window: the period must split into `buckets` sub-windows of whole "
               "nanoseconds (period a multiple of buckets ns)";
        return SL_EINVAL;
    }
    return SL_OK;
}

static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl__sw_state *s = st;

    (void)now_ns;
    s->last_ns = INT64_MIN;
    memset(s->c, 0, (n_buckets(l) + 1) * sizeof(uint64_t));
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
        uint64_t cur = sl__sat_addu(v.cur, cost);
        d->verdict = SL_ALLOW;
        d->remaining = remaining(&v, l, v.full - v.cur + cur);
        d->reset_ns = reset_ns(&v, cost > 0);
        return;
    }
    d->verdict = SL_DENY;
    d->remaining = remaining(&v, l, v.full);
    d->reset_ns = reset_ns(&v, false);
    d->retry_after_ns = cost > l->requests ? -1 : retry_ns(&v, l, cost);
}

/* Records `cost` in the current sub-window at the clamped `now`, moving
 * the counts along first. For a denial counted because of count_rejected,
 * remaining/reset/retry_after in `d` are refreshed to describe the state
 * with the rejected request in it. */
static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct sl__sw_state *s = st;
    struct sw_view v;
    struct sl_decision after;

    view(s, l, now_ns, &v);
    if (v.shift > v.n) {
        memset(s->c, 0, (v.n + 1) * sizeof(uint64_t));
    } else if (v.shift > 0) {
        memmove(s->c + v.shift, s->c, (v.n + 1 - v.shift) * sizeof(uint64_t));
        memset(s->c, 0, v.shift * sizeof(uint64_t));
    }
    s->last_ns = v.t_ns;
    s->c[0] = sl__sat_addu(s->c[0], cost);
    if (d->verdict == SL_DENY) {
        check(s, l, now_ns, cost, &after);
        d->remaining = after.remaining;
        d->reset_ns = after.reset_ns;
        d->retry_after_ns = after.retry_after_ns;
    }
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct sl__sw_state *s = st;
    unsigned n = n_buckets(l);
    int64_t sub = l->period_ns / n;

    for (unsigned j = 0; j <= n; j++) {
        if (s->c[j] > 0)
            return clamp128(((__int128)floor_div(s->last_ns, sub) + n + 1 - j) * sub);
    }
    return INT64_MIN;
}

/* Out of quota: a peek leaves no request (the general answer; this
 * algorithm's check is cheap enough and rarely asked). */
static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl_decision d;

    check(st, l, now_ns, 0, &d);
    return d.remaining == 0;
}

/* Take back `cost` recorded at now_ns (a cross-slot denial's other
 * slots): from the sub-window now_ns fell in, if it is still counted. */
static bool refund(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost)
{
    struct sl__sw_state *s = st;
    unsigned n = n_buckets(l);
    int64_t sub = l->period_ns / n;
    __int128 d;

    if (s->last_ns == INT64_MIN)
        return true;
    d = (__int128)floor_div(s->last_ns, sub) - floor_div(now_ns, sub);
    if (d >= 0 && d <= n)
        s->c[d] = s->c[d] > cost ? s->c[d] - cost : 0;
    return true;
}

/* Every count the state holds, whatever its weight now: `bytes` says how
 * many there are (buckets + 1). */
static bool fold(const void *st, size_t bytes, uint64_t *amount)
{
    const struct sl__sw_state *s = st;
    size_t n = (bytes - sizeof(*s)) / sizeof(s->c[0]);
    uint64_t sum = 0;

    for (size_t j = 0; j < n; j++)
        sum = sl__sat_addu(sum, s->c[j]);
    *amount = sum;
    return true;
}

/* All of `amount` in the sub-window of `now`: every count of a folded state
 * was recorded at or before now, so it weighs at most what it weighs there,
 * and leaves the window no later. */
static void restore(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount)
{
    struct sl__sw_state *s = st;

    (void)l;
    (void)until_ns;
    s->last_ns = now_ns;
    s->c[0] = amount;
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
    .fold = fold,
    .restore = restore,
    .refund = refund,
};
