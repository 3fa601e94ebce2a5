/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_kind_config.c - the Redis store's configuration as a kind's
 * (store/kind.h): its sections, the keys outside its table (failure
 * policies per domain), and the check of the whole (Sentinel, Cluster, the
 * seeds of rules across nodes).
 *
 * It connects to nothing: `sluice check -c` links it without hiredis or
 * libuv (the key table is redis_config.c's, the seeds' parsing
 * rules_sync_config.c's).
 */
#include <stdio.h>
#include <string.h>

#include "kind.h"
#include "redis.h"
#include "rules_sync.h"

static const char *const sections[] = {"store.redis", "store.redis.policies", "store.redis.tls",
                                       NULL};

static void init(void *cfg)
{
    sl__redis_config_constants(cfg);
}

static int set(void *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    const char *why = NULL;
    int rc;

    if (value == NULL) { /* a mapping: store.redis.tls given turns TLS on */
        if (strcmp(key, "store.redis.tls") != 0)
            return SL_ENOENT;
        ((struct sl__redis_config *)cfg)->tls.on = true;
        return SL_OK;
    }
    rc = sl__redis_config_set_pattern(cfg, key, value, &why);

    if (rc == SL_EINVAL)
        snprintf(err, errlen, "%s: %s", key, why ? why : "invalid");
    return rc;
}

static void help(FILE *out)
{
    sl__keytab_help_line(out, "store.redis.policies.DOMAIN", "(failure_policy)",
                         "failure policy for one domain: allow | deny | local");
}

static int check(const void *cfg, char *err, size_t errlen)
{
    const struct sl__redis_config *c = cfg;
    struct sl__rsync_config rc;

    if (c->sentinels[0] != '\0' && c->master_name[0] == '\0') {
        snprintf(err, errlen,
                 "store.redis.sentinels needs store.redis.master_name (the name the "
                 "sentinels monitor the master under)");
        return SL_EINVAL;
    }
    if (c->master_name[0] != '\0' && c->sentinels[0] == '\0') {
        snprintf(err, errlen,
                 "store.redis.master_name needs store.redis.sentinels (where to ask "
                 "for it)");
        return SL_EINVAL;
    }
    if (c->sentinels[0] != '\0' && c->cluster) {
        snprintf(err, errlen,
                 "store.redis.sentinels is for one Redis with replicas, not for "
                 "store.redis.cluster (a cluster fails over by itself)");
        return SL_EINVAL;
    }
    if (c->tls.on) { /* the files read and the context built, as at start */
        struct sl__rlink_tls t;
        int r = sl__rlink_tls_init(&t, &c->tls);
        if (r != SL_OK)
            snprintf(err, errlen, "%s", t.why);
        sl__rlink_tls_close(&t);
        if (r != SL_OK)
            return SL_EINVAL;
    }
    if (c->rules_sync && sl__rsync_config_from_redis(&rc, cfg) != SL_OK) {
        snprintf(err, errlen, "store.redis.nodes: give host:port pairs separated by commas");
        return SL_EINVAL;
    }
    return SL_OK;
}

const struct sl__store_kind_config sl__store_kind_redis_config = {
    .name = "redis",
    .cfg_size = sizeof(struct sl__redis_config),
    .keys = sl__redis_config_keys,
    .init = init,
    .set = set,
    .sections = sections,
    .help = help,
    .check = check,
};
