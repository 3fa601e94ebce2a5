/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid_kind.c - the hybrid store as a kind of store (store/kind.h): its
 * constructor, its lines in /metrics (its own, then the Redis path's), and
 * rules across nodes, which it shares exactly as the Redis store does. Its
 * keys are hybrid_config.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybrid.h"
#include "kind.h"

static int create(const void *cfg, const struct sl__store_env *env, struct sl__store **out)
{
    /* env->lim is not used: each worker is a node with its own table */
    return sl__store_hybrid_new_logged(env->loop, cfg, env->log, env->log_arg, env->shared, out);
}

/* Shared by the workers' stores: the Redis path's process-wide state (its
 * outage events logged once per process, as the Redis store's are) and
 * the list of the workers' tables a reset clears. */
static void *shared_new(void)
{
    return sl__hyshared_new();
}

static void shared_free(void *shared)
{
    sl__hyshared_free(shared);
}

/* ------------------------------------------------------------ metrics */

static const struct sl__store_counter counters[] = {
#define C(field, help)                                                                             \
    {                                                                                              \
        "sluice_store_hybrid_" #field "_total", help, offsetof(struct sl__hybrid_stats, field)     \
    }
    C(checks, "Checks, peeks and resets decided in the local table."),
    C(redis_path,
      "Operations decided through the Redis store (sliding_log, concurrency, warm-up)."),
    C(syncs, "Sync rounds that sent something to Redis."),
    C(sync_calls, "Sync script calls sent (one per batch of keys)."),
    C(sync_keys, "Keys pushed or read by the sync calls."),
    C(sync_failures, "Sync calls lost (timeout, error, connection gone); their deltas are kept."),
    C(sync_redirects,
      "Sync calls sent again on a cluster (after MOVED, ASK, TRYAGAIN or CLUSTERDOWN)."),
    C(absorbed, "Counts and amounts recorded by other nodes, added to the local table."),
    C(deltas_dropped, "Kept deltas dropped unpushed: their window or bucket was over."),
    C(untracked, "Costs recorded locally but not kept for syncing (max_keys full, long key)."),
    C(final_pushes, "Keys pushed by the blocking push when a store stops."),
    C(fleet_resets, "Resets sent to Redis for every node (one per key and limit)."),
    C(fleet_resets_applied, "Resets made on another node, acted on here at a sync."),
    C(fleet_resets_unsent,
      "Resets Redis was not told of (not connected, or the call failed): this node only."),
#undef C
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

#define put sl__store_put

#define MAX_WORKERS 1024

static bool metrics(struct sl__store *const *stores, unsigned n, char *buf, size_t cap, size_t *len)
{
    struct sl__hybrid_stats sum = {0}, st;
    struct sl__store *inner[MAX_WORKERS];
    unsigned connected = 0, n_inner = 0;
    size_t start = *len;
    bool ok = true;

    for (unsigned i = 0; i < n; i++) {
        sl__store_hybrid_stats(stores[i], &st);
        sl__store_add_counters(counters, NCOUNTERS, &sum, &st);
        sum.keys += st.keys;
        sum.kept += st.kept;
        sum.in_flight += st.in_flight;
        connected += st.connected;
        if (n_inner < MAX_WORKERS && sl__store_hybrid_inner(stores[i]) != NULL)
            inner[n_inner++] = sl__store_hybrid_inner(stores[i]);
    }
    ok = sl__store_put_counters(buf, cap, len, counters, NCOUNTERS, &sum);
    ok =
        ok &&
        put(buf, cap, len,
            "# HELP sluice_store_hybrid_keys Keys whose counts are kept for syncing.\n"
            "# TYPE sluice_store_hybrid_keys gauge\n"
            "sluice_store_hybrid_keys %llu\n"
            "# HELP sluice_store_hybrid_kept Counts and amounts recorded locally, not yet pushed.\n"
            "# TYPE sluice_store_hybrid_kept gauge\n"
            "sluice_store_hybrid_kept %llu\n"
            "# HELP sluice_store_hybrid_in_flight Sync calls awaiting a reply.\n"
            "# TYPE sluice_store_hybrid_in_flight gauge\n"
            "sluice_store_hybrid_in_flight %llu\n"
            "# HELP sluice_store_hybrid_workers_connected Workers whose sync connection is ready.\n"
            "# TYPE sluice_store_hybrid_workers_connected gauge\n"
            "sluice_store_hybrid_workers_connected %u\n",
            (unsigned long long)sum.keys, (unsigned long long)sum.kept,
            (unsigned long long)sum.in_flight, connected);
    if (ok && n_inner > 0 && sl__store_kind_redis.metrics != NULL)
        ok = sl__store_kind_redis.metrics(inner, n_inner, buf, cap, len);
    if (!ok)
        *len = start;
    return ok;
}

/* The Redis path's members (its nodes) in the health view. */
static bool health_members(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                           size_t *len)
{
    struct sl__store *inner[MAX_WORKERS];
    unsigned n_inner = 0;

    for (unsigned i = 0; i < n && n_inner < MAX_WORKERS; i++)
        if (sl__store_hybrid_inner(stores[i]) != NULL)
            inner[n_inner++] = sl__store_hybrid_inner(stores[i]);
    if (n_inner == 0 || sl__store_kind_redis.health_members == NULL)
        return true;
    return sl__store_kind_redis.health_members(inner, n_inner, buf, cap, len);
}

/* ------------------------------------------------------------ rules across nodes */

static bool rules_shared(const void *cfg)
{
    return sl__store_kind_redis.rules_shared(((const struct sl__hybrid_config *)cfg)->redis);
}

static int rules_publish(const void *cfg, const char *id, const char *yaml, size_t len,
                         uint64_t *version)
{
    return sl__store_kind_redis.rules_publish(((const struct sl__hybrid_config *)cfg)->redis, id,
                                              yaml, len, version);
}

static int rules_subscribe(const void *cfg, uv_loop_t *loop, const char *db_path,
                           void (*on_change)(void *arg), void *arg, void **out)
{
    return sl__store_kind_redis.rules_subscribe(((const struct sl__hybrid_config *)cfg)->redis,
                                                loop, db_path, on_change, arg, out);
}

static void rules_unsubscribe(void *sub)
{
    sl__store_kind_redis.rules_unsubscribe(sub);
}

static void *fleet_open(const void *cfg)
{
    return sl__store_kind_redis.fleet_open(((const struct sl__hybrid_config *)cfg)->redis);
}

static int fleet_share(void *f, const struct sl__store_fleet_put *p, char **out, size_t *len)
{
    return sl__store_kind_redis.fleet_share(f, p, out, len);
}

static void fleet_close(void *f)
{
    sl__store_kind_redis.fleet_close(f);
}

const struct sl__store_kind sl__store_kind_hybrid = {
    .config = &sl__store_kind_hybrid_config,
    .shared_new = shared_new,
    .shared_free = shared_free,
    .create = create,
    .metrics = metrics,
    .health_members = health_members,
    .rules_shared = rules_shared,
    .rules_publish = rules_publish,
    .rules_subscribe = rules_subscribe,
    .rules_unsubscribe = rules_unsubscribe,
    .fleet_open = fleet_open,
    .fleet_share = fleet_share,
    .fleet_close = fleet_close,
};
