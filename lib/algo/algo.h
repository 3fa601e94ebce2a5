/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * algo.h - the one ops table every algorithm implements (internal).
 *
 * Each lib/algo/<name>.c defines one `const struct sl__algo_ops` and nothing
 * else visible (but adaptive.c, adaptive_gradient.c and partition.c, which
 * are no algorithm of this table: they implement include/sluice_adaptive.h's
 * controllers, which adaptive_concurrency.c puts behind this table). The operations are
 * pure: they touch only the state blob they are given, never read a clock, never allocate, never
 * fail. Integer arithmetic only, saturating (lib/internal/sluice_sat.h); a `now` earlier than the
 * last time the state has seen is treated as that last time (docs/contracts.md §Time).
 *
 * Deciding is split in two so the limiter can be all-or-nothing across many
 * limits: check() computes the decision without changing the state, then
 * commit() records it — called only when the whole request is admitted, or,
 * for a denied request, on limits with count_rejected. A lone limit is
 * sl_algo_decide(): check, then commit when appropriate.
 */
#ifndef SL_ALGO_H
#define SL_ALGO_H

#include <stdbool.h>

#include "sluice.h"
#include "sluice_state.h"

/* States of at most this many bytes live inline in a table entry; larger
 * ones (sliding_log's ring, concurrency's slots) out of line. */
#define SL__STATE_INLINE 24

struct sl__algo_ops {
    const char *name;
    /* Bytes of state for these parameters; a multiple of 8. */
    size_t (*state_size)(const struct sl_limit *l);
    /* Algorithm-specific validation (sl_limit_validate does the common part):
     * SL_OK or SL_EINVAL with a static sentence in *why. */
    int (*validate)(const struct sl_limit *l, const char **why);
    /* A fresh state: what a key that was never seen starts with. */
    void (*init)(void *st, const struct sl_limit *l, int64_t now_ns);
    /* Decide `cost` (0 peeks) at `now` without changing `st`. Fills every
     * field of `d` (verdict, quota, remaining, reset, retry_after, delay). */
    void (*check)(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                  struct sl_decision *d);
    /* Record the request that check() decided as `d` (admitted, or denied
     * and counted because of count_rejected). May set d->lease. Never
     * called for cost 0. */
    void (*commit)(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                   struct sl_decision *d);
    /* The time from which the state equals a fresh one (fully drained); a
     * table may drop the entry then without changing any decision. */
    int64_t (*whole_at)(const void *st, const struct sl_limit *l);
    /* Is the state out of quota at `now`: would a check of cost 1 find no
     * request left (its d->remaining 0)? A client in that state is being
     * denied, and the table evicts such entries last. Pure and cheap (no
     * division where the algorithm can help it): the table asks it after
     * each change of the state. */
    bool (*denying)(const void *st, const struct sl_limit *l, int64_t now_ns);
    /* concurrency and adaptive_concurrency only (NULL elsewhere): free slot
     * `lease` of a request that took `latency_ns` (negative: unknown; only
     * adaptive_concurrency reads it). Called with the table's copy of the
     * limit (struct sl__ool), so it must not read beyond the sl_limit. */
    int (*release)(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t lease,
                   int64_t latency_ns);
    /* Optional (NULL: init): init() with a seed for the state's randomness,
     * which the table draws from the key's keyed hash (adaptive_concurrency:
     * its controller's jitter, so one key's run is reproducible). */
    void (*init_seeded)(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t seed);
    /* Give back an admitted `cost` recorded at `now` (sl__state_refund in
     * lib/internal/sluice_state.h); false when this state is not refunded. */
    bool (*refund)(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost);
    /*
     * What an evicted state still owes, for the table's summary
     * (table_debt.c): with the state's whole_at() (kept by the table), one
     * amount that restore() turns back into a state at least as restrictive
     * as this one. It is read without the limit (an inline entry does not
     * keep it): from the state's `bytes` and its layout alone. Amounts of
     * the same limit are combined by their maximum, so a larger amount must
     * never restore a more permissive state. False: this state must not be
     * evicted (concurrency: leases held).
     */
    bool (*fold)(const void *st, size_t bytes, uint64_t *amount);
    /* Turn the fresh state `st` (just init()ed at now) into the most
     * restrictive state that is whole at `until_ns` (> now) and holds at
     * most `amount`, as fold() made it: never more permissive than any
     * state that folded to (until_ns or earlier, amount or less). */
    void (*restore)(void *st, const struct sl_limit *l, int64_t now_ns, int64_t until_ns,
                    uint64_t amount);
};

extern const struct sl__algo_ops sl__algo_token_bucket;
extern const struct sl__algo_ops sl__algo_gcra;
extern const struct sl__algo_ops sl__algo_leaky_bucket;
extern const struct sl__algo_ops sl__algo_fixed_window;
extern const struct sl__algo_ops sl__algo_sliding_window;
extern const struct sl__algo_ops sl__algo_sliding_log;
extern const struct sl__algo_ops sl__algo_concurrency;
extern const struct sl__algo_ops sl__algo_adaptive_concurrency;

/* The ops of `l->algo` (never NULL for a validated limit). */
const struct sl__algo_ops *sl__algo_ops(enum sl_algo algo);

#endif /* SL_ALGO_H */
