/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * concurrency.c - the in-flight limit (docs/contracts.md §Algorithms), as nginx limit_conn
 * and Stripe's concurrent request limiter: at most `requests` slots held at
 * once. An admitted request of cost c takes c slots under one lease id;
 * release(lease) frees them; a lease not released within lease_ns frees
 * itself (so a crashed client cannot leak slots).
 *
 * State (struct sl__cc_state, lib/internal/sluice_state.h): a 32-byte header and up to `requests`
 * leases of 24 bytes each (id, expiry, slots), kept in the order they were taken, which is also the
 * order of their expiries (the clock is clamped so it never goes back and lease_ns is fixed for a
 * limit). `requests` is capped at SL__CONC_MAX (10,000), i.e. at most 240 KB for one key.
 *
 * A denial's retry is an estimate, not the lease: the header keeps a moving
 * average (weight 1/4 for each new one) of how long released leases were
 * held, and the lease that must end for the request to pass is expected to
 * end that long after it was taken (a lease held longer than that: one
 * more average from now). The estimate is at least 1 s (Retry-After's
 * unit) and never beyond that lease's expiry, which is the retry itself
 * while no release has been seen (a state the Redis stores just read).
 *
 * Lease ids are unique within one state: a counter seeded from the time the
 * state was created, never 0, so a lease held on an earlier incarnation of a
 * key (dropped from the table once all its leases expired) is unlikely to
 * match a new one.
 *
 * Deliberately does not: count rejected acquisitions (count_rejected does
 * not apply: a rejected request holds no slot and gets no lease), queue
 * waiters, read a clock, allocate, or use floating point.
 */
#include <string.h>

#include "algo/algo.h"
#include "sluice_sat.h"

/* Cap on `requests` for concurrency: bounds a key's state to 240 KB. */
#define SL__CONC_MAX 10000u

/* The state seen at `now`: clamped time, first unexpired lease, slots held. */
struct cc_view {
    int64_t t_ns;
    uint64_t first;
    uint64_t held;
};

static void view(const struct sl__cc_state *s, int64_t now_ns, struct cc_view *v)
{
    v->t_ns = sl__max64(now_ns, s->last_ns);
    v->first = 0;
    v->held = 0;
    while (v->first < s->n && s->leases[v->first].expires_ns <= v->t_ns)
        v->first++;
    for (uint64_t i = v->first; i < s->n; i++)
        v->held += s->leases[i].slots;
}

/* Until every held lease has expired; 0 when none is held. */
static int64_t reset_ns(const struct sl__cc_state *s, const struct cc_view *v)
{
    if (v->first == s->n)
        return 0;
    return s->leases[s->n - 1].expires_ns - v->t_ns;
}

#define EST_MIN_NS SL_NS_PER_S /* Retry-After counts whole seconds */

/* Until lease `ls` is expected to be released: taken at its expiry less
 * the lease, held for the average hold; at least EST_MIN_NS; never after
 * its expiry. */
static int64_t estimate_ns(const struct sl__cc_state *s, const struct sl_limit *l,
                           const struct cc_view *v, const struct sl__cc_lease *ls)
{
    int64_t bound = ls->expires_ns - v->t_ns, est;

    if (s->hold_ns < 0)
        return bound;
    est = sl__sat_add(sl__sat_sub(ls->expires_ns, l->lease_ns), s->hold_ns) - v->t_ns;
    if (est <= 0)
        est = s->hold_ns; /* held longer than usual: one more usual hold */
    if (est < EST_MIN_NS)
        est = EST_MIN_NS;
    return est < bound ? est : bound;
}

/* Until enough leases are expected to end that `cost` slots are free (no release
 * more assumed); cost <= requests. */
static int64_t retry_ns(const struct sl__cc_state *s, const struct sl_limit *l,
                        const struct cc_view *v, uint64_t cost)
{
    uint64_t must_free = v->held - (l->requests - cost), freed = 0;

    for (uint64_t i = v->first; i < s->n; i++) {
        freed += s->leases[i].slots;
        if (freed >= must_free)
            return estimate_ns(s, l, v, &s->leases[i]);
    }
    return 0; /* not reached: all held slots free eventually */
}

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct sl__cc_state) + sizeof(struct sl__cc_lease) * (size_t)l->requests;
}

static int validate(const struct sl_limit *l, const char **why)
{
    if (l->lease_ns <= 0) {
        *why = "concurrency: lease must be a positive duration (the time after which an "
               "unreleased slot frees itself)";
        return SL_EINVAL;
    }
    if (l->requests > SL__CONC_MAX) {
        *why = "concurrency: requests (max in flight) must be at most 10000";
        return SL_EINVAL;
    }
    return SL_OK;
}

static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl__cc_state *s = st;

    (void)l;
    s->next_id = now_ns > 0 ? (uint64_t)now_ns : 1;
    s->last_ns = INT64_MIN;
    s->n = 0;
    s->hold_ns = -1;
}

/* Fills every field of `d` for acquiring `cost` slots at `now` (clamped to
 * the last operation) without changing the state; expired leases count as
 * free. */
static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    const struct sl__cc_state *s = st;
    struct cc_view v;
    uint64_t free_n;

    view(s, now_ns, &v);
    free_n = v.held >= l->requests ? 0 : l->requests - v.held;
    memset(d, 0, sizeof(*d));
    d->quota = sl_limit_quota(l);
    if (cost <= free_n) {
        d->verdict = SL_ALLOW;
        d->remaining = sl__sat_i64(free_n - cost);
        d->reset_ns = cost > 0 ? sl__sat_add(v.t_ns, l->lease_ns) - v.t_ns : reset_ns(s, &v);
        return;
    }
    d->verdict = SL_DENY;
    d->remaining = sl__sat_i64(free_n);
    d->reset_ns = reset_ns(s, &v);
    d->retry_after_ns = cost > l->requests ? -1 : retry_ns(s, l, &v, cost);
}

/* Drops the expired leases at the front and moves the clock to `t_ns`. */
static void compact(struct sl__cc_state *s, const struct cc_view *v)
{
    if (v->first > 0) {
        memmove(s->leases, s->leases + v->first,
                sizeof(struct sl__cc_lease) * (size_t)(s->n - v->first));
        s->n -= v->first;
    }
    s->last_ns = v->t_ns;
}

/* Takes `cost` slots under a new lease id, returned in d->lease. A denied
 * request (count_rejected) takes nothing. */
static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct sl__cc_state *s = st;
    struct cc_view v;
    struct sl__cc_lease *ls;

    if (d->verdict == SL_DENY)
        return;
    view(s, now_ns, &v);
    compact(s, &v);
    if (s->n >= l->requests) /* cannot happen after an admitting check */
        return;
    ls = &s->leases[s->n++];
    ls->id = s->next_id;
    ls->expires_ns = sl__sat_add(v.t_ns, l->lease_ns);
    ls->slots = cost;
    s->next_id = s->next_id == UINT64_MAX ? 1 : s->next_id + 1;
    d->lease = ls->id;
}

/* Adds a released lease's hold time (from its taking to `t_ns`, at most
 * the lease) to the average. */
static void observe(struct sl__cc_state *s, const struct sl_limit *l, const struct sl__cc_lease *ls,
                    int64_t t_ns)
{
    int64_t held = t_ns - sl__sat_sub(ls->expires_ns, l->lease_ns);

    if (held < 0)
        held = 0;
    if (held > l->lease_ns)
        held = l->lease_ns;
    s->hold_ns = s->hold_ns < 0 ? held : s->hold_ns + (held - s->hold_ns) / 4;
}

/* Frees lease `lease`: SL_OK, or SL_ENOENT if it is not held (never taken,
 * released already, or expired). */
static int release(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t lease,
                   int64_t latency_ns)
{
    struct sl__cc_state *s = st;
    struct cc_view v;

    (void)latency_ns; /* the hold time is the state's own: from the taking to now */
    view(s, now_ns, &v);
    compact(s, &v);
    for (uint64_t i = 0; i < s->n; i++) {
        if (s->leases[i].id == lease && lease != 0) {
            observe(s, l, &s->leases[i], v.t_ns);
            memmove(s->leases + i, s->leases + i + 1,
                    sizeof(struct sl__cc_lease) * (size_t)(s->n - i - 1));
            s->n--;
            return SL_OK;
        }
    }
    return SL_ENOENT;
}

/* Whole once the newest lease has expired (or nothing is held). */
static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct sl__cc_state *s = st;

    (void)l;
    return s->n == 0 ? INT64_MIN : s->leases[s->n - 1].expires_ns;
}

/* Out of quota: a peek leaves no request (the general answer; this
 * algorithm's check is cheap enough and rarely asked). */
static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    struct sl_decision d;

    check(st, l, now_ns, 0, &d);
    return d.remaining == 0;
}

/* Held leases are never evicted: a summary cannot hold who holds what. */
static bool fold(const void *st, size_t bytes, uint64_t *amount)
{
    (void)st;
    (void)bytes;
    *amount = 0;
    return false;
}

/* Not reached (nothing is folded); the fresh state stays. */
static void restore(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount)
{
    (void)st;
    (void)l;
    (void)now_ns;
    (void)until_ns;
    (void)amount;
}

const struct sl__algo_ops sl__algo_concurrency = {
    .name = "concurrency",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .denying = denying,
    .release = release,
    .fold = fold,
    .restore = restore,
    .refund = NULL, /* slots are released, not refunded */
};
