/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_redis_reply.c - libFuzzer driver for the Redis store's reading of
 * replies: any bytes through hiredis's reader, as a connection receives
 * them, and every reply it makes handed to each pure reader of the store:
 * a check's result (a plan of three limits over two descriptors, the
 * lease reply included), a release's, NOSCRIPT and unknown-command
 * detection, a MOVED/ASK redirection, a CLUSTER SLOTS map,
 * maxmemory-policy and a sentinel's master address. Checks that each
 * answers within its documented codes and writes inside its outputs.
 * The reader is the Redis link's own (sl__rlink_reader_new,
 * store/redis/link/rlink.h), which refuses arrays of more than
 * SL__RLINK_MAX_ELEMENTS: hiredis 0.14 allocates an array's declared
 * element count at once ("*811000000" is 6.5 GB), and the link keeps a
 * server from making sluiced do that. It does not reach the connection
 * code (redis_conn.c, which only routes replies to these readers).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis_int.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

static struct sl__redis_plan plan;
static struct sl__redis_cmd cmd;
static struct sl_limit limits[3];
static struct sl_match match[2];
static struct sl__cmap map;

/* Once: a check of two descriptors, the second with a concurrency limit
 * (a lease in the reply). */
static void make_plan(void)
{
    static const enum sl_algo algos[3] = {SL_ALGO_FIXED_WINDOW, SL_ALGO_TOKEN_BUCKET,
                                          SL_ALGO_CONCURRENCY};
    struct sl__redis_opts o;
    struct sl_descriptor d[2];
    struct sl_request req;

    sl__redis_opts_init(&o);
    for (int i = 0; i < 3; i++) {
        sl_limit_init(&limits[i]);
        limits[i].algo = algos[i];
        limits[i].requests = 10;
        limits[i].period_ns = INT64_C(1000000000);
        limits[i].lease_ns = INT64_C(1000000000);
        sl_limit_finish(&limits[i]);
    }
    memset(d, 0, sizeof(d));
    memset(&req, 0, sizeof(req));
    req.domain = (struct sl_str){"api", 3};
    req.descriptors = d;
    req.n_descriptors = 2;
    req.hits = 1;
    req.now_ns = INT64_C(1750000000000000000);
    for (int i = 0; i < 2; i++) {
        match[i].key_len = (size_t)snprintf(match[i].key, sizeof(match[i].key), "api/u=%d", i);
        match[i].limits[0] = &limits[i];
        match[i].n_limits = 1 + (size_t)i;
    }
    match[1].limits[1] = &limits[2];
    CHECK(sl__redis_plan_build(&o, &(struct sl__redis_plan_in){SL__REDIS_CHECK, &req, match, 2},
                               &plan, &cmd) == SL_OK);
}

static void read_one(const redisReply *r)
{
    struct sl_result res;
    struct sl_decision items[SL__REDIS_MAX_ITEMS];
    struct sl__credir dir;
    char policy[72];
    const char *host;
    int64_t now_us;
    int rc, port;

    rc = sl__redis_plan_result(&plan, r, &res, &now_us, items);
    CHECK(rc == SL_OK || rc == SL_EINVAL || rc == SL_ERANGE);
    CHECK(rc != SL_OK || (res.n_statuses == plan.n_desc && memchr(res.lease, '\0', SL_LEASE_MAX)));
    rc = sl__redis_release_result(r);
    CHECK(rc == SL_OK || rc == SL_ENOENT || rc == SL_EINVAL);
    (void)sl__redis_is_noscript(r);
    (void)sl__redis_is_nomodule(r);
    if (r->type == REDIS_REPLY_ERROR) {
        rc = sl__credir_parse(r->str, r->len, "10.0.0.1", &dir);
        CHECK(rc == SL_OK || rc == SL_ENOENT || rc == SL_EINVAL);
        CHECK(rc != SL_OK ||
              (dir.slot < SL__CLUSTER_SLOTS && memchr(dir.host, '\0', sizeof(dir.host))));
    }
    rc = sl__cmap_load(&map, r, "10.0.0.1");
    CHECK(rc == SL_OK || rc == SL_EINVAL);
    CHECK(map.n_nodes <= SL__CLUSTER_MAX_NODES);
    for (unsigned s = 0; s < SL__CLUSTER_SLOTS; s += 97)
        CHECK(sl__cmap_lookup(&map, s) < (int)map.n_nodes);
    rc = (int)sl__redis_policy_read(r, policy, sizeof(policy));
    CHECK(rc >= SL__EVICT_NONE && rc <= SL__EVICT_UNKNOWN && memchr(policy, '\0', sizeof(policy)));
    if (sl__redis_master_addr(r, &host, &port))
        CHECK(host != NULL && port >= 0 && port <= 65535);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *rd;
    void *reply;

    if (plan.n_items == 0)
        make_plan();
    sl__cmap_init(&map);
    rd = sl__rlink_reader_new(); /* the Redis link's: bounded arrays */
    CHECK(rd != NULL);
    /* in two pieces, as reads arrive */
    CHECK(redisReaderFeed(rd, (const char *)data, size / 2) == REDIS_OK);
    CHECK(redisReaderFeed(rd, (const char *)data + size / 2, size - size / 2) == REDIS_OK);
    for (int n = 0; n < 64 && redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL; n++) {
        read_one(reply);
        freeReplyObject(reply);
    }
    redisReaderFree(rd);
    return 0;
}
