/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sluice_state.h - the algorithms' states as the library lays them out, and
 * the operations over them, for a layer that keeps states somewhere else
 * than the library's table (internal; not installed).
 *
 * The Redis module (redis-module/) decides inside Redis with the library's
 * own algorithms: it reads a state stored in Redis into one of the layouts
 * below, runs check/commit/refund on it exactly as the table does, and
 * writes it back. So the layouts are defined here, once, and every
 * lib/algo/<name>.c uses these definitions: a change of layout is seen by
 * the module at compile time instead of drifting.
 *
 * Rules: the same as sluice_int.h (pure, the caller's time, no allocation).
 * A state blob is sl_algo_state_size() bytes, 8-byte aligned, made fresh by
 * sl_algo_init(). Times are Unix epoch ns; INT64_MIN means "none yet".
 */
#ifndef SL_SLUICE_STATE_H
#define SL_SLUICE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

/* token_bucket (plain), gcra, leaky_bucket: a backlog that drains at
 * `requests` units per ns, in units of 1/requests ns (one request is
 * period_ns units), 128-bit as lo/hi; see lib/algo/backlog.h. */
struct sl__backlog {
    int64_t last_ns;
    uint64_t lo;
    uint64_t hi;
};

/* token_bucket with warmup (Guava SmoothWarmingUp): the next free time and
 * the stored permits in units of 1/(2 * period_ns) permit. */
struct sl__warm_state {
    int64_t last_ns;
    int64_t next_free_ns;
    uint64_t stored;
};

/* fixed_window: the last recorded request's time and its window's count. */
struct sl__fw_state {
    int64_t last_ns; /* INT64_MIN: none */
    uint64_t count;
};

/* sliding_window: the last recorded time and the counts of its sub-window
 * and of the `buckets` before it (8 * (buckets + 2) bytes; buckets = 1: the
 * window's count and the previous window's). */
struct sl__sw_state {
    int64_t last_ns; /* time of the last recorded request; INT64_MIN: none */
    uint64_t c[];    /* buckets + 1 counts: c[0] last_ns's sub-window, c[j] j before it */
};

/* sliding_log: a ring of `requests` timestamps (ns), oldest at `head`,
 * `len` of them in use, non-decreasing from head. */
struct sl__sg_state {
    uint32_t head;
    uint32_t len;
    int64_t ring[];
};

/* concurrency: leases in the order taken (also the order of expiry). */
struct sl__cc_lease {
    uint64_t id;
    int64_t expires_ns; /* the slots are free from this time on */
    uint64_t slots;
};
struct sl__cc_state {
    uint64_t next_id; /* the id the next lease gets; never 0 */
    int64_t last_ns;  /* last time an operation changed the state; INT64_MIN: none */
    uint64_t n;       /* leases in use in `leases` (some may have expired) */
    int64_t hold_ns;  /* moving average of how long released leases were held; -1: none yet */
    struct sl__cc_lease leases[];
};

/* The steps of sl_algo_decide() apart, for an all-or-nothing decision over
 * several states (as lib/limiter.c makes): check() decides `cost` at `now`
 * without changing the state; commit() records what check() decided (an
 * admission, or a denial counted because of count_rejected; never cost 0).
 * whole_at(): the time from which the state equals a fresh one. */
void sl__state_check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                     struct sl_decision *d);
void sl__state_commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                      struct sl_decision *d);
int64_t sl__state_whole_at(const void *st, const struct sl_limit *l);

/*
 * Give back what an admitted request of `cost` recorded at `now_ns` (a
 * check on Redis Cluster that other slots denied, see docs/distributed.md):
 * fixed and sliding windows subtract it from the window it was counted in
 * (nothing once that window is over), a sliding log removes `cost` entries
 * logged at or after `now_ns`, and the backlog algorithms lower the backlog
 * by `cost` requests (not below 0; if it drained in between, that gives back
 * up to what drained more than the request added). Returns false, with the
 * state unchanged, for what is not refunded: token_bucket with warmup (not a
 * level) and concurrency (its slots are released instead).
 */
bool sl__state_refund(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost);

#endif /* SL_SLUICE_STATE_H */
