/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_int.h - the Redis store's internal types, shared by redis.c (the
 * store operations and failure policy), redis_conn.c (connections, engine
 * detection and code loading, circuit breaker) and redis_olc.c (over-limit
 * cache).
 *
 * Not for use outside store/redis*.c. Everything here lives on one worker
 * loop's thread.
 */
#ifndef SL_STORE_REDIS_INT_H
#define SL_STORE_REDIS_INT_H

#include <stdatomic.h>

#include <hiredis/hiredis.h>

#include "redis.h"
#include "rnode.h"
#include "sluice_int.h"

struct sl__rstore;
struct sl__rfan;

enum sl__rconn_state { SL__RC_DOWN = 0, SL__RC_CONNECTING = 1, SL__RC_READY = 2 };

/* One pipelined connection. */
struct sl__rconn {
    struct sl__rstore *st;
    struct sl__rlink *link; /* made once; NULL only out of memory */
    enum sl__rconn_state state;
    uv_timer_t timer;       /* reconnect backoff, or the connect/probe timeout */
    struct sl__rbackoff bo; /* the reconnection waits */
    int64_t hold_ms;        /* the next wait instead (the breaker's), 0 none */
    bool started;           /* connected at least once (later ones are reconnects) */
    bool sub;               /* the subscriber to reset announcements, not for calls */
    bool failed;            /* its last attempt failed or it was lost (not dropped to move) */
    uint8_t node;           /* index in the store's map (0: the seed) */
    uint8_t engines;        /* engines this connection's server offers: 1 << SL__ENGINE_* */
    uint8_t probes;         /* detection replies still awaited (redis_conn.c) */
    char why[80];           /* why it last failed, for the log */
};

enum sl__rreq_kind { SL__RQ_CHECK = 0, SL__RQ_PEEK, SL__RQ_RESET, SL__RQ_RELEASE };

/* What the rules resolution leaves to be applied to every answer (see
 * sl__rules_resolve() in lib/rules/check.c): deny-all limits taken out, and whether they deny the
 * whole request. */
struct sl__rfinish {
    bool active;
    int64_t now_ns;
    struct sl__resolved rv; /* deny-all limits, unlimited and detailed rules */
    /* Envoy quota_mode: a request denied only by some of its quota
     * descriptors is decided again without them, which keep their status. */
    bool quota_any;
    bool rechecked;
    bool quota[SL_MAX_DESCRIPTORS];
    bool was_denied[SL_MAX_DESCRIPTORS];
    struct sl_status saved[SL_MAX_DESCRIPTORS];
};

/* A call being started: a check, peek or reset of the store's operation
 * (redis.c's run), one slot group of a cross-slot one (redis_fan.c's
 * start_group), or a release (only kind, pol, fin and the callback). Built
 * on the starter's stack and passed down by const pointer
 * (sl__rstore_start, sl__rfan_start, sl__ranswer_policy): everything it
 * points to is borrowed for the start call only. What must outlive it is
 * copied by whoever keeps the call - the slot (fin, the callback, the
 * request when kept, a reference to the rules) or the fan. */
struct sl__rstart {
    enum sl__rreq_kind kind;
    const struct sl_request *req;
    const struct sl_match *m; /* the request's resolved matches, m[0..n) */
    size_t n;
    const sl_rules *rules;         /* the snapshot of the matches' limits; NULL: ad hoc */
    const struct sl__rfinish *fin; /* what the resolution left for the answer */
    enum sl__redis_policy pol;     /* the failure policy (the domain's) */
    sl__store_cb cb;               /* the answer, once: cb(arg, ...) */
    void *arg;
    struct sl__rfan *fan; /* the cross-slot check it is a group of, or NULL */
    uint8_t group;        /* ... and which */
};

/* What the caller lent (request and matches), copied for a decision made
 * after the start call: the local policy, or quota_mode's second one. The
 * limits are the plan's. */
struct sl__rcopy_desc {
    uint32_t key_off, ek_off, ev_off;
    uint16_t key_len, ek_len, ev_len;
    bool entry; /* the descriptor had a first entry (its hash tag) */
    int64_t hits;
};
struct sl__rcopy {
    char *buf; /* grown once to the largest request seen, then reused */
    size_t cap;
    uint32_t dom_len;
    uint64_t hits;
    size_t n;
    struct sl__rcopy_desc d[SL_MAX_DESCRIPTORS];
};

/* One call to Redis; a slot of the store's pool, busy until hiredis gives
 * its reply (or NULL when the connection goes), even after a timeout has
 * answered the caller, so the pool bounds what is outstanding. */
struct sl__rreq {
    struct sl__rstore *st;
    struct sl__rreq *next_free;
    uv_timer_t timer;
    bool busy;
    bool answered; /* the caller's callback has run */
    bool retried;  /* resent once after NOSCRIPT */
    enum sl__rreq_kind kind;
    enum sl__redis_policy policy;
    sl__store_cb cb;
    void *arg;
    char *fmt; /* the formatted command, kept for a NOSCRIPT resend */
    size_t fmt_len;
    struct sl__rconn *conn;
    uint8_t redirects;    /* MOVED/ASK/TRYAGAIN followed for this call */
    struct sl__rfan *fan; /* the cross-slot check this call is part of */
    uint8_t fan_group;
    sl_rules *rules; /* a reference held while the call is out (store.h) */
    struct sl__rfinish fin;
    struct sl_limit own[SL_MAX_LIMITS]; /* ad hoc limits, copied */
    struct sl__redis_plan plan;
    int64_t now_ns;
    struct sl__rcopy copy;
    uint64_t item_hash[SL__REDIS_MAX_ITEMS]; /* over-limit cache keys */
};

/* One over-limit cache slot: the state key (hashed) is denied for costs >=
 * cost until until_ns. */
struct sl__olc_slot {
    uint64_t hash;
    uint64_t cost;
    int64_t until_ns;
    int64_t reset_at_ns;
};

/* The counters of struct sl__redis_stats, readable from any thread (a
 * metrics scrape) while the worker writes them: one writer, relaxed. */
struct sl__rcounters {
    _Atomic uint64_t checks, script_calls, replies, timeouts, errors, noscript, overflow,
        unavailable, policy_allow, policy_deny, policy_local, olc_hits, olc_inserts, reconnects,
        in_flight, moved, ask, tryagain, map_refreshes, cross_slot, refunds, refund_failures,
        master_switches;
    _Atomic unsigned nodes_known;
    _Atomic unsigned conns_ready;
    _Atomic int breaker;
    _Atomic int engine;
    _Atomic bool olc_active;
};

/* Add `d` to a counter (single writer: no read-modify-write needed). */
#define SL__CNT(st, field, d)                                                                      \
    atomic_store_explicit(&(st)->ctr.field,                                                        \
                          atomic_load_explicit(&(st)->ctr.field, memory_order_relaxed) +           \
                              (uint64_t)(d),                                                       \
                          memory_order_relaxed)

/* What the store publishes for /readyz, /healthz?verbose and /metrics
 * besides its nodes (those are the link's, link/rnode.h: `nodes`), under
 * `lock` (written on state changes only, never per call). */
struct sl__rpub {
    uv_mutex_t lock;
    bool sentinel;     /* the master comes from Sentinel */
    bool master_known; /* ... and one was named */
    bool sentinel_sub; /* subscribed to +switch-master on a sentinel */
    bool ever_up;      /* the store has decided with its own state once */
    bool failed;       /* ... or something has failed: no longer starting */
    char sentinel_at[SL__CLUSTER_HOST_MAX + 8]; /* the sentinel in use */
};

/* Per node, what this store has said about its breaker (redis_events.c). */
enum {
    SL__EV_OPEN = 1u << 0, /* counted with its breaker open */
};

struct sl__rsentinel;

/* What a lower room reports to a higher one, by pointer (redis.c sets
 * them): the floors of store/redis/ call only downward. */
struct sl__rup {
    /* Sentinel named a new master (node 0's address changed): move every
     * connection to it (sl__rconn_retarget). */
    void (*master_moved)(struct sl__rstore *st);
    /* A connection became ready: a slot map refresh may be due
     * (sl__rroute_kick). */
    void (*conn_ready)(struct sl__rstore *st);
    /* A connection was lost or a call found none: the map may be stale
     * (sl__rroute_stale). */
    void (*conn_lost)(struct sl__rstore *st);
    /* A cross-slot group's call got its reply (sl__rfan_note_reply). */
    void (*group_reply)(struct sl__rreq *q, const struct sl_result *res, int64_t now_us);
};

/* Sentinel's part of the health view, written by redis_sentinel.c. */
struct sl__rsview {
    bool known;                        /* a master was named */
    bool subscribed;                   /* to +switch-master on a sentinel */
    bool failed;                       /* a sentinel has failed to answer once */
    char at[SL__CLUSTER_HOST_MAX + 8]; /* the sentinel subscribed to */
};

struct sl__rstore {
    struct sl__store base;
    uv_loop_t *loop;
    struct sl__redis_config cfg;
    sl_limiter *local;
    sl__store_log_fn log; /* the server's log; NULL: stderr */
    void *log_arg;
    struct sl__rshared *shared;     /* the process's, or own_shared */
    struct sl__rshared *own_shared; /* when no process-wide one was given */
    uint8_t ev[SL__CLUSTER_MAX_NODES];
    /* the nodes' health (link/rnode.h): ready links, down and back, said
     * once per process through st->shared's conditions; published for
     * other threads. Its edges come back to sl__revent_node. */
    struct sl__rnode_set nodes;
    bool policy_decides; /* some policy (default or a domain's) is allow or local */
    bool quiet;          /* moving to a new master: lost calls are not failures */
    struct sl__rpub pub;
    bool pub_ready;                     /* its lock exists */
    bool serves[SL__CLUSTER_MAX_NODES]; /* cluster: nodes owning a slot ... */
    uint64_t serves_version;            /* ... in this version of the map */
    bool serves_valid;
    struct sl__rsentinel *sentinel; /* NULL without Sentinel */
    struct sl__rsview sview;        /* ... and what it shows */
    struct sl__rup up;
    bool closing;
    bool engine_warned; /* store.redis.engine forced and not offered: said once */

    /* The Redis link (link/rlink.h): every connection of this store is
     * one, of this group (their writes leave once per loop iteration). */
    struct sl__rlink_group *group;
    struct sl__rlink_tls tls;   /* with store.redis.tls: the context, rebuilt on rotation */
    struct sl__rlink_conf link; /* Redis's: AUTH, TLS, the connect timeout */
    struct sl__rlink_conf sentinel_link; /* the sentinels': TLS, no AUTH */

    /* Connections: cfg.connections per node, node-major; one node (the
     * seed) without cluster, up to SL__CLUSTER_MAX_NODES with it, each
     * node's started when it first appears in the map. */
    struct sl__rconn *conns;
    unsigned n_nodes_started;
    unsigned node_failures[SL__CLUSTER_MAX_NODES]; /* consecutive, per master (cluster) */
    struct sl__cmap *map;                          /* node 0 is the seed (cfg.host:port) */
    struct sl__crefresh refresh;
    uv_timer_t refresh_timer;
    bool refreshing;            /* a CLUSTER SLOTS is out */
    struct sl__rcslots slots_q; /* that question (link/rcluster.h) */
    char (*slot_tags)[5];       /* per slot, a tag hashing to it, found when first needed */
    struct sl__rfan *fans;      /* cross-slot checks: a pool */
    struct sl__rfan *free_fans;
    unsigned n_fans;
    struct sl__rconn sub; /* SUBSCRIBE <prefix>:v1:reset */
    char channel[SL__REDIS_PREFIX_MAX + 16];
    unsigned next_conn; /* round robin */
    unsigned failures;  /* consecutive, for the breaker */
    int64_t open_until_ms;
    enum sl__breaker breaker; /* the worker's view; published in ctr */
    unsigned conns_ready;
    struct sl__rcounters ctr;

    struct sl__rreq *reqs; /* pool of cfg.max_in_flight */
    struct sl__rreq *free_reqs;

    uint8_t olc_secret[16];
    struct sl__olc_slot *olc; /* cfg.olc_entries, a power of two, or NULL */
    uint64_t olc_mask;

    struct sl__redis_plan plan; /* scratch: the plan being built */
    struct sl__redis_cmd cmd;   /* scratch: one command being built */
};

/* redis_conn.c */
int sl__rconn_init_all(struct sl__rstore *st);

/* A ready connection of any node (round robin), or NULL. */
struct sl__rconn *sl__rconn_pick(struct sl__rstore *st);
/* A ready connection of `node` (starting its connections if it has none
 * yet), or NULL. */
struct sl__rconn *sl__rconn_pick_node(struct sl__rstore *st, unsigned node);
/* Start the connections of every node of the map that has none. */
void sl__rconn_start_nodes(struct sl__rstore *st);
/* A call to `node` failed or timed out: count it; may open the breaker
 * (cluster: that node's). */
void sl__rconn_failure(struct sl__rstore *st, unsigned node);
void sl__rconn_success(struct sl__rstore *st, unsigned node);
/* May calls be sent now? (breaker closed and a connection ready) */
bool sl__rconn_available(struct sl__rstore *st);
void sl__rconn_close_all(struct sl__rstore *st);
/* Queue the load of the code on `c`: FUNCTION LOAD (after "Function not
 * found") or SCRIPT LOAD (after NOSCRIPT). */
void sl__rconn_reload(struct sl__rconn *c, bool function);
/* The module's command is unknown on `c`'s server (unloaded): drop the
 * connection, whose reconnection detects the engines again. */
void sl__rconn_redetect(struct sl__rconn *c);
void sl__rconn_set_breaker(struct sl__rstore *st, enum sl__breaker b);

/* The request and matches a started call was made of, from the slot's
 * copy and its plan's limits (`peek`: every cost 0). */
struct sl__rebuilt {
    struct sl_match m[SL_MAX_DESCRIPTORS];
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl_entry e[SL_MAX_DESCRIPTORS];
    struct sl_request req;
};

/* redis_answer.c: answers that are not a script reply. */
void sl__ranswer_rebuild(const struct sl__rreq *q, bool peek, struct sl__rebuilt *r);
/* The one way to the caller's callback (applies what `fin` holds); `by`:
 * who answered. */
void sl__ranswer_deliver(const struct sl__rfinish *fin, sl__store_cb cb, void *arg, int err,
                         struct sl_result *res, enum sl__store_by by);
/* By policy `pol` over plan `p`, for the call being started `call`
 * (nothing sent yet): `local` decides over its matches and request
 * (`peek`: counting nothing); answered through its fin and callback. */
void sl__ranswer_policy(struct sl__rstore *st, enum sl__redis_policy pol,
                        const struct sl__redis_plan *p, const struct sl__rstart *call, bool peek);
/* By the policy of slot `q`, whose call failed or timed out: `local`
 * decides over the slot's copy; answered through the slot's fin and
 * callback. */
void sl__ranswer_policy_slot(struct sl__rstore *st, const struct sl__rreq *q);
/* A cached denial answers the check `call` at its request's time (true), or
 * nothing is done (false); hash[] the plan's items'. */
bool sl__ranswer_olc(struct sl__rstore *st, const struct sl__redis_plan *p, const uint64_t *hash,
                     const struct sl__rstart *call);
void sl__ranswer_olc_learn(struct sl__rstore *st, const struct sl__rreq *q,
                           const struct sl_decision *d);

/* redis_call.c: one call on a slot. */
void sl__rcall_release(struct sl__rreq *q);
/* Send the command in st->cmd for slot q on c, with its timeout. */
int sl__rcall_send(struct sl__rstore *st, struct sl__rreq *q, struct sl__rconn *c);
/* Copy the caller's request and matches into the slot. */
int sl__rcall_keep(struct sl__rreq *q, const struct sl_request *req, const struct sl_match *m,
                   size_t n);

/* The rules path resolves a request as sl_limiter_check() does, with
 * sl__rules_resolve() / sl__rules_finish() (lib/rules/rules_int.h). */

/* redis_route.c: Redis Cluster routing (cluster mode only). */
int sl__rroute_init(struct sl__rstore *st);
void sl__rroute_close(struct sl__rstore *st);
/* The node serving `slot` (the seed while the map does not say). */
unsigned sl__rroute_node(const struct sl__rstore *st, unsigned slot);
/* The slot of the plan's item k (its key in st->cmd). */
unsigned sl__rroute_item_slot(const struct sl__rstore *st, size_t k);
/* Cluster and the plan (just built in st->cmd, all in `slot`) takes
 * concurrency leases: name their index keys in that slot (the settings'
 * prefix becomes "<prefix>{T}", see store/redis/lua/90_main.lua). SL_OK
 * otherwise too. */
int sl__rroute_lease_prefix(struct sl__rstore *st, const struct sl__redis_plan *p, unsigned slot);
/* The map may be stale (a MOVED, a lost connection): refresh it soon. */
void sl__rroute_stale(struct sl__rstore *st);
/* A connection became ready: a refresh may be due. */
void sl__rroute_kick(struct sl__rstore *st);
/* Follow a redirection or TRYAGAIN in reply `r` to call q: true when the
 * call was resent (the reply is consumed), false when `r` is not one or it
 * cannot be followed (the caller treats it as an error reply). */
bool sl__rroute_redirect(struct sl__rreq *q, const redisReply *r, sl__rlink_reply_fn on_reply);

/* redis_fan.c: a check over several slots. */
#define SL__FAN_GROUPS SL_MAX_DESCRIPTORS
struct sl__rfan_group {
    struct sl__rfan *fan;
    uint8_t n;                        /* descriptors in the group */
    uint8_t desc[SL_MAX_DESCRIPTORS]; /* their indexes in the request */
    bool answered, redis, consumed;   /* decided by Redis and consumed something */
    int node;                         /* the node that decided it */
    char *refund;                     /* the formatted refund call, or NULL */
    char *release;                    /* the release of its leases, or NULL */
    size_t release_len;
    size_t refund_len;
};
struct sl__rfan {
    struct sl__rfan *next_free;
    struct sl__rstore *st;
    enum sl__rreq_kind kind;
    sl__store_cb cb;
    void *arg;
    struct sl__rfinish fin; /* the whole request's */
    sl_rules *rules;        /* a reference held until the answer */
    unsigned pending;
    unsigned n_groups;
    int err;
    struct sl_result res;
    enum sl__store_by by;               /* a policy that answered a group answers for the whole */
    bool state_denied;                  /* ... unless a group Redis decided denies: its denial */
    struct sl_limit own[SL_MAX_LIMITS]; /* ad hoc limits (no snapshot), copied */
    unsigned n_own;
    struct sl__rfan_group g[SL__FAN_GROUPS];
};
int sl__rfan_init(struct sl__rstore *st);
void sl__rfan_free_all(struct sl__rstore *st);
/* Start a check, peek or reset `call` whose descriptors (st->plan, st->cmd
 * just built over call->m[0..n)) hash to several slots. Same contract as a
 * start. */
int sl__rfan_start(struct sl__rstore *st, const struct sl__rstart *call);
/* A group's call got its reply: keep what a refund needs (redis_call.c). */
void sl__rfan_note_reply(struct sl__rreq *q, const struct sl_result *res, int64_t now_us);

/* A release whose token names leases of several slots (cluster): one
 * release per slot, their answers joined (SL_OK if any released).
 * SL_ENOENT: the token is of one slot, nothing started (release it
 * directly); else as a start. */
int sl__rfan_release(struct sl__rstore *st, const char *lease, size_t len, int64_t now_ns,
                     sl__store_cb cb, void *arg);

/* redis_start.c: release the leases of a token of one slot (store.h's release). */
int sl__rstore_release(struct sl__rstore *st, const char *lease, size_t len, int64_t now_ns,
                       sl__store_cb cb, void *arg);

/* redis_start.c: start a check, peek or reset: one call to Redis (one
 * slot), a group of call->fan when that is not NULL. When its descriptors
 * hash to several slots and it is not a group, nothing is started and
 * SL__RSTART_SPANS returned: the caller (redis.c) splits it with
 * sl__rfan_start, over st->plan and st->cmd as built. Else the contract of
 * a store's check (store.h). */
#define SL__RSTART_SPANS 1
int sl__rstore_start(struct sl__rstore *st, const struct sl__rstart *call);

/* redis_conn.c: Sentinel named a new master (node 0's address is already
 * changed): drop the old master's connections and connect to it now. */
void sl__rconn_retarget(struct sl__rstore *st);
/* A node's "host:port" as the log and health view write it ("[v6]:port"). */
void sl__rnode_addr(const struct sl__rstore *st, unsigned node, char *out, size_t cap);

/* redis_reply.c: CONFIG GET maxmemory-policy's reply. SL__EVICT_NONE for
 * noeviction, SL__EVICT_MAY for any other policy (its name in name[cap],
 * at most 64 bytes), SL__EVICT_UNKNOWN for an error reply (CONFIG renamed
 * or refused by an ACL) or a reply without the policy. Pure. */
enum sl__redis_evict { SL__EVICT_NONE, SL__EVICT_MAY, SL__EVICT_UNKNOWN };
enum sl__redis_evict sl__redis_policy_read(const redisReply *r, char *name, size_t cap);

/* redis_events.c: what the operator sees in the log (once per process):
 * sl__rlog(st, SL__SLOG_WARN, "store.what", "message %s", ...), the event a
 * string literal listed in docs/operations.md. */
void sl__rlog_line(struct sl__rstore *st, enum sl__store_level level, const char *event,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define sl__rlog(st, level, event, ...) sl__rlog_line((st), (level), "" event "", __VA_ARGS__)
/* The nodes' health (st->nodes) found an edge: its line when the
 * process's (the set's `edge` callback; arg: the store). */
void sl__revent_node(void *arg, const struct sl__rnode_edge *e);
/* The process's conditions table (link/rnode.h) inside `sh`. */
struct sl__rnode_shared *sl__rshared_conds(struct sl__rshared *sh);
/* Its circuit breaker opened (or closed). */
void sl__revent_breaker(struct sl__rstore *st, unsigned node, bool open);
/* The node's address is about to change (Sentinel): its being
 * unreachable, counted under the old one, is withdrawn without a line
 * (the breaker, the store's, closes with a line on the new master). */
void sl__revent_forget(struct sl__rstore *st, unsigned node);
/* An answer by failure policy `pol`: a line at the first, then at most
 * one per SL__REVENT_POLICY_MS with how many. */
#define SL__REVENT_POLICY_MS 10000
void sl__revent_policy(struct sl__rstore *st, enum sl__redis_policy pol);
/* Sentinel named `addr` the master of the configured name (from
 * sentinel `via`): a line when it differs from the last one logged. */
void sl__revent_master(struct sl__rstore *st, const char *addr, const char *via);
/* A condition keyed by `key` goes bad (or good again) for this store:
 * true when that is the process's edge (the first bad, the last good). A
 * store calls it only on its own changes (bad, good, bad, ...). */
bool sl__revent_edge(struct sl__rstore *st, const char *key, bool bad);
/* A one-off condition keyed by `key`: true the first time in the process
 * until sl__revent_clear(key) (e.g. a sentinel not knowing the name). */
bool sl__revent_once(struct sl__rstore *st, const char *key);
void sl__revent_clear(struct sl__rstore *st, const char *key);

/* redis_health.c: the snapshot other threads read. */
int sl__rhealth_init(struct sl__rstore *st);
void sl__rhealth_close(struct sl__rstore *st);
/* Recompute and publish every node's state (loop thread; on changes). */
void sl__rhealth_publish(struct sl__rstore *st);
/* store.h's health op. */
void sl__rhealth_get(const struct sl__store *s, struct sl__store_health *out);
/* The kind's health members and node gauges over stores[0..n). */
bool sl__rhealth_members(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                         size_t *len);
bool sl__rhealth_metrics(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                         size_t *len);

/* redis_sentinel.c: the master through Sentinel. */
/* Start asking the sentinels of cfg.sentinels (SL_OK without any). */
int sl__rsentinel_init(struct sl__rstore *st);
void sl__rsentinel_close(struct sl__rstore *st);
/* Is a master known? (Without Sentinel: always.) */
static inline bool sl__rsentinel_known(const struct sl__rstore *st)
{
    return st->sentinel == NULL || st->sview.known;
}
/* The master's connection failed, or it says it is not a master: ask. */
void sl__rsentinel_lost(struct sl__rstore *st);
/* sl__sentinel_parse_switch (a +switch-master message): link/rmaster.h */

/* redis_olc.c */
int sl__olc_init(struct sl__rstore *st);
uint64_t sl__olc_hash(const struct sl__rstore *st, const char *key, size_t len);
void sl__olc_clear(struct sl__rstore *st);
/* Cached denial for `hash` at `now` covering `cost`, or NULL (always NULL
 * while the reset announcements are not being received). */
const struct sl__olc_slot *sl__olc_find(const struct sl__rstore *st, uint64_t hash, int64_t now_ns,
                                        uint64_t cost);
void sl__olc_insert(struct sl__rstore *st, uint64_t hash, uint64_t cost, int64_t until_ns,
                    int64_t reset_at_ns);
void sl__olc_forget(struct sl__rstore *st, uint64_t hash);

#endif /* SL_STORE_REDIS_INT_H */
