/*
 * leaky_bucket.c - nginx limit_req (CONTRACTS C3): a bucket that leaks
 * `requests` per `period`; a request adds its cost; 1 + burst requests pass
 * at one instant; a request whose excess (water above the one request being
 * served) is above `delay` is admitted but must wait (excess - delay) / rate;
 * one that would overflow burst + 1 is denied and not counted.
 *
 * nginx keeps excess in 1/1000 requests and time in ms, truncating the leak
 * at each request; here the water is kept exactly, in units of 1/requests ns
 * of drain time (one request = period_ns units), 128-bit, and durations are
 * reported rounded up to whole ns. So decisions match nginx whenever nginx's
 * own arithmetic is exact, and are finer otherwise. The water saturates at
 * INT64_MAX ns of drain time.
 *
 * It does not read a clock, allocate, or hold a request for its delay (the
 * caller does). A denial counted because of count_rejected adds its cost to
 * the water as an admission would (so it leaks out like one), and its
 * decision then describes the state with it recorded.
 */
#include <string.h>

#include "algo/algo.h"
#include "util/sat.h"

typedef unsigned __int128 u128;

/* 24 bytes: the last time seen and the water at that time. */
struct leaky_state {
    int64_t last_ns;
    uint64_t water_lo; /* ns * requests of drain time, low half */
    uint64_t water_hi;
};

static u128 water_get(const struct leaky_state *s)
{
    return ((u128)s->water_hi << 64) | s->water_lo;
}

static void water_set(struct leaky_state *s, u128 v)
{
    s->water_lo = (uint64_t)v;
    s->water_hi = (uint64_t)(v >> 64);
}

static u128 capacity_of(const struct sl_limit *l);

/* The water saturates here: INT64_MAX ns of drain (reports stay finite), or
 * the capacity if that is larger, so an admission is never clipped. Only a
 * counted denial can reach it. */
static u128 water_cap(const struct sl_limit *l)
{
    u128 ns_max = (u128)INT64_MAX * l->requests;
    u128 cap = capacity_of(l);

    return cap > ns_max ? cap : ns_max;
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

static uint64_t burst_of(const struct sl_limit *l)
{
    return l->burst < 0 ? 0 : (uint64_t)l->burst;
}

/* Requests of excess let through undelayed (nodelay: all of the burst). */
static uint64_t delay_of(const struct sl_limit *l)
{
    return l->nodelay ? burst_of(l) : (uint64_t)l->delay;
}

/* What the bucket holds: (burst + 1) requests, in water units. */
static u128 capacity_of(const struct sl_limit *l)
{
    return (u128)(uint64_t)l->period_ns * ((u128)burst_of(l) + 1);
}

/* The water left at `now`, `now` clamped to the last time seen. */
static u128 water_at(const struct leaky_state *s, const struct sl_limit *l, int64_t now_ns)
{
    u128 water = water_get(s);
    uint64_t elapsed = now_ns > s->last_ns ? (uint64_t)now_ns - (uint64_t)s->last_ns : 0;
    u128 leaked = (u128)elapsed * l->requests;

    return leaked >= water ? 0 : water - leaked;
}

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct leaky_state);
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
    struct leaky_state *s = st;

    memset(s, 0, sizeof(*s));
    s->last_ns = now_ns;
}

/* Fill quota, remaining and reset for a bucket holding `water`. */
static void report(const struct sl_limit *l, u128 water, struct sl_decision *d)
{
    u128 cap = capacity_of(l);
    u128 room = water >= cap ? 0 : div_u128(cap - water, (uint64_t)l->period_ns, false);

    d->quota = sl_limit_quota(l);
    d->remaining = room > (u128)INT64_MAX ? INT64_MAX : (int64_t)room;
    d->reset_ns = units_to_ns_ceil(water, l);
}

static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    const struct leaky_state *s = st;
    u128 water = water_at(s, l, now_ns);
    u128 add = (u128)cost * (uint64_t)l->period_ns;
    u128 cap = capacity_of(l);
    u128 next = water + add; /* < 2^128: water < 2^127, add < 2^127 */
    u128 undelayed = (u128)(uint64_t)l->period_ns * ((u128)delay_of(l) + 1);

    memset(d, 0, sizeof(*d));
    if (cost == 0) {
        d->verdict = SL_ALLOW;
        report(l, water, d);
        return;
    }
    if (next > cap) {
        d->verdict = SL_DENY;
        report(l, water, d);
        d->retry_after_ns = add > cap ? -1 : units_to_ns_ceil(next - cap, l);
        return;
    }
    report(l, next, d);
    if (next > undelayed) {
        d->verdict = SL_DELAY;
        d->delay_ns = units_to_ns_ceil(next - undelayed, l);
    } else {
        d->verdict = SL_ALLOW;
    }
}

/* After a counted denial (count_rejected), the fields describe the state
 * with it recorded, so a client that waits retry_after is admitted. */
static void refresh_denial(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                           struct sl_decision *d)
{
    struct sl_decision after;

    check(st, l, now_ns, cost, &after);
    d->remaining = after.remaining;
    d->reset_ns = after.reset_ns;
    d->retry_after_ns = after.retry_after_ns;
}

static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct leaky_state *s = st;
    u128 water = water_at(s, l, now_ns) + (u128)cost * (uint64_t)l->period_ns;
    u128 cap = water_cap(l);

    water_set(s, water > cap ? cap : water);
    s->last_ns = sl__max64(s->last_ns, now_ns);
    if (d->verdict == SL_DENY)
        refresh_denial(st, l, now_ns, cost, d);
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct leaky_state *s = st;

    return sl__sat_add(s->last_ns, units_to_ns_ceil(water_get(s), l));
}

const struct sl__algo_ops sl__algo_leaky_bucket = {
    .name = "leaky_bucket",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .release = NULL,
};
