/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlink_sentinel.c - the reading of a sentinel's answer to SENTINEL
 * get-master-addr-by-name <name> ([host, port]), and that question on a
 * blocking link (rlink.h) for the tools and the hybrid store's last push.
 * On a worker's loop the sentinels are followed by link/rmaster.c.
 *
 * It decides nothing about which sentinel to ask or when: the caller
 * rotates and retries with its own policy.
 */
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"
#include "rlink.h"
#include "sluice.h"

bool sl__rlink_master_addr(const redisReply *r, char *host, size_t cap, int *port)
{
    const char *h;
    size_t len;

    /* the reading the Redis store's Sentinel uses (redis_reply.c, fuzzed) */
    if (!sl__redis_master_addr(r, &h, port) || *port == 0)
        return false;
    len = strlen(h);
    if (len >= cap)
        return false;
    memcpy(host, h, len + 1);
    return true;
}

int sl__rlink_sync_master(const struct sl__rlink_conf *c, const struct sl__rlink_master_q *q,
                          char *host, size_t cap, int *port)
{
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", q->name};
    const size_t lens[3] = {8, 23, strlen(q->name)};
    char err[256];
    struct sl__rlink_sync *s =
        sl__rlink_sync_open(c, q->host, q->port, q->timeout_ms, err, sizeof(err));
    redisReply *r = NULL;
    int rc;

    if (s != NULL)
        r = sl__rlink_sync_argv(s, 3, argv, lens, err, sizeof(err));
    rc = sl__rlink_master_addr(r, host, cap, port) ? SL_OK : SL_ENOENT;
    freeReplyObject(r);
    sl__rlink_sync_close(s);
    return rc;
}
