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

#include "rlink.h"
#include "sluice.h"

bool sl__redis_master_addr(const redisReply *r, const char **host, int *port)
{
    char *end;
    long p;

    *port = 0;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return false;
    *host = r->element[0]->str;
    p = strtol(r->element[1]->str, &end, 10);
    if (*end == '\0' && end != r->element[1]->str && p > 0 && p <= 65535)
        *port = (int)p;
    return true;
}

bool sl__rlink_master_addr(const redisReply *r, char *host, size_t cap, int *port)
{
    const char *h;
    size_t len;

    /* the reading the Redis store's Sentinel uses too (fuzzed) */
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
