/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * token_bucket.c - the token bucket (docs/contracts.md §Algorithms) in its two forms.
 *
 * Plain: capacity B = burst (default requests), refilled continuously at
 * `requests` per `period` (bucket4j's greedy refill), starting full. A
 * request of cost c is admitted when c tokens are there. The state is the
 * deficit (tokens missing from a full bucket) as a backlog (backlog.h):
 * exact in units of 1/requests ns of refill time, one token = period_ns
 * units.
 *
 * Warm-up (`warmup_ns`, no burst): Guava's SmoothWarmingUp with coldFactor 3,
 * decided as tryAcquire(cost, 0): admitted when the next free time has come,
 * and the admission pushes the next free time forward by the wait its permits
 * cost (stored permits above the threshold are expensive, cold start). With
 * coldFactor 3 Guava's cool-down interval equals the stable interval, so the
 * stored permits are kept exactly as 2 * permits * period_ns (an integer),
 * and each wait is exact until it is rounded up to a whole ns (Guava
 * truncates to whole microseconds). validate() bounds warmup * requests so
 * that this exact arithmetic fits 128 bits.
 *
 * It does not read a clock or allocate. count_rejected: a counted denial
 * takes its tokens anyway (plain: the deficit grows past the capacity, a
 * debt repaid by refill before anything is admitted again; warm-up: the
 * reservation pushes the next free time forward, as Guava's reserve()); its
 * decision then describes the state with it recorded.
 */
#include <string.h>

#include "algo/algo.h"
#include "algo/backlog.h"

/* warmup_ns * requests may not exceed this (exact warm-up arithmetic). */
#define WARMUP_PRODUCT_MAX (UINT64_C(1) << 61)

static bool is_warm(const struct sl_limit *l)
{
    return l->warmup_ns > 0;
}

/* Capacity B (burst, default requests) in backlog units. */
static unsigned __int128 capacity_of(const struct sl_limit *l)
{
    uint64_t b = l->burst < 0 ? l->requests : (uint64_t)l->burst;
    return sl__backlog_requests(l, b);
}

/* ----------------------------------------------------------- warm-up */

/* Stored permits are counted in units of 1 / (2 * period_ns) permit, so the
 * threshold (warmup / (2 * stable interval) permits) is W*R units and the
 * maximum (twice the threshold) 2*W*R units; one ns of rest adds 2*R units. */
static uint64_t warm_wr(const struct sl_limit *l)
{
    return (uint64_t)l->warmup_ns * l->requests;
}

/* Guava's resync(): permits accrue from the next free time to `now`. */
static void warm_resync(struct sl__warm_state *s, const struct sl_limit *l, int64_t now_ns)
{
    uint64_t max = 2 * warm_wr(l);
    unsigned __int128 add;

    if (now_ns <= s->next_free_ns)
        return;
    add = (unsigned __int128)((uint64_t)now_ns - (uint64_t)s->next_free_ns) *
          (2 * (unsigned __int128)l->requests);
    s->stored = add >= max - s->stored ? max : s->stored + (uint64_t)add;
    s->next_free_ns = now_ns;
}

/* Guava's storedPermitsToWaitTime + fresh permits, for `cost` permits taken
 * from `stored` units: the exact wait in ns, rounded up (< 2^127). */
static unsigned __int128 warm_wait(const struct sl_limit *l, uint64_t stored, uint64_t cost,
                                   uint64_t *spent)
{
    uint64_t wr = warm_wr(l);
    unsigned __int128 need =
        (unsigned __int128)cost * (2 * (unsigned __int128)(uint64_t)l->period_ns);
    uint64_t spend = need < stored ? (uint64_t)need : stored;
    uint64_t above = stored > wr ? stored - wr : 0;
    uint64_t take_above = spend < above ? spend : above;
    /* Above the threshold the interval rises linearly: the trapezoid
     * (A - B)(A + B - WR) / (2 W R^2) with A, B the units before and after. */
    unsigned __int128 quad =
        (unsigned __int128)take_above * ((unsigned __int128)stored + (stored - take_above) - wr);
    unsigned __int128 lin = need - take_above; /* stable-interval units: 1/(2R) ns each */
    uint64_t two_r = 2 * l->requests;
    unsigned __int128 frac = (lin % two_r) * wr + quad;
    unsigned __int128 den = 2 * (unsigned __int128)wr * l->requests;

    *spent = spend;
    return sl__div_u128(lin, two_r, false) + frac / den + (frac % den != 0);
}

/* Guava's reserveEarliestAvailable at `now`, applied to `s`; the next free
 * time saturates at INT64_MAX. */
static void warm_reserve(struct sl__warm_state *s, const struct sl_limit *l, int64_t now_ns,
                         uint64_t cost)
{
    uint64_t spent;
    unsigned __int128 wait;
    __int128 next;

    warm_resync(s, l, now_ns);
    wait = warm_wait(l, s->stored, cost, &spent);
    s->stored -= spent;
    next = wait > UINT64_MAX ? INT64_MAX : (__int128)s->next_free_ns + (__int128)wait;
    s->next_free_ns = next > INT64_MAX ? INT64_MAX : (int64_t)next;
}

/* When the stored permits are back at the maximum (a fresh, cold state). */
static int64_t warm_whole_at(const struct sl__warm_state *s, const struct sl_limit *l)
{
    uint64_t missing = 2 * warm_wr(l) - s->stored;
    uint64_t two_r = 2 * l->requests;
    uint64_t rest = missing / two_r + (missing % two_r != 0);

    return sl__sat_add(s->next_free_ns, sl__sat_i64(rest));
}

/* tryAcquire(cost, 0): admitted when the next free time has come. */
static void warm_check(const struct sl__warm_state *s, const struct sl_limit *l, int64_t now_ns,
                       uint64_t cost, struct sl_decision *d)
{
    struct sl__warm_state after = *s;
    int64_t now = sl__max64(now_ns, s->last_ns);

    if (cost == 0 || s->next_free_ns <= now) {
        d->verdict = SL_ALLOW;
        if (cost != 0)
            warm_reserve(&after, l, now, cost);
        d->remaining = after.next_free_ns <= now ? 1 : 0;
    } else {
        d->verdict = SL_DENY;
        d->retry_after_ns = sl__sat_sub(s->next_free_ns, now);
    }
    d->reset_ns = sl__max64(0, sl__sat_sub(warm_whole_at(&after, l), now));
}

/* ------------------------------------------------------------- ops */

static size_t state_size(const struct sl_limit *l)
{
    _Static_assert(sizeof(struct sl__warm_state) == sizeof(struct sl__backlog), "one state size");
    return sizeof(struct sl__backlog);
}

static int validate(const struct sl_limit *l, const char **why)
{
    if (l->delay != 0 || l->nodelay) {
        *why = "delay and nodelay apply only to leaky_bucket";
        return SL_EINVAL;
    }
    if (l->min_interval_ns != 0 || l->lease_ns != 0) {
        *why = "min_interval and lease do not apply to token_bucket";
        return SL_EINVAL;
    }
    if (l->burst == 0) {
        *why = "token_bucket burst must be at least 1 (an empty bucket admits nothing)";
        return SL_EINVAL;
    }
    if (is_warm(l) && l->burst >= 0) {
        *why = "warmup and burst cannot be combined: warmup sets its own capacity";
        return SL_EINVAL;
    }
    if (is_warm(l) && (l->requests >= WARMUP_PRODUCT_MAX ||
                       (uint64_t)l->warmup_ns > WARMUP_PRODUCT_MAX / l->requests)) {
        *why = "warmup is too long for this many requests (warmup in ns times requests "
               "must be below 2^61): shorten the warmup or the period";
        return SL_EINVAL;
    }
    return SL_OK;
}

static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl__warm_state *s = st;

    sl__backlog_init(st, now_ns); /* plain: full, no deficit */
    if (is_warm(l)) {
        s->next_free_ns = now_ns;   /* Guava: created at now, free at once */
        s->stored = 2 * warm_wr(l); /* starts cold: maxPermits stored */
    }
}

static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    if (!is_warm(l)) {
        sl__backlog_check(st, l, now_ns, cost, capacity_of(l), d);
        return;
    }
    memset(d, 0, sizeof(*d));
    d->quota = sl_limit_quota(l);
    warm_check(st, l, now_ns, cost, d);
}

static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct sl__warm_state *s = st;
    struct sl_decision after;

    if (!is_warm(l)) {
        sl__backlog_commit(st, l, now_ns, cost, capacity_of(l), d);
        return;
    }
    s->last_ns = sl__max64(s->last_ns, now_ns);
    warm_reserve(s, l, s->last_ns, cost);
    if (d->verdict == SL_DENY) { /* counted: report the state with it */
        check(st, l, now_ns, cost, &after);
        sl__backlog_refresh(d, &after);
    }
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    if (is_warm(l))
        return warm_whole_at(st, l);
    return sl__backlog_whole_at(st, l);
}

/* Plain: the deficit lowered. Warm-up: not a level, not refunded (the
 * request stays counted: conservative). */
static bool refund(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost)
{
    (void)now_ns;
    if (is_warm(l))
        return false;
    sl__backlog_refund(st, l, cost);
    return true;
}

static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    const struct sl__warm_state *s = st;

    if (is_warm(l)) /* warm_check: remaining 0 until the next free time */
        return s->next_free_ns > sl__max64(now_ns, s->last_ns);
    return sl__backlog_denying(st, l, now_ns, capacity_of(l));
}

/* Plain: the deficit that is refilled at `until`. Warm-up: nothing free
 * before `until` and cold from then on (maxPermits stored), which is what
 * any warm-up state whole at `until` is from then on, and before it no state
 * is more restrictive. */
static void restore(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount)
{
    struct sl__warm_state *s = st;

    (void)amount;
    if (!is_warm(l)) {
        sl__backlog_restore(st, l, now_ns, until_ns);
        return;
    }
    s->last_ns = now_ns;
    s->next_free_ns = until_ns;
    s->stored = 2 * warm_wr(l);
}

const struct sl__algo_ops sl__algo_token_bucket = {
    .name = "token_bucket",
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
