/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis.h - the Redis store : the async store interface of
 * store/include/store.h over one Redis, shared by every sluiced (internal).
 *
 * A check is one call on one of a few pipelined connections per worker
 * (Redis links on the worker's loop, link/rlink.h; TLS with
 * store.redis.tls): the Redis module's command
 * when the server has sluice-redis.so loaded, else FCALL of the Functions
 * library (Redis 7+), else EVALSHA of the script (store/redis/lua/NN_*.lua);
 * store.redis.engine forces one.
 * Every call has a timeout (a libuv timer; hiredis 0.14 has none); past it,
 * on an error, with too many requests in flight, or while the circuit
 * breaker is open, the domain's failure policy answers: allow, deny, or
 * local (the memory store decides). Keys denied until T are answered from
 * the over-limit cache until T without a round trip.
 *
 * With a rules snapshot it resolves requests as sl_limiter_check does
 * (replaces, requests_per_unit: 0, quota_mode with its second call).
 *
 * Redis Cluster (store.redis.cluster: true): the slot map comes
 * from CLUSTER SLOTS (store/redis/redis_cluster.c), each master gets its own
 * connections, MOVED and ASK are followed, and a check whose descriptors
 * hash to several slots is one call per slot, in parallel, with a refund
 * call for the slots that consumed when another denied (store/redis/redis_fan.c).
 *
 * With Sentinel (store.redis.sentinels, store.redis.master_name) the one
 * Redis is the master the sentinels name (SENTINEL
 * get-master-addr-by-name), followed on +switch-master
 * (store/redis/redis_sentinel.c); the failure policy answers in between.
 *
 * What an operator should see (a node lost or back, the breaker, policy
 * answers) goes to the server's log once per process, rate-limited
 * (redis_events.c); the per-node state is published for any thread
 * (redis_health.c: /readyz, /healthz?verbose, /metrics).
 *
 * Ownership and threads: a store belongs to one worker loop and is used on
 * that loop's thread only, except sl__store_redis_stats, _ready and the
 * health functions, which any thread may call (a metrics scrape, /readyz);
 * its config is copied. The local limiter is
 * borrowed and must outlive the store. Free it after the loop has stopped
 * (sl__store_free runs the loop once more to close its handles).
 */
#ifndef SL_STORE_REDIS_H
#define SL_STORE_REDIS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "rcluster.h"
#include "redis_plan.h"
#include "rlink.h"
#include "store.h"

enum sl__redis_policy {
    SL__POLICY_ALLOW = 0, /* answer allowed (fail open) */
    SL__POLICY_DENY = 1,  /* answer denied (fail closed) */
    SL__POLICY_LOCAL = 2, /* decide with this process's memory store */
};

#define SL__REDIS_MAX_DOMAIN_POLICIES 32
#define SL__SENTINEL_MAX              8 /* sentinels in store.redis.sentinels */
#define SL__REDIS_CRED_MAX            128

struct sl__redis_domain_policy {
    char domain[SL__REDIS_CRED_MAX];
    enum sl__redis_policy policy;
};

struct sl__redis_config {
    char host[256];
    int port;
    char user[SL__REDIS_CRED_MAX];     /* ACL user; "" for AUTH password */
    char password[SL__REDIS_CRED_MAX]; /* "" for no AUTH */
    struct sl__redis_opts opts;        /* prefix, clock, expiry slack */
    int64_t timeout_ms;                /* per call */
    unsigned connections;              /* per worker */
    unsigned max_in_flight;            /* per worker */
    enum sl__redis_policy policy;      /* the default failure policy */
    struct sl__redis_domain_policy domains[SL__REDIS_MAX_DOMAIN_POLICIES];
    size_t n_domains;
    unsigned breaker_failures;    /* consecutive failures that open it */
    int64_t breaker_open_ms;      /* how long it stays open before a probe */
    int64_t backoff_min_ms;       /* reconnection backoff (a constant: 50) */
    int64_t backoff_max_ms;       /* ... doubling up to this */
    unsigned olc_entries;         /* over-limit cache slots; 0 disables */
    int64_t olc_max_ms;           /* longest a cached denial is trusted (a constant: 60000) */
    enum sl__redis_engine engine; /* store.redis.engine: AUTO detects (redis_conn.c) */
    bool cluster;                 /* Redis Cluster: route by slot */
    char nodes[512];              /* more seeds, "host:port,host:port"; "" none */
    bool rules_sync;              /* rules across nodes through Redis (sluiced) */
    char sentinels[512];          /* Sentinel addresses, "host:port,..."; "" none */
    char master_name[128];        /* the master the sentinels watch (with sentinels) */
    struct sl__redis_tls tls;     /* store.redis.tls (link/rlink.h) */
};
/* Every key at its default (the table in redis_config.c), plus the
 * constants that are not keys (sl__redis_config_constants). */
void sl__redis_config_init(struct sl__redis_config *c);
void sl__redis_config_constants(struct sl__redis_config *c);
struct sl__key;
/* The key table itself (for the store kind). */
const struct sl__key *sl__redis_config_keys(size_t *n);
/* store.redis.policies.DOMAIN: SL_OK, SL_ENOENT (another key), SL_EINVAL with *why. */
int sl__redis_config_set_pattern(struct sl__redis_config *c, const char *key, const char *value,
                                 const char **why);
/* "allow" | "deny" | "local" -> policy; SL_EINVAL otherwise. */
int sl__redis_policy_parse(const char *s, enum sl__redis_policy *out);

/*
 * One scalar configuration key of the Redis store (store/redis/redis_config.c):
 * `key` is the full dotted path ("store.redis.host", "store.clock",
 * "store.redis.policies.<domain>"), `value` its text. SL_OK; SL_ENOENT when
 * the key is not one of the Redis store's (the caller reports it unknown);
 * SL_EINVAL with *why set to a static sentence saying what to fix.
 */
int sl__redis_config_set(struct sl__redis_config *c, const char *key, const char *value,
                         const char **why);
/* Every key with its default and meaning, one line each, for --help. */
void sl__redis_config_help(FILE *out);

enum sl__breaker { SL__BREAKER_CLOSED = 0, SL__BREAKER_OPEN = 1, SL__BREAKER_PROBING = 2 };

/* Counters for /metrics and /readyz: a snapshot, taken on any thread. */
struct sl__redis_stats {
    uint64_t checks;       /* check/peek/reset/release started */
    uint64_t script_calls; /* EVALSHA/EVAL sent */
    uint64_t replies;      /* script replies used */
    uint64_t timeouts;     /* calls answered by the policy after timeout_ms */
    uint64_t errors;       /* error replies and lost connections */
    uint64_t noscript;     /* NOSCRIPT answered by reloading the script */
    uint64_t overflow;     /* refused: max_in_flight reached */
    uint64_t unavailable;  /* refused: no connection ready / breaker open */
    uint64_t policy_allow; /* answers by each failure policy */
    uint64_t policy_deny;
    uint64_t policy_local;
    uint64_t olc_hits; /* answered from the over-limit cache */
    uint64_t olc_inserts;
    uint64_t reconnects;          /* connection attempts after the first */
    uint64_t in_flight;           /* now */
    uint64_t moved;               /* MOVED redirections followed (cluster) */
    uint64_t ask;                 /* ASK redirections followed (cluster) */
    uint64_t tryagain;            /* TRYAGAIN replies resent (slot migrating) */
    uint64_t map_refreshes;       /* CLUSTER SLOTS replies loaded */
    uint64_t cross_slot;          /* checks split over several slots */
    uint64_t refunds;             /* refund calls sent after a cross-slot denial */
    uint64_t refund_failures;     /* refunds not sent or not confirmed */
    uint64_t master_switches;     /* a new master address from Sentinel (after the first) */
    unsigned nodes_known;         /* masters in the slot map (1 without cluster) */
    unsigned conns_ready;         /* now */
    bool olc_active;              /* the cache is in use (reset announcements heard) */
    enum sl__breaker breaker;     /* now */
    enum sl__redis_engine engine; /* calls are built for (until a connection is ready: script) */
};

/* A Redis store on `loop` (the worker's); `local` decides for the `local`
 * policy. Connects in the background: until a connection is ready, the
 * policy answers. SL_OK, SL_EINVAL (bad config), SL_ENOMEM. */
int sl__store_redis_new(uv_loop_t *loop, const struct sl__redis_config *c, sl_limiter *local,
                        struct sl__store **out);
/* The same on env->loop with env->lim as `local`, saying what an
 * operator should see through env->log (NULL: stderr), once per process
 * for the stores that share env->shared (a struct sl__rshared, one per
 * process, from sl__rshared_new; NULL: this store alone). `env` is
 * borrowed for the call (store/kind.h). */
struct sl__rshared;
struct sl__store_env;
int sl__store_redis_new_logged(const struct sl__store_env *env, const struct sl__redis_config *c,
                               struct sl__store **out);
struct sl__rshared *sl__rshared_new(void);
void sl__rshared_free(struct sl__rshared *sh);

/* Is `s` a Redis store? (stats and ready are only for those.) */
bool sl__store_is_redis(const struct sl__store *s);
void sl__store_redis_stats(const struct sl__store *s, struct sl__redis_stats *out);
/* Ready: the breaker is closed and a connection is ready. */
bool sl__store_redis_ready(const struct sl__store *s);

#endif /* SL_STORE_REDIS_H */
