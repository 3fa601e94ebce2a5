/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid.h - the hybrid store (internal to store/): decisions in a local
 * state table at memory speed, the counts each node recorded pushed to
 * one Redis every sync_interval and the fleet's totals read back into the
 * local table (docs/distributed.md, "The hybrid store").
 *
 * Each worker's store is one node of the fleet: its own table (sized by
 * store.hybrid.max_bytes), its own table of kept deltas (at most
 * store.hybrid.max_keys keys), its own Redis connection for the syncs.
 * Requests with a limit that cannot be synced as an amount (sliding_log,
 * concurrency, a warm-up token bucket) are decided through the Redis
 * store (store/redis/), configured by the same store.redis.* keys.
 *
 * Time: a sync is due when a request's time (the caller's clock, a test
 * clock included) has passed the previous sync by sync_interval; a
 * real-time timer of the same period pushes what is pending when no
 * request comes, at the last time a request carried. The store never
 * reads a clock of its own.
 *
 * Threads: a store is used on its worker's loop thread only, except the
 * stats, which any thread may read.
 */
#ifndef SL_STORE_HYBRID_H
#define SL_STORE_HYBRID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis.h"
#include "store.h"

struct sl__hybrid_config {
    int64_t sync_interval_ms; /* store.hybrid.sync_interval */
    int64_t timeout_ms;       /* store.hybrid.timeout: one sync call */
    unsigned max_keys;        /* store.hybrid.max_keys: keys with kept deltas, per worker */
    unsigned batch;           /* store.hybrid.batch: keys per script call */
    size_t max_bytes;         /* store.hybrid.max_bytes: the local table, per worker */
    /* Not a key: no sync unless sl__store_hybrid_sync() is called (the
     * benchmark replays a trace deterministically this way). */
    bool manual_sync;
    /* The Redis store's configuration (store.redis.*), set by kinds.c:
     * the connection of the syncs, and the store of the Redis path. */
    const struct sl__redis_config *redis;
};

/* Counters for /metrics and the tests: a snapshot, any thread. */
struct sl__hybrid_stats {
    uint64_t checks;               /* check/peek/reset decided in the local table */
    uint64_t redis_path;           /* operations handed to the Redis store */
    uint64_t syncs;                /* sync rounds that sent something */
    uint64_t sync_calls;           /* script calls sent */
    uint64_t sync_keys;            /* keys pushed (or read) in them */
    uint64_t sync_failures;        /* calls lost (timeout, error, no connection) */
    uint64_t sync_redirects;       /* calls sent again (a cluster's MOVED, ASK, TRYAGAIN...) */
    uint64_t absorbed;             /* counts/amounts of other nodes added locally */
    uint64_t deltas_dropped;       /* kept deltas dropped: stale, or no room */
    uint64_t untracked;            /* commits not kept: no room or key too long */
    uint64_t final_pushes;         /* keys pushed by the blocking push at shutdown */
    uint64_t fleet_resets;         /* resets sent to Redis for the fleet (one per key and limit) */
    uint64_t fleet_resets_applied; /* other nodes' resets acted on here */
    uint64_t fleet_resets_unsent;  /* resets that reached no other node (Redis away) */
    uint64_t keys;                 /* keys tracked now (gauge) */
    uint64_t kept;                 /* deltas waiting to be pushed now (gauge, sum) */
    uint64_t in_flight;            /* calls out now (gauge) */
    bool connected;                /* the sync connection is ready */
};

/* The key table (store/hybrid/hybrid_kind.c). */
struct sl__key;
const struct sl__key *sl__hybrid_config_keys(size_t *n);
/* SL_OK or SL_EINVAL with err: needs one Redis (not a cluster). */
int sl__hybrid_config_check(const struct sl__hybrid_config *c, char *err, size_t errlen);

int sl__store_hybrid_new(uv_loop_t *loop, const struct sl__hybrid_config *c,
                         struct sl__store **out);

/* What the hybrid stores of one process's workers share: the Redis path's
 * process-wide state, and every worker's local table, so that a reset
 * forgets the key on every worker of the node, not only on the one that
 * served it. Made before the workers' stores, freed after them. */
struct sl__hyshared;
struct sl__hyshared *sl__hyshared_new(void);
void sl__hyshared_free(struct sl__hyshared *sh);
/* The same, with the server's log and the Redis store's process-wide
 * state for the Redis path (store/redis/redis.h). */
int sl__store_hybrid_new_logged(uv_loop_t *loop, const struct sl__hybrid_config *c,
                                sl__store_log_fn log, void *log_arg, struct sl__hyshared *shared,
                                struct sl__store **out);
void sl__store_hybrid_stats(const struct sl__store *s, struct sl__hybrid_stats *out);
/* Start a sync at `now_ns` now (the tests; the store calls it itself when
 * one is due). Does nothing while a previous sync is out. */
void sl__store_hybrid_sync(struct sl__store *s, int64_t now_ns);
/* The Redis store of the Redis path (NULL until first needed). */
struct sl__store *sl__store_hybrid_inner(struct sl__store *s);

#endif /* SL_STORE_HYBRID_H */
