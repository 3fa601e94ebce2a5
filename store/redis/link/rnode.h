/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rnode.h - the health of the Redis nodes an owner's links go to
 * (internal): per node, how many of its links are ready, whether it is
 * down (none ready and one failed) and since when, the edges between the
 * two said once per process, and the snapshot other threads read.
 *
 * Two parts:
 *  - struct sl__rnode_shared, one per process and configuration: every
 *    worker has its own store, and each sees the same outage. A condition
 *    ("unreachable 10.0.0.5:6379", "breaker mymaster", ...) is the
 *    process's edge when the first owner sees it go bad and when the last
 *    one sees it good again, with how long it lasted. Owners use it for
 *    their own conditions too (sl__rnode_shared_edge).
 *  - struct sl__rnode_set, one per owner (a worker's store), on its loop's
 *    thread: the owner notes each node's state when something changed (a
 *    link's state, the map, ...; never per call) and publishes; the set
 *    finds the edges (first reached, down, back) and reports each upward
 *    through its `edge` callback, saying whether the process's line is
 *    due, so that the owner writes it in its own words and reacts (its
 *    breaker, its health, its sync state). The set also keeps one
 *    owner-wide outage (sl__rnode_stall: the owner's links stopped
 *    answering), said once per process the same way.
 *
 * It knows nothing of engines, breakers or plans: a node the owner keeps
 * out of use (`held`, the Redis store's open breaker) is only published.
 *
 * Threads: a set's note/publish/stall are its loop's; sl__rnode_read and
 * sl__rnode_sum_add may be called from any thread (a mutex, taken on
 * publish and read only). The shared part locks itself.
 */
#ifndef SL_STORE_RNODE_H
#define SL_STORE_RNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "rcluster_map.h"

/* "host:port", "[v6]:port", NUL included */
#define SL__RNODE_ADDR_MAX (SL__CLUSTER_HOST_MAX + 8)

/* ------------------------------------------------------------ the process's */

struct sl__rnode_shared;
struct sl__rnode_shared *sl__rnode_shared_new(void);
void sl__rnode_shared_free(struct sl__rnode_shared *sh);
/* One owner sees `key` go bad (or good again): true when that is the
 * process's edge (the first bad, the last good), with *lasted_ms (good:
 * since the first bad). An owner calls it only on its own changes (bad,
 * good, bad, ...). A full table says every edge rather than none. */
bool sl__rnode_shared_edge(struct sl__rnode_shared *sh, const char *key, bool bad,
                           int64_t *lasted_ms);
/* No owner sees `key` bad any more (a one-off condition said again). */
void sl__rnode_shared_clear(struct sl__rnode_shared *sh, const char *key);

/* ------------------------------------------------------------ an owner's */

enum sl__rnode_what {
    SL__RNODE_REACHED, /* a link of the node became ready, the first time */
    SL__RNODE_DOWN,    /* none ready and one failed */
    SL__RNODE_BACK,    /* ready again after DOWN */
    SL__RNODE_STALLED, /* the owner's links stopped answering (sl__rnode_stall) */
    SL__RNODE_ANSWERS, /* ... and answer again */
};

/* One edge, as the set reports it (borrowed for the callback). */
struct sl__rnode_edge {
    enum sl__rnode_what what;
    unsigned node;     /* the node's index; STALLED, ANSWERS: the one named */
    const char *addr;  /* as counted (BACK: the address it went down under) */
    const char *why;   /* DOWN, STALLED: the reason given, or "" */
    int64_t lasted_ms; /* BACK, ANSWERS: how long the process saw it */
    bool say;          /* the process's edge: the owner's line is due */
};

struct sl__rnode_events {
    void (*edge)(void *arg, const struct sl__rnode_edge *e);
};

/* What the owner knows of a node when it notes it. */
struct sl__rnode_state {
    const char *addr;
    unsigned ready, conns; /* links ready, started */
    bool failed;           /* one of them has failed */
    const char *why;       /* the first failure's reason, or "" */
    bool serving;          /* it decides (a cluster's master owning a slot) */
    bool held;             /* the owner keeps it out of use: published only */
    bool edges;            /* its edges count (a cluster's seed: not once masters are known) */
};

/* A node as published. */
struct sl__rnode_pub {
    char addr[SL__RNODE_ADDR_MAX];
    uint16_t ready, conns;
    bool serving;
    bool down; /* no link ready, and one failed */
    bool held;
};

struct sl__rnode_set {
    struct sl__rnode_shared *shared;
    const struct sl__rnode_events *ev;
    void *arg;
    uint8_t flags[SL__CLUSTER_MAX_NODES];
    char counted[SL__CLUSTER_MAX_NODES][SL__RNODE_ADDR_MAX]; /* the address said */
    struct sl__rnode_pub next[SL__CLUSTER_MAX_NODES];        /* noted, not yet published */
    bool stalled;
    bool lock_made;
    uv_mutex_t lock; /* guards n and pub */
    unsigned n;
    struct sl__rnode_pub pub[SL__CLUSTER_MAX_NODES];
};

int sl__rnode_set_init(struct sl__rnode_set *set, struct sl__rnode_shared *shared,
                       const struct sl__rnode_events *ev, void *arg);
/* What the set counts bad in the process stays counted (as the stores
 * always did: a store freed while its Redis is down says nothing). */
void sl__rnode_set_close(struct sl__rnode_set *set);
/* Node k's state now (k < SL__CLUSTER_MAX_NODES): the edges it makes are
 * reported before it returns. Published at the next sl__rnode_publish. */
void sl__rnode_note(struct sl__rnode_set *set, unsigned k, const struct sl__rnode_state *s);
/* Nodes [0, n) as last noted become what other threads read. */
void sl__rnode_publish(struct sl__rnode_set *set, unsigned n);
/* Node k's address is about to change (Sentinel named a new master): its
 * being down, counted under the old one, is withdrawn without a line,
 * and the next address is reached (REACHED) anew. */
void sl__rnode_forget(struct sl__rnode_set *set, unsigned k);
/* The owner's links stopped answering (bad, at node k's address `addr`,
 * why) or all answer again (!bad): an edge for the owner on a change,
 * STALLED or ANSWERS, said once per process. */
void sl__rnode_stall(struct sl__rnode_set *set, bool bad, const struct sl__rnode_edge *at);

/* Any thread: the published nodes copied into out[max]; how many. */
unsigned sl__rnode_read(struct sl__rnode_set *set, struct sl__rnode_pub *out, unsigned max);

/* One node over several owners' sets, matched by address. */
struct sl__rnode_sum {
    char addr[SL__RNODE_ADDR_MAX];
    unsigned owners, up, held; /* up: a link ready and not held */
    unsigned ready, conns;
    bool serving;
};
/* Any thread: add `set`'s published nodes to out[0..m) (at most max);
 * the new m. */
unsigned sl__rnode_sum_add(struct sl__rnode_set *set, struct sl__rnode_sum *out, unsigned m,
                           unsigned max);

#endif /* SL_STORE_RNODE_H */
