/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid_int.h - the hybrid store's internal types, shared by hybrid.c
 * (the store operations and the table of kept deltas) and hybrid_sync.c
 * (the Redis connection and the syncs). Not for use outside store/hybrid/.
 */
#ifndef SL_STORE_HYBRID_INT_H
#define SL_STORE_HYBRID_INT_H

#include <stdatomic.h>

#include "hybrid.h"
#include "rcluster.h"
#include "rlink.h"
#include "rmaster.h"
#include "rnode.h"
#include "sluice_int.h"

/* Longest match key kept for syncing; a longer one is decided locally and
 * not synced (counted in `untracked`). */
#define SL__HY_KEY_MAX 240

/* On a cluster: how often a stale slot map is asked again (and every
 * 10th time anyway). */
#define SL__HY_WATCH_MS 1000

/* One (state key, window) whose counts are synced. Windows get one entry
 * per window index, buckets one entry (w = 0). */
struct sl__hy_ent {
    uint64_t h[2];     /* SipHash-1-3-128 of match key + limit id, fixed key */
    int64_t w;         /* window index (floor(time / period)); buckets: 0 */
    struct sl_limit l; /* a copy (name NULL) */
    uint64_t pending;  /* recorded here since the last push */
    uint64_t inflight; /* in the sync call out now */
    uint64_t seen;     /* the fleet's total after our last push */
    int64_t last_ns;   /* last local commit or absorb */
    int64_t first_ns;  /* first local commit: made before a reset, or after */
    int64_t reset_ms;  /* the latest fleet reset of this key seen (ms), 0: none */
    bool in_call;      /* in a sync call that is out now */
    bool skip_absorb;  /* reset here while in a call: its answer predates the reset */
    uint32_t pos;      /* in the store's live list */
    bool used;
    bool superseded; /* a later window of the same key exists here */
    uint16_t key_len;
    char key[SL__HY_KEY_MAX];
};

struct sl__hy_counters {
    _Atomic uint64_t checks, redis_path, syncs, sync_calls, sync_keys, sync_failures,
        sync_redirects, absorbed, deltas_dropped, untracked, final_pushes, fleet_resets,
        fleet_resets_applied, fleet_resets_unsent, keys, kept, in_flight;
    _Atomic bool connected;
    _Atomic bool ever_connected;
};

#define SL__HY_CNT(st, field, d)                                                                   \
    atomic_store_explicit(&(st)->ctr.field,                                                        \
                          atomic_load_explicit(&(st)->ctr.field, memory_order_relaxed) +           \
                              (uint64_t)(d),                                                       \
                          memory_order_relaxed)
#define SL__HY_SET(st, field, v) atomic_store_explicit(&(st)->ctr.field, (v), memory_order_relaxed)

enum sl__hy_conn { SL__HY_DOWN = 0, SL__HY_CONNECTING, SL__HY_READY };

/* One Redis synced with, on its own link: the one Redis, the master
 * Sentinel names, or one master of a cluster (its index in the map). */
struct sl__hy_node {
    struct sl__hystore *st;
    struct sl__rlink *link; /* NULL: not made yet (a cluster's, on first use) */
    enum sl__hy_conn conn;
    char sha[41];
    struct sl__cnode addr; /* where it connects (port 0: not known yet) */
    uv_timer_t timer;      /* reconnect backoff or connect timeout */
    uv_timer_t call_timer; /* the sync out on it: store.hybrid.timeout */
    struct sl__rbackoff backoff;
    unsigned calls_out;
    bool owns;     /* a cluster's: the map gives it a slot */
    bool tls_said; /* its TLS failure is in the log */
};

/* One script call of a sync: the entries it carries (all of one slot on a
 * cluster), on one node. Everything needed to send it again (a cluster's
 * MOVED, ASK, TRYAGAIN, CLUSTERDOWN) is here and in its entries: their
 * deltas stay in `inflight` until the call is answered or lost. */
struct sl__hy_call {
    struct sl__hystore *st;
    struct sl__hy_node *node; /* where it is out, or goes when sent again */
    struct sl__rlink *on;     /* the link it is out on; NULL: waiting to be sent again */
    bool busy;
    bool one;     /* one entry's counter alone (its slot is migrating) */
    bool asking;  /* sent after ASKING (to the node importing its slot) */
    uint8_t hops; /* redirections and retries followed */
    unsigned n;
    uint32_t *idx; /* n entry indexes, in the store's `order` */
};

/* Seeds: the sentinels, or a cluster's nodes to ask CLUSTER SLOTS. */
#define SL__HY_SEEDS 16

struct sl__hystore {
    struct sl__store base;
    uv_loop_t *loop;
    struct sl__hybrid_config cfg;
    sl_limiter *lim;         /* this node's table */
    struct sl__store *inner; /* the Redis path */
    sl_rules *rules_seen;    /* the snapshot `rules_plain` is about (a reference) */
    bool rules_plain;        /* no limit of it needs the Redis path */
    bool closing;
    struct sl__hyshared *shared; /* the process's workers' stores, or NULL */
    struct sl__hystore *sibling; /* next in shared->stores */
    /* its nodes' health (link/rnode.h): each node's link noted on every
     * change, and the stall (its Redis stopped answering) said once per
     * process, through shared->sync's conditions or own_sync's */
    struct sl__rnode_set health;
    struct sl__rnode_shared *own_sync; /* when no process-wide one was given */

    /* kept deltas: entries[max_keys], an open-addressing index of
     * index_cap (a power of two) slots holding entry number + 1 */
    struct sl__hy_ent *ents;
    uint32_t *index;
    uint32_t index_cap;
    uint32_t *free_ents; /* a stack of free entry numbers */
    uint32_t n_free;
    uint32_t *live; /* the entries in use, so a sync visits only them */
    uint32_t n_live;

    /* time */
    int64_t last_now_ns; /* the latest time a request carried */
    int64_t next_sync_ns;
    bool sync_scheduled;
    uv_timer_t kick; /* runs a due sync after the check that found it due */
    uv_timer_t tick; /* real time: pushes what is pending when no request comes */
    uint64_t syncs_at_tick;

    /* the connections (the Redis link, link/rlink.h): nodes[0] alone, or
     * on a cluster nodes[i] for the map's node i */
    struct sl__rlink_group *group;
    struct sl__rlink_conf link_conf; /* the links', borrowing cfg.redis's strings */
    struct sl__rlink_tls tls;        /* store.redis.tls: this worker's context */
    enum sl__hy_conn conn;           /* all of them: READY when every one is */
    struct sl__hy_node *nodes;       /* [1], or [SL__CLUSTER_MAX_NODES] on a cluster */
    unsigned n_nodes;
    bool sentinel; /* store.redis.sentinels: nodes[0] is the master they name */
    bool cluster;  /* store.redis.cluster: the slot map says which node */
    struct sl__cmap *map;
    /* the map's follower (link/rcluster.h): CLUSTER SLOTS asked of the
     * seeds, one at a time, every SL__HY_WATCH_MS while stale (a MOVED, a
     * node lost) and every 10th time anyway */
    struct sl__rcfollow *mapf;
    /* Sentinel: the links' follower (link/rmaster.h) names nodes[0] */
    struct sl__rmaster *follow;
    struct sl__rlink_conf ask_conf; /* sentinels: no AUTH (the Redis store's choice) */
    bool master_known;              /* nodes[0].addr is a master they named */
    uint8_t sentinel_tls_said;      /* the sentinels whose TLS failure is in the log */
    /* a cluster's seeds, asked by `mapf` */
    struct sl__cnode seeds[SL__HY_SEEDS];
    unsigned n_seeds;
    uv_timer_t retry;          /* a cluster's: calls waiting after TRYAGAIN, CLUSTERDOWN */
    bool retry_made;           /* `retry` was initialised */
    unsigned free_hint;        /* where to look for a free call first */
    struct sl__hy_call *calls; /* [ceil(max_keys / batch)], on a cluster [max_keys] */
    unsigned n_calls;
    unsigned calls_out;
    uint32_t *order; /* [max_keys] a sync's entries, by slot */
    uint64_t *pairs; /* [max_keys] scratch: slot << 32 | entry */
    /* scratch for one call's arguments */
    const char **argv;
    size_t *argvlen;
    char *argbuf;
    size_t argbuf_cap;

    struct sl__hy_counters ctr;

    uint64_t reset_said_ms; /* when an unsent reset was last said (loop time), 0: never */
    uint64_t resets_unsaid; /* unsent resets since */
};

/* The process's hybrid stores (hybrid.h). */
struct sl__hyshared {
    struct sl__rshared *redis;  /* the Redis path's process-wide state */
    uv_mutex_t lock;            /* guards `stores`; the tables lock themselves */
    struct sl__hystore *stores; /* every worker's, linked by `sibling` */
    /* the sync links' conditions (link/rnode.h): the first worker whose
     * Redis stalls says so, the last that recovers says it is back */
    struct sl__rnode_shared *sync;
};

/* hybrid.c */
/* The fleet's total for entry `e` is `total` after a push of e->inflight,
 * and the latest reset of its key anywhere in the fleet was at `reset_ms`
 * (0: none known): record them, and add what other nodes recorded to the
 * local table - or, when the key was reset after this node first counted
 * it, forget the local state instead. */
void sl__hy_apply(struct sl__hystore *st, struct sl__hy_ent *e, uint64_t total, int64_t reset_ms);
/* Milliseconds a Redis counter of limit l must live after a push. */
int64_t sl__hy_limit_ttl_ms(const struct sl__hystore *st, const struct sl_limit *l);
/* One of the fleet's Redis keys: the counter of key hash h, window w
 * (buckets: any), limit l; with `marker`, the key's reset marker instead.
 * The caller's (on its stack), borrowed for the call. */
struct sl__hy_key {
    const uint64_t *h; /* [2] */
    const struct sl_limit *l;
    int64_t w;
    bool marker;
};
/* The Redis key `k` into buf (cap bytes). Its length. */
size_t sl__hy_key_name(const struct sl__hystore *st, const struct sl__hy_key *k, char *buf,
                       size_t cap);
/* The first and last window a reset deletes at now_ns (buckets: 0, 0). */
void sl__hy_reset_windows(const struct sl_limit *l, int64_t now_ns, int64_t *first, int64_t *last);
/* A call carrying `e` was lost: its deltas are pending again. */
void sl__hy_restore(struct sl__hystore *st, struct sl__hy_ent *e);
/* Drop entries no longer useful at `now_ns`, and count what is kept. */
void sl__hy_sweep(struct sl__hystore *st, int64_t now_ns);

/* hybrid_sync.c */
int sl__hy_sync_init(struct sl__hystore *st);
void sl__hy_sync_close(struct sl__hystore *st);
void sl__hy_sync_run(struct sl__hystore *st, int64_t now_ns);
/* Push every kept delta with a blocking connection (shutdown). */
void sl__hy_final_push(struct sl__hystore *st);
/* Reset the fleet's view of (key hash h, limit l) at now_ns: its counters
 * deleted and its reset marker set, on the sync connection (one call, not
 * waited for). Said in the log when it cannot be sent. */
void sl__hy_reset_fleet(struct sl__hystore *st, const uint64_t h[2], const struct sl_limit *l,
                        int64_t now_ns);

#endif /* SL_STORE_HYBRID_INT_H */
