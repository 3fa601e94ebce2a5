/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * adaptive_concurrency.c - a concurrency limit that an adaptive controller
 * (include/sluice_adaptive.h) learns from the latencies reported at
 * release, behind the ops table (docs/algorithms.md §adaptive_concurrency).
 * Per key: admitted while fewer than the controller's limit are in flight;
 * an admitted request holds one slot under a lease id; release(lease,
 * latency) frees it and feeds the latency as a sample (no latency: freed,
 * no sample); a lease not released within lease_ns frees itself and counts
 * as a drop, with lease_ns as its latency.
 *
 * State: a 24-byte header, the controller (struct sl_adaptive, its
 * configuration copied in, so that a release needs nothing but the state)
 * and max_limit leases of 16 bytes (expiry, low half of the id, in flight at
 * admission), in the order taken, which is their expiry order (lease_ns is
 * fixed, the clock never goes back). max_limit is at most
 * SL_ADAPTIVE_MAX_LIMIT: at most ~162 KB per key.
 *
 * check() must not change the state, but the controller moves with time
 * (expired leases are drops; gradient's windows close at deadlines): when
 * either is due, check decides on a copy of the controller (on the stack,
 * no allocation) brought up to `now`, and commit brings the state itself
 * there the same way, so both see the same limit.
 *
 * Deliberately does not: queue waiters, take a cost above 1 (one request,
 * one slot, one sample: a cost above 1 is denied, never admittable),
 * count rejected acquisitions, or read a clock.
 */
#include <string.h>

#include "algo/algo.h"
#include "sluice_adaptive.h"
#include "sluice_sat.h"

/* An idle key (nothing held) is kept this long after its last operation,
 * so that its learned limit survives pauses in traffic; then it is drained
 * (the table may drop it; it starts again from initial_limit). */
#define KEEP_NS (600 * SL_NS_PER_S)

struct ac_lease {
    int64_t expires_ns; /* the slot is free from this time on */
    uint32_t id;        /* low half of the lease id, never 0 */
    uint32_t inflight;  /* in flight when admitted, itself included (the ticket's) */
};

struct ac_state {
    uint32_t epoch;   /* high half of this state's lease ids, from its creation */
    uint32_t next_id; /* low half of the next lease id; never 0 */
    uint32_t n;       /* leases in `leases` (some may have expired) */
    uint32_t cap;     /* room in `leases`: max_limit */
    int64_t lease_ns;
    struct sl_adaptive a;
    struct ac_lease leases[];
};

/* The configuration after `l` in its struct sl_adaptive_limit; for a bare
 * sl_limit (never validated: sl_limit_validate refuses it), the defaults of
 * gradient2 under `requests`, so that no call reads past it. */
static void config_of(const struct sl_limit *l, struct sl_adaptive_config *c)
{
    uint32_t max;

    if (l->adaptive) {
        *c = ((const struct sl_adaptive_limit *)(const void *)l)->cfg;
        return;
    }
    sl_adaptive_config_init(c, SL_ADAPTIVE_GRADIENT2);
    max = l->requests == 0                      ? 1
          : l->requests > SL_ADAPTIVE_MAX_LIMIT ? SL_ADAPTIVE_MAX_LIMIT
                                                : (uint32_t)l->requests;
    c->max_limit = max;
    c->min_limit = c->min_limit > max ? max : c->min_limit;
    c->initial_limit = c->initial_limit > max ? max : c->initial_limit;
}

/* Slots of the state: the controller never admits more than max_limit. */
static uint32_t slots_of(const struct sl_limit *l)
{
    struct sl_adaptive_config c;

    config_of(l, &c);
    return c.max_limit > SL_ADAPTIVE_MAX_LIMIT ? SL_ADAPTIVE_MAX_LIMIT : c.max_limit;
}

static size_t state_size(const struct sl_limit *l)
{
    return sizeof(struct ac_state) + sizeof(struct ac_lease) * (size_t)slots_of(l);
}

static int validate(const struct sl_limit *l, const char **why)
{
    const struct sl_adaptive_limit *al = (const struct sl_adaptive_limit *)(const void *)l;

    if (!l->adaptive) {
        *why = "adaptive_concurrency: the limit must be made with sl_adaptive_limit_init (its "
               "controller configuration follows it)";
        return SL_EINVAL;
    }
    if (l->lease_ns <= 0) {
        *why = "adaptive_concurrency: lease must be a positive duration (the time after which "
               "an unreleased slot frees itself, counted as a drop)";
        return SL_EINVAL;
    }
    if (sl_adaptive_config_validate(&al->cfg, why) != SL_OK)
        return SL_EINVAL;
    if (al->cfg.max_limit > SL_ADAPTIVE_MAX_LIMIT) {
        *why = "adaptive_concurrency: max_limit must be at most 10000";
        return SL_EINVAL;
    }
    if (l->requests != al->cfg.max_limit) {
        *why = "adaptive_concurrency: requests must equal max_limit (sl_limit_finish sets it)";
        return SL_EINVAL;
    }
    return SL_OK;
}

static void init_seeded(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t seed)
{
    struct ac_state *s = st;
    struct sl_adaptive_config c;
    uint64_t e = sl_siphash((const uint8_t *)"sluice-ac-epoch", &now_ns, sizeof(now_ns));

    config_of(l, &c);
    s->epoch = (uint32_t)e;
    s->next_id = 1;
    s->n = 0;
    s->cap = slots_of(l);
    s->lease_ns = l->lease_ns > 0 ? l->lease_ns : 1;
    if (sl_adaptive_init(&s->a, &c, now_ns, seed, NULL) != SL_OK) {
        /* not validated (a bare limit, or a configuration out of range):
         * the defaults under max_limit, so the state is still sound */
        sl_adaptive_config_init(&c, SL_ADAPTIVE_AIMD);
        c.initial_limit = c.min_limit = c.max_limit = s->cap;
        (void)sl_adaptive_init(&s->a, &c, now_ns, seed, NULL);
    }
}

/* Without a key (sl_algo_init, a peek at an absent key): seeded from the
 * limit's id. */
static void init(void *st, const struct sl_limit *l, int64_t now_ns)
{
    init_seeded(st, l, now_ns, l->id);
}

/* The latest time the state has seen, and `now` clamped to it. */
static int64_t clamp(const struct ac_state *s, int64_t now_ns)
{
    return now_ns > s->a.last_ns ? now_ns : s->a.last_ns;
}

/* Leases at the front that have expired at t. */
static uint32_t expired(const struct ac_state *s, int64_t t)
{
    uint32_t k = 0;

    while (k < s->n && s->leases[k].expires_ns <= t)
        k++;
    return k;
}

static struct sl_adaptive_ticket ticket_of(const struct ac_state *s, const struct ac_lease *ls)
{
    struct sl_adaptive_ticket tk = {
        .start_ns = sl__sat_sub(ls->expires_ns, s->lease_ns),
        .inflight = ls->inflight,
    };
    return tk;
}

/* Would the controller change by merely reaching t (gradient's deadlines)? */
static bool tick_due(const struct sl_adaptive *a, int64_t t)
{
    if (a->cfg.algo != SL_ADAPTIVE_GRADIENT || a->phase != SL_ADAPTIVE_STEADY)
        return false;
    return a->window_end_ns <= t || a->next_min_rtt_ns <= t;
}

/* Bring controller `a` to time t: the first k leases of `s` expired (each a
 * drop at its expiry, its latency the lease), then the ticks due. */
static void advance(struct sl_adaptive *a, const struct ac_state *s, uint32_t k, int64_t t)
{
    for (uint32_t i = 0; i < k; i++) {
        struct sl_adaptive_ticket tk = ticket_of(s, &s->leases[i]);
        sl_adaptive_release(a, &tk, s->leases[i].expires_ns, s->lease_ns, SL_ADAPTIVE_DROPPED);
    }
    sl_adaptive_tick(a, t);
}

/* Drops the expired leases at the front (their drops fed) and moves the
 * controller to t. */
static void settle(struct ac_state *s, int64_t t)
{
    uint32_t k = expired(s, t);

    if (k == 0 && !tick_due(&s->a, t))
        return;
    advance(&s->a, s, k, t);
    memmove(s->leases, s->leases + k, sizeof(struct ac_lease) * (size_t)(s->n - k));
    s->n -= k;
}

/* Until the newest lease expires; 0 when none is held. */
static int64_t reset_ns(const struct ac_state *s, uint32_t first, int64_t t)
{
    return first >= s->n ? 0 : s->leases[s->n - 1].expires_ns - t;
}

/* Decides `cost` at now without changing the state: on the controller as
 * it stands, or, when time has moved it (drops, deadlines), on a copy. */
static void check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d)
{
    const struct ac_state *s = st;
    int64_t t = clamp(s, now_ns);
    uint32_t k = expired(s, t), limit, held;

    (void)l;
    if (k > 0 || tick_due(&s->a, t)) {
        struct sl_adaptive copy = s->a;
        advance(&copy, s, k, t);
        limit = copy.limit;
        held = copy.inflight;
    } else {
        limit = s->a.limit;
        held = s->a.inflight;
    }
    memset(d, 0, sizeof(*d));
    d->quota = limit;
    d->remaining = held >= limit ? 0 : limit - held;
    if (cost == 0) {
        d->reset_ns = reset_ns(s, k, t);
        return;
    }
    if (cost == 1 && held < limit) {
        d->verdict = SL_ALLOW;
        d->remaining--;
        d->reset_ns = sl__sat_add(t, s->lease_ns) - t;
        return;
    }
    d->verdict = SL_DENY;
    d->reset_ns = reset_ns(s, k, t);
    /* One slot frees at the latest when the oldest live lease expires
     * (releases may come sooner; its drop may lower the limit): the
     * estimate. A cost above 1 is never admitted. */
    d->retry_after_ns = cost > 1 ? -1 : k < s->n ? s->leases[k].expires_ns - t : 0;
}

/* Takes one slot under a new lease id, returned in d->lease. */
static void commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d)
{
    struct ac_state *s = st;
    struct sl_adaptive_ticket tk;
    int64_t t = clamp(s, now_ns);
    struct ac_lease *ls;

    (void)l;
    if (d->verdict == SL_DENY || cost != 1)
        return;
    settle(s, t);
    if (s->n >= s->cap || !sl_adaptive_acquire(&s->a, t, &tk))
        return; /* cannot happen after an admitting check */
    ls = &s->leases[s->n++];
    ls->expires_ns = sl__sat_add(tk.start_ns, s->lease_ns);
    ls->id = s->next_id;
    ls->inflight = tk.inflight;
    s->next_id = s->next_id == UINT32_MAX ? 1 : s->next_id + 1;
    d->lease = (uint64_t)s->epoch << 32 | ls->id;
}

/* Frees lease `lease`: SL_OK, or SL_ENOENT if it is not held (never taken,
 * released already, or expired: then it was counted as a drop). */
static int release(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t lease,
                   int64_t latency_ns)
{
    struct ac_state *s = st;
    int64_t t = clamp(s, now_ns);

    (void)l;
    settle(s, t);
    if ((uint32_t)(lease >> 32) != s->epoch || (uint32_t)lease == 0)
        return SL_ENOENT;
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->leases[i].id != (uint32_t)lease)
            continue;
        struct sl_adaptive_ticket tk = ticket_of(s, &s->leases[i]);
        memmove(s->leases + i, s->leases + i + 1, sizeof(struct ac_lease) * (size_t)(s->n - i - 1));
        s->n--;
        sl_adaptive_release(&s->a, &tk, t, latency_ns < 0 ? -1 : latency_ns,
                            latency_ns < 0 ? SL_ADAPTIVE_IGNORED : SL_ADAPTIVE_SUCCESS);
        return SL_OK;
    }
    return SL_ENOENT;
}

/* Drained once nothing is held and it has been idle for KEEP_NS. */
static int64_t whole_at(const void *st, const struct sl_limit *l)
{
    const struct ac_state *s = st;
    int64_t idle = sl__sat_add(s->a.last_ns, KEEP_NS);

    (void)l;
    if (s->n == 0)
        return idle;
    return sl__max64(idle, s->leases[s->n - 1].expires_ns);
}

/* Out of slots at its last decision (pending drops not applied: cheap). */
static bool denying(const void *st, const struct sl_limit *l, int64_t now_ns)
{
    const struct ac_state *s = st;

    (void)l;
    (void)now_ns;
    return s->a.inflight >= s->a.limit;
}

/* Evictable when nothing is held, owing nothing (restore is NULL: the
 * table keeps no summary for it; an evicted key starts from initial_limit). */
static bool fold(const void *st, size_t bytes, uint64_t *amount)
{
    const struct ac_state *s = st;

    (void)bytes;
    *amount = 0;
    return s->n == 0;
}

const struct sl__algo_ops sl__algo_adaptive_concurrency = {
    .name = "adaptive_concurrency",
    .state_size = state_size,
    .validate = validate,
    .init = init,
    .init_seeded = init_seeded,
    .check = check,
    .commit = commit,
    .whole_at = whole_at,
    .denying = denying,
    .release = release,
    .fold = fold,
    .restore = NULL, /* nothing owed: see fold */
    .refund = NULL,  /* slots are released, not refunded */
};
