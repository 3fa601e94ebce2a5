/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rcluster.h - the Redis link's cluster layer, on links (internal): a
 * slot map (rcluster_map.h, the pure part) asked of a Redis with CLUSTER
 * SLOTS on a link; a follower that keeps one map fresh by asking a list
 * of seeds in turn on a link of its own; and one blocking command on a
 * cluster, MOVED and ASK followed.
 *
 * Used by the Redis store (redis_route.c asks its map on a data
 * connection), the hybrid store's sync (the follower; the calls' own
 * MOVED/ASK/TRYAGAIN read with sl__cluster_reply) and the rules push and
 * the hybrid store's last push (the blocking command). What stays with
 * each owner: its connections per node and what it resends (the Redis
 * store's calls, the hybrid store's sync calls), since what may be sent
 * again differs (a check's formatted call, a sync call's deltas).
 *
 * Ownership and threads: as rlink.h; everything belongs to one loop's
 * thread. Borrowed: the map, the seeds and the link settings given to a
 * follower, which must outlive it.
 */
#ifndef SL_STORE_RCLUSTER_H
#define SL_STORE_RCLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "rcluster_map.h"
#include "rlink.h"

/* One CLUSTER SLOTS question, the caller's (a field of its own struct):
 * its answer loaded into `map` (sl__cmap_load), then done(arg, rc): SL_OK,
 * SL_EINVAL (not a map), or SL_ENOENT (no answer: the link went down). */
struct sl__rcslots {
    struct sl__cmap *map;
    void (*done)(void *arg, int rc);
    void *arg;
    char host[SL__CLUSTER_HOST_MAX]; /* the node asked: a reply's empty host is it */
    bool out;                        /* asked and not answered; false: the answer is ignored */
};

/* Ask on link l, connected (or connecting) to `host`: SL_OK, then
 * q->done from the reply; an error when it could not be sent (no done). */
int sl__rcslots_ask(struct sl__rlink *l, struct sl__rcslots *q, const char *host);

/*
 * The follower: every `tick_ms` a stale map is asked of the seed in use
 * (a question not answered within a tick is given up and the next seed
 * is used the next time, as is one whose answer is no map), and a fresh
 * one every `fresh_ticks` ticks anyway. The map is stale at start, after
 * sl__rcfollow_stale, and while it leaves a slot without a master.
 */
struct sl__rcfollow_conf {
    const struct sl__cnode *seeds; /* [n_seeds]: store.redis.host:port and .nodes */
    unsigned n_seeds;
    uint64_t tick_ms;
    unsigned fresh_ticks;
    const struct sl__rlink_conf *link; /* AUTH and TLS of the question's link */
};
struct sl__rcfollow_events {
    void (*map)(void *arg); /* the map was loaded anew */
};
struct sl__rcfollow;
/* NULL out of memory. The first question is asked at once. */
struct sl__rcfollow *sl__rcfollow_new(uv_loop_t *loop, struct sl__rlink_group *g,
                                      const struct sl__rcfollow_conf *c, struct sl__cmap *map,
                                      const struct sl__rcfollow_events *ev, void *arg);
/* Something says the map is wrong: ask it again at the next tick. */
void sl__rcfollow_stale(struct sl__rcfollow *f);
/* The seed asked last (or to be asked next), an index into the seeds. */
unsigned sl__rcfollow_seed(const struct sl__rcfollow *f);
/* No callback after this. NULL is fine. */
void sl__rcfollow_free(struct sl__rcfollow *f);

/* One command: its words. */
struct sl__rcmd {
    int argc;
    const char **argv;
    const size_t *lens;
};

/*
 * Run x on a cluster from host:port, blocking (the tools, a store's last push;
 * not a worker's loop): each hop a new connection (conf: TLS and AUTH),
 * each step within timeout_ms; a MOVED goes to the master named, an ASK
 * to the node named after ASKING; at most 5 hops. The reply (an error
 * too: the caller reads it; freeReplyObject it), or NULL when a node
 * could not be reached or the hops ran out.
 */
redisReply *sl__rcluster_run(const struct sl__rlink_conf *conf, const char *host, int port,
                             int64_t timeout_ms, const struct sl__rcmd *x);

#endif /* SL_STORE_RCLUSTER_H */
