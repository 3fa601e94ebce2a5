/*
 * gcra.c - the generic cell rate algorithm, with redis-cell's CL.THROTTLE
 * semantics (CONTRACTS C3): emission interval T = period / requests, delay
 * variation tolerance T * (burst + 1), limit = burst + 1.
 *
 * The state is the theoretical arrival time (TAT) kept as a "debt": how far
 * the TAT lies ahead of the last time seen, in units of 1/requests ns, so
 * T = period_ns units exactly and nothing is rounded until a duration is
 * reported (rounded up to whole ns). 128-bit arithmetic; the debt saturates
 * at INT64_MAX ns so every reported duration fits.
 *
 * It does not read a clock, allocate, or know about keys; it does not map
 * durations to redis-cell's seconds or its -1 "allowed" retry (the RESP layer
 * does). A denial counted because of count_rejected pushes the TAT forward
 * exactly as an admission of the same cost would, and its decision then
 * describes the state with it recorded (so retry_after is honest).
 */
#include <string.h>

#include "algo/algo.h"
#include "util/sat.h"

typedef unsigned __int128 u128;

/* 24 bytes: the last time seen and the debt (TAT - last), in ns * requests. */
struct gcra_state {
    int64_t last_ns;
    uint64_t debt_lo;
    uint64_t debt_hi;
};

static u128 debt_get(const struct gcra_state *s)
{
    return ((u128)s->debt_hi << 64) | s->debt_lo;
}

static void debt_set(struct gcra_state *s, u128 v)
{
    s->debt_lo = (uint64_t)v;
    s->debt_hi = (uint64_t)(v >> 64);
}

static u128 dvt_of(const struct sl_limit *l);

/* The debt saturates here: INT64_MAX ns (reports stay finite), or the
 * tolerance if that is longer, so an admission is never clipped. Only a
 * counted denial can reach it. */
static u128 debt_cap(const struct sl_limit *l)
{
    u128 ns_max = (u128)INT64_MAX * l->requests;
    u128 dvt = dvt_of(l);

    return dvt > ns_max ? dvt : ns_max;
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

static int64_t units_floor_div(u128 v, uint64_t by)
{
    u128 q = div_u128(v, by, false);
    return q > (u128)INT64_MAX ? INT64_MAX : (int64_t)q;
}

static uint64_t burst_of(const struct sl_limit *l)
{
    return l->burst < 0 ? 0 : (uint64_t)l->burst;
}

/* Delay variation tolerance, T * (burst + 1), in debt units. */
static u128 dvt_of(const struct sl_limit *l)
{
    return (u128)(uint64_t)l->period_ns * ((u128)burst_of(l) + 1);
}

/* The debt left at `now` (the TTL of redis-cell), with `now` clamped to the
 * last time seen. */
static u128 debt_at(const struct gcra_state *s, const struct sl_limit *l, int64_t now_ns)
{
    u128 debt = debt_get(s);
    uint64_t elapsed = now_ns > s->last_ns ? (uint64_t)now_ns - (uint64_t)s->last_ns : 0;
    u128 paid = (u128)elapsed * l->requests;

    return paid >= debt ? 0 : debt - paid;
}

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct gcra_state);
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
    struct gcra_state *s = st;

    memset(s, 0, sizeof(*s));
    s->last_ns = now_ns;
}

/* Fill `d` for a state whose debt is `debt` after the decision. */
static void report(const struct sl_limit *l, u128 debt, struct sl_decision *d)
{
    u128 dvt = dvt_of(l);

    d->quota = sl_limit_quota(l);
    d->remaining = debt >= dvt ? 0 : units_floor_div(dvt - debt, (uint64_t)l->period_ns);
    d->reset_ns = units_to_ns_ceil(debt, l);
}

static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    const struct gcra_state *s = st;
    u128 debt = debt_at(s, l, now_ns);
    u128 inc = (u128)cost * (uint64_t)l->period_ns;
    u128 dvt = dvt_of(l);
    u128 next = debt + inc; /* < 2^128: debt < 2^127, inc < 2^127 */

    memset(d, 0, sizeof(*d));
    if (cost == 0 || next <= dvt) {
        d->verdict = SL_ALLOW;
        report(l, cost == 0 ? debt : next, d);
        return;
    }
    d->verdict = SL_DENY;
    report(l, debt, d);
    d->retry_after_ns = inc > dvt ? -1 : units_to_ns_ceil(next - dvt, l);
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
    struct gcra_state *s = st;
    u128 debt = debt_at(s, l, now_ns) + (u128)cost * (uint64_t)l->period_ns;
    u128 cap = debt_cap(l);

    debt_set(s, debt > cap ? cap : debt);
    s->last_ns = sl__max64(s->last_ns, now_ns);
    if (d->verdict == SL_DENY)
        refresh_denial(st, l, now_ns, cost, d);
}

static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct gcra_state *s = st;

    return sl__sat_add(s->last_ns, units_to_ns_ceil(debt_get(s), l));
}

const struct sl__algo_ops sl__algo_gcra = {
    .name = "gcra",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .release = NULL,
};
