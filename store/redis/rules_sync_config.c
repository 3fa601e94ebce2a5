/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_sync_config.c - where rules across nodes are pushed and pulled
 * (rules_sync.h): the seeds, credentials and prefix, from the Redis store's
 * configuration.
 *
 * It connects to nothing, so the configuration check (`sluice check -c`)
 * says what a start would of store.redis.nodes without linking hiredis.
 */
#include <stdio.h>
#include <string.h>

#include "redis.h"
#include "rcluster_map.h"
#include "rules_sync.h"

void sl__rsync_config_init(struct sl__rsync_config *c)
{
    memset(c, 0, sizeof(*c));
    memcpy(c->prefix, "sluice", sizeof("sluice"));
    c->timeout_ms = 500;
    c->period_ms = 30000;
}

static int add_seed(struct sl__rsync_config *o, const char *host, size_t len, int port)
{
    if (o->n_seeds == SL__RSYNC_MAX_SEEDS || len >= sizeof(o->seeds[0].host) || port <= 0 ||
        port > 65535)
        return SL_EINVAL;
    memcpy(o->seeds[o->n_seeds].host, host, len);
    o->seeds[o->n_seeds].host[len] = '\0';
    o->seeds[o->n_seeds++].port = port;
    return SL_OK;
}

int sl__rsync_config_from_redis(struct sl__rsync_config *o, const struct sl__redis_config *c)
{
    struct sl__cnode a[SL__RSYNC_MAX_SEEDS];
    bool sentinel = c->sentinels[0] != '\0';
    int n = sl__redis_parse_addrs(sentinel ? c->sentinels : c->nodes, a, SL__RSYNC_MAX_SEEDS);
    int rc = SL_OK;

    sl__rsync_config_init(o);
    snprintf(o->user, sizeof(o->user), "%s", c->user);
    snprintf(o->password, sizeof(o->password), "%s", c->password);
    snprintf(o->prefix, sizeof(o->prefix), "%s", c->opts.prefix);
    o->tls = c->tls;
    if (n < 0)
        return SL_EINVAL;
    if (sentinel) /* the seeds are the sentinels, asked for the master */
        snprintf(o->master_name, sizeof(o->master_name), "%s", c->master_name);
    else
        rc = add_seed(o, c->host, strlen(c->host), c->port);
    for (int i = 0; rc == SL_OK && i < n; i++)
        rc = add_seed(o, a[i].host, strlen(a[i].host), a[i].port);
    return rc;
}
