/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_reply.c - the readings of replies that the connection code acts
 * on, apart so that they can be tested and fuzzed without a connection
 * (fuzz/fuzz_redis_reply.c):
 *
 *  - CONFIG GET maxmemory-policy: what Redis does at maxmemory. Every state
 *    key carries an expiry, so every policy but noeviction (volatile-* as
 *    well as allkeys-*) may evict a counter under memory pressure and
 *    forgive a client it was limiting; redis_conn.c warns about it.
 *  - SENTINEL get-master-addr-by-name: [host, port] is read by the link
 *    (sl__redis_master_addr, link/rlink_sentinel.c), which the same fuzzer
 *    feeds.
 *
 * It is pure: it reads replies and writes into the caller's buffers; it
 * sends nothing and logs nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

/* The value of field "maxmemory-policy" in the flat [field, value, ...]
 * array CONFIG GET answers (the store speaks RESP2); NULL when absent or
 * not a string. */
static const redisReply *policy_value(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *f = r->element[i], *v = r->element[i + 1];
        if (f == NULL || v == NULL ||
            (f->type != REDIS_REPLY_STRING && f->type != REDIS_REPLY_STATUS) ||
            (v->type != REDIS_REPLY_STRING && v->type != REDIS_REPLY_STATUS))
            continue;
        if (f->len == 16 && memcmp(f->str, "maxmemory-policy", 16) == 0)
            return v;
    }
    return NULL;
}

enum sl__redis_evict sl__redis_policy_read(const redisReply *r, char *name, size_t cap)
{
    const redisReply *v = r != NULL ? policy_value(r) : NULL;

    if (cap > 0)
        name[0] = '\0';
    if (v == NULL)
        return SL__EVICT_UNKNOWN; /* an error (CONFIG renamed, refused by ACL) or no such field */
    if (cap > 0)
        snprintf(name, cap, "%.*s", (int)(v->len < 64 ? v->len : 64), v->str);
    return v->len == 10 && memcmp(v->str, "noeviction", 10) == 0 ? SL__EVICT_NONE : SL__EVICT_MAY;
}
