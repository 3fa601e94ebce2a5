/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fixed_window.c - the fixed window counter (docs/contracts.md §Algorithms), as
 * envoyproxy/ratelimit counts: `requests` per `period`, windows aligned to
 * the Unix epoch (window index = floor(now / period)), the count starting
 * from zero in every window.
 *
 * State (struct sl__fw_state, lib/internal/sluice_state.h; 16 bytes, inline): the time of the last
 * recorded request and the count of the window that time falls in; the window index is derived from
 * that time, so no separate field is needed.
 *
 * Deliberately does not: smooth the boundary (a client may spend the whole
 * quota at the end of one window and again at the start of the next; that
 * is the algorithm, use sliding_window to avoid it), read a clock, allocate,
 * or use floating point. Counts saturate at 2^64 - 1.
 */
#include <string.h>

#include "algo/algo.h"
#include "sluice_sat.h"

_Static_assert(sizeof(struct sl__fw_state) <= SL__STATE_INLINE,
               "fixed_window state must be inline");

/* floor(a / b) for b > 0, also for negative a (times before 1970). */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

/* The view of the state at `now`: the clamped time, the count of its window
 * and the time left until that window ends (<= period, > 0). */
struct fw_view {
    int64_t t_ns;
    uint64_t cur;
    int64_t to_end_ns;
};

static void view(const struct sl__fw_state *s, const struct sl_limit *l, int64_t now_ns,
                 struct fw_view *v)
{
    int64_t w;

    v->t_ns = sl__max64(now_ns, s->last_ns);
    w = floor_div(v->t_ns, l->period_ns);
    v->cur = (s->count > 0 && floor_div(s->last_ns, l->period_ns) == w) ? s->count : 0;
    /* The window's end may lie past INT64_MAX; the distance to it does not. */
    v->to_end_ns = (int64_t)((__int128)w * l->period_ns + l->period_ns - v->t_ns);
}

static size_t state_size(const struct sl_limit *l)
{
    (void)l;
    return sizeof(struct sl__fw_state);
}

static int validate(const struct sl_limit *l, const char **why)
{
    (void)l;
    (void)why;
    return SL_OK;
}

/* A fresh key has recorded nothing; `now` is not needed. */
static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl__fw_state *s = st;

    (void)l;
    (void)now_ns;
    s->last_ns = INT64_MIN;
    s->count = 0;
}

/* Fills every field of `d` for `cost` at `now` (clamped to the last recorded
 * time); the state is not changed. Admitted iff cur + cost <= requests. */
static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    struct fw_view v;
    uint64_t left;

    view(st, l, now_ns, &v);
    left = v.cur >= l->requests ? 0 : l->requests - v.cur;
    memset(d, 0, sizeof(*d));
    d->quota = sl_limit_quota(l);
    if (cost <= left) {
        d->verdict = SL_ALLOW;
        d->remaining = sl__sat_i64(left - cost);
        d->reset_ns = (v.cur > 0 || cost > 0) ? v.to_end_ns : 0;
        return;
    }
    d->verdict = SL_DENY;
    d->remaining = sl__sat_i64(left);
    d->reset_ns = v.cur > 0 ? v.to_end_ns : 0;
    /* The next window starts empty, so any cost <= requests fits there. */
    d->retry_after_ns = cost > l->requests ? -1 : v.to_end_ns;
}

/* Records `cost` at the clamped `now`. For a denial counted because of
 * count_rejected, remaining/reset/retry_after in `d` are refreshed to
 * describe the state with the rejected request in it. */
static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct sl__fw_state *s = st;
    struct fw_view v;
    struct sl_decision after;

    view(s, l, now_ns, &v);
    s->count = sl__sat_addu(v.cur, cost);
    s->last_ns = v.t_ns;
    if (d->verdict == SL_DENY) {
        check(s, l, now_ns, cost, &after);
        d->remaining = after.remaining;
        d->reset_ns = after.reset_ns;
        d->retry_after_ns = after.retry_after_ns;
    }
}

/* Whole once the last recorded request's window is over. */
static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct sl__fw_state *s = st;
    __int128 end;

    if (s->count == 0)
        return INT64_MIN;
    end = (__int128)floor_div(s->last_ns, l->period_ns) * l->period_ns + l->period_ns;
    return end > INT64_MAX ? INT64_MAX : (int64_t)end;
}

/* Subtract `cost` from the window `now` falls in, if the state still counts
 * that window (once it is over, nothing is left to give back). */
static bool refund(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost)
{
    struct sl__fw_state *s = st;

    if (s->count > 0 && floor_div(s->last_ns, l->period_ns) == floor_div(now_ns, l->period_ns))
        s->count = s->count > cost ? s->count - cost : 0;
    return true;
}

/* Out of quota: the current window has recorded `requests` already. */
static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct fw_view v;

    view(st, l, now_ns, &v);
    return v.cur >= l->requests;
}

/* The window's count. */
static bool fold(const void *st, size_t bytes, uint64_t *amount)
{
    const struct sl__fw_state *s = st;

    (void)bytes;
    *amount = s->count;
    return true;
}

/* `amount` recorded in the window of `now`: a state whole at `until` (> now)
 * counted in the window that ends then, or (`until` rounded up by the table)
 * in an earlier one, which this is at least as restrictive as. */
static void restore(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount)
{
    struct sl__fw_state *s = st;

    (void)l;
    (void)until_ns;
    s->last_ns = now_ns;
    s->count = amount;
}

const struct sl__algo_ops sl__algo_fixed_window = {
    .name = "fixed_window",
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
