/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid_config.c - the hybrid store's configuration as a kind's
 * (store/kind.h): its keys (store.hybrid.*; the Redis connection and the
 * Redis path take the Redis store's store.redis.* keys, linked by
 * kinds_config.c: one Redis, Sentinel or a cluster, as the Redis store)
 * and the check of the whole.
 *
 * It makes no store: `sluice check -c` links it without hiredis or libuv.
 */
#include <stdio.h>

#include "hybrid.h"
#include "kind.h"

#define HF(member) SL__KF(struct sl__hybrid_config, member)

static const struct sl__key hkeys[] = {
    {"store.hybrid.sync_interval", SL__K_DUR_MS, HF(sync_interval_ms), "50ms",
     "push local counts to Redis and read the fleet's back this often"},
    {"store.hybrid.timeout", SL__K_DUR_MS, HF(timeout_ms), "200ms",
     "one sync call; then its deltas are kept for the next sync"},
    {"store.hybrid.max_keys", SL__K_UINT, HF(max_keys), "16384",
     "keys (per window) whose counts are kept for syncing, per worker", .min = 1, .max = 1u << 24},
    {"store.hybrid.batch", SL__K_UINT, HF(batch), "256", "keys per sync script call", .min = 1,
     .max = 4096},
    {"store.hybrid.max_bytes", SL__K_SIZE, HF(max_bytes), "16MiB",
     "memory cap of each worker's local state table"},
};
#define NHKEYS (sizeof(hkeys) / sizeof(hkeys[0]))

const struct sl__key *sl__hybrid_config_keys(size_t *n)
{
    *n = NHKEYS;
    return hkeys;
}

static const char *const sections[] = {"store.hybrid", NULL};

static void link_redis(void *cfg, const void *redis)
{
    ((struct sl__hybrid_config *)cfg)->redis = redis;
}

int sl__hybrid_config_check(const struct sl__hybrid_config *c, char *err, size_t errlen)
{
    if (c->max_bytes < ((size_t)1 << 20)) {
        snprintf(err, errlen, "store.hybrid.max_bytes must be at least 1MiB");
        return SL_EINVAL;
    }
    if (c->timeout_ms <= 0 || c->sync_interval_ms <= 0) {
        snprintf(err, errlen, "store.hybrid.sync_interval and timeout must be positive");
        return SL_EINVAL;
    }
    return SL_OK;
}

static int check(const void *cfg, char *err, size_t errlen)
{
    const struct sl__hybrid_config *c = cfg;
    int rc = sl__hybrid_config_check(c, err, errlen);

    if (rc == SL_OK && sl__store_kind_redis_config.check != NULL)
        rc = sl__store_kind_redis_config.check(c->redis, err, errlen);
    return rc;
}

const struct sl__store_kind_config sl__store_kind_hybrid_config = {
    .name = "hybrid",
    .cfg_size = sizeof(struct sl__hybrid_config),
    .keys = sl__hybrid_config_keys,
    .sections = sections,
    .check = check,
    .reads = &sl__store_kind_redis_config,
    .link = link_redis,
};
