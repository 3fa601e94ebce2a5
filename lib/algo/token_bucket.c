/*
 * token_bucket.c - the token bucket (CONTRACTS C3) in its two forms.
 *
 * Plain: capacity B = burst (default requests), refilled continuously at
 * `requests` per `period` (bucket4j's greedy refill), starting full. A
 * request of cost c is admitted when c tokens are there. The state is the
 * deficit (tokens missing from a full bucket) in units of 1/requests ns of
 * refill time, so one token = period_ns units exactly; 128-bit, saturating at
 * INT64_MAX ns of refill time.
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
#include "util/sat.h"

typedef unsigned __int128 u128;

/* 24 bytes. Plain: a = deficit low half, b = high half. Warm-up: a = the
 * next free time (ns), b = stored permits * 2 * period_ns. */
struct tb_state {
    int64_t last_ns;
    uint64_t a;
    uint64_t b;
};

/* warmup_ns * requests may not exceed this (exact warm-up arithmetic). */
#define WARMUP_PRODUCT_MAX (UINT64_C(1) << 61)

static bool is_warm(const struct sl_limit *l)
{
    return l->warmup_ns > 0;
}

/* v / by, rounded up if `up`; a 64-bit division when v fits (the usual
 * case: 128-bit division is several times slower). */
static u128 div_u128(u128 v, uint64_t by, bool up)
{
    u128 q;
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

/* ceil(v / requests) as ns, saturated at INT64_MAX. */
static int64_t units_to_ns_ceil(u128 v, const struct sl_limit *l)
{
    u128 q = div_u128(v, l->requests, true);
    return q > (u128)INT64_MAX ? INT64_MAX : (int64_t)q;
}

static int64_t clamp_i64(u128 v)
{
    return v > (u128)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static uint64_t elapsed_since(int64_t from_ns, int64_t to_ns)
{
    return to_ns > from_ns ? (uint64_t)to_ns - (uint64_t)from_ns : 0;
}

/* ------------------------------------------------------------- plain */

static u128 capacity_of(const struct sl_limit *l)
{
    uint64_t b = l->burst < 0 ? l->requests : (uint64_t)l->burst;
    return (u128)b * (uint64_t)l->period_ns;
}

static u128 deficit_get(const struct tb_state *s)
{
    return ((u128)s->b << 64) | s->a;
}

static u128 deficit_at(const struct tb_state *s, const struct sl_limit *l, int64_t now_ns)
{
    u128 deficit = deficit_get(s);
    u128 refill = (u128)elapsed_since(s->last_ns, now_ns) * l->requests;

    return refill >= deficit ? 0 : deficit - refill;
}

static void plain_report(const struct sl_limit *l, u128 deficit, struct sl_decision *d)
{
    u128 cap = capacity_of(l);

    d->remaining =
        deficit >= cap ? 0 : clamp_i64(div_u128(cap - deficit, (uint64_t)l->period_ns, false));
    d->reset_ns = units_to_ns_ceil(deficit, l);
}

static void plain_check(const struct tb_state *s, const struct sl_limit *l, int64_t now_ns,
                        uint64_t cost, struct sl_decision *d)
{
    u128 deficit = deficit_at(s, l, now_ns);
    u128 take = (u128)cost * (uint64_t)l->period_ns;
    u128 cap = capacity_of(l);
    u128 next = deficit + take; /* < 2^128: both < 2^127 */

    if (cost == 0 || next <= cap) {
        d->verdict = SL_ALLOW;
        plain_report(l, cost == 0 ? deficit : next, d);
        return;
    }
    d->verdict = SL_DENY;
    plain_report(l, deficit, d);
    d->retry_after_ns = take > cap ? -1 : units_to_ns_ceil(next - cap, l);
}

static void plain_commit(struct tb_state *s, const struct sl_limit *l, int64_t now_ns,
                         uint64_t cost)
{
    u128 deficit = deficit_at(s, l, now_ns) + (u128)cost * (uint64_t)l->period_ns;
    u128 max = (u128)INT64_MAX * l->requests;

    /* saturate at INT64_MAX ns of refill, or the capacity if larger (so an
     * admission is never clipped; only a counted denial gets here) */
    if (max < capacity_of(l))
        max = capacity_of(l);
    if (deficit > max)
        deficit = max;
    s->a = (uint64_t)deficit;
    s->b = (uint64_t)(deficit >> 64);
    s->last_ns = sl__max64(s->last_ns, now_ns);
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
static void warm_resync(struct tb_state *s, const struct sl_limit *l, int64_t now_ns)
{
    uint64_t max = 2 * warm_wr(l);
    u128 add;

    if (now_ns <= (int64_t)s->a)
        return;
    add = (u128)elapsed_since((int64_t)s->a, now_ns) * (2 * (u128)l->requests);
    s->b = add >= max - s->b ? max : s->b + (uint64_t)add;
    s->a = (uint64_t)now_ns;
}

/* Guava's storedPermitsToWaitTime + fresh permits, for `cost` permits taken
 * from `stored` units: the exact wait in ns, rounded up (< 2^127). */
static u128 warm_wait(const struct sl_limit *l, uint64_t stored, uint64_t cost, uint64_t *spent)
{
    uint64_t wr = warm_wr(l);
    u128 need = (u128)cost * (2 * (u128)(uint64_t)l->period_ns);
    uint64_t spend = need < stored ? (uint64_t)need : stored;
    uint64_t above = stored > wr ? stored - wr : 0;
    uint64_t take_above = spend < above ? spend : above;
    /* Above the threshold the interval rises linearly: the trapezoid
     * (A - B)(A + B - WR) / (2 W R^2) with A, B the units before and after. */
    u128 quad = (u128)take_above * ((u128)stored + (stored - take_above) - wr);
    u128 lin = need - take_above; /* stable-interval units: 1/(2R) ns each */
    u128 two_r = 2 * (u128)l->requests;
    u128 frac = (lin % two_r) * wr + quad;
    u128 den = 2 * (u128)wr * l->requests;

    *spent = spend;
    return lin / two_r + frac / den + (frac % den != 0);
}

/* Guava's reserveEarliestAvailable at `now`, applied to `s`; the next free
 * time saturates at INT64_MAX. */
static void warm_reserve(struct tb_state *s, const struct sl_limit *l, int64_t now_ns,
                         uint64_t cost)
{
    uint64_t spent;
    u128 wait;
    __int128 next;

    warm_resync(s, l, now_ns);
    wait = warm_wait(l, s->b, cost, &spent);
    s->b -= spent;
    next = wait > (u128)UINT64_MAX ? (__int128)INT64_MAX : (__int128)(int64_t)s->a + (__int128)wait;
    s->a = (uint64_t)(next > INT64_MAX ? INT64_MAX : (int64_t)next);
}

/* When the stored permits are back at the maximum (a fresh, cold state). */
static int64_t warm_whole_at(const struct tb_state *s, const struct sl_limit *l)
{
    uint64_t missing = 2 * warm_wr(l) - s->b;
    uint64_t two_r = 2 * l->requests;
    uint64_t rest = missing / two_r + (missing % two_r != 0);

    return sl__sat_add((int64_t)s->a, sl__sat_i64(rest));
}

static void warm_check(const struct tb_state *s, const struct sl_limit *l, int64_t now_ns,
                       uint64_t cost, struct sl_decision *d)
{
    struct tb_state after = *s;
    int64_t now = sl__max64(now_ns, s->last_ns);
    int64_t next_free = (int64_t)s->a;

    if (cost == 0 || next_free <= now) {
        d->verdict = SL_ALLOW;
        if (cost != 0)
            warm_reserve(&after, l, now, cost);
        d->remaining = (int64_t)after.a <= now ? 1 : 0;
    } else {
        d->verdict = SL_DENY;
        d->retry_after_ns = sl__sat_sub(next_free, now);
    }
    d->reset_ns = sl__max64(0, sl__sat_sub(warm_whole_at(&after, l), now));
}

/* ------------------------------------------------------------- ops */

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct tb_state);
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
    struct tb_state *s = st;

    memset(s, 0, sizeof(*s));
    s->last_ns = now_ns;
    if (is_warm(l)) {
        s->a = (uint64_t)now_ns; /* Guava: created at now, free at once */
        s->b = 2 * warm_wr(l);   /* starts cold: maxPermits stored */
    }
}

static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->quota = sl_limit_quota(l);
    if (is_warm(l))
        warm_check(st, l, now_ns, cost, d);
    else
        plain_check(st, l, now_ns, cost, d);
}

static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct tb_state *s = st;
    struct sl_decision after;

    if (is_warm(l)) {
        s->last_ns = sl__max64(s->last_ns, now_ns);
        warm_reserve(s, l, s->last_ns, cost);
    } else {
        plain_commit(s, l, now_ns, cost);
    }
    if (d->verdict != SL_DENY)
        return;
    /* A counted denial (count_rejected): the fields describe the state with
     * it recorded, so a client that waits retry_after is admitted. */
    check(st, l, now_ns, cost, &after);
    d->remaining = after.remaining;
    d->reset_ns = after.reset_ns;
    d->retry_after_ns = after.retry_after_ns;
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct tb_state *s = st;

    if (is_warm(l))
        return warm_whole_at(s, l);
    return sl__sat_add(s->last_ns, units_to_ns_ceil(deficit_get(s), l));
}

const struct sl__algo_ops sl__algo_token_bucket = {
    .name = "token_bucket",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .release = NULL,
};
