/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * store.h - where sluiced's state lives: the asynchronous store interface
 * (internal to sluiced; the one header of store/ that the server sees).
 *
 * Every decision the daemon makes goes through a store: the decision path
 * (server/core/decide.c) starts an operation on its worker's store and the
 * store delivers the result to a callback. The memory store decides in the
 * library's table and calls back before its start function returns; a
 * remote store (Redis, Redis Cluster) calls back from the worker's event
 * loop when the answer arrives. The server is written against this header
 * only and names no store: the configuration keys under `store.`, the
 * choice of store (`store.type`), its health (readiness, a per-node view),
 * the store's lines in /metrics and in the log, and rules shared through
 * the store all go through the functions below, so a new store changes no
 * server file.
 *
 * It does not resolve rules for the caller, format replies or read the
 * clock: the request carries its time (now_ns).
 *
 * Contract of every start function (check, peek, reset, release):
 *  - returns 0: `cb` is called exactly once, possibly before the start
 *    function returns, on the worker loop thread;
 *  - returns a negative SL_E* code: nothing was started, `cb` is never called.
 *  - `req`, `m` and `lease` are borrowed for the duration of the start call
 *    only (a remote store serialises what it needs before returning).
 *  - the result given to `cb` is borrowed for the duration of the callback;
 *    `by` says whether the store's state made it or a failure policy did.
 *
 * Ownership: a store belongs to one worker (one loop thread) and is freed
 * with sl__store_free(); the limiter it is given is shared and outlives it.
 * A store configuration is the server's, read-only once the stores exist.
 */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "sluice.h"

struct sl__store;

/* Who answered a result: the store's own state, or the failure policy a
 * remote store answers by when its state cannot be reached. */
enum sl__store_by {
    SL__BY_STATE = 0,
    SL__BY_ALLOW = 1, /* admitted: the whole quota reported as remaining */
    SL__BY_DENY = 2,  /* denied: remaining 0 */
    SL__BY_LOCAL = 3, /* this process's memory store decided */
};

/* err: 0 or a negative SL_E* code (then `res` is NULL); `by`: who answered
 * (SL__BY_STATE with an error). */
typedef void (*sl__store_cb)(void *arg, int err, const struct sl_result *res, enum sl__store_by by);

/* How a store decides at this moment, from best to worst. */
enum sl__store_state {
    SL__STORE_UP = 0,       /* with its own state */
    SL__STORE_DEGRADED = 1, /* some or all checks by a failure policy that decides (local) or
                               admits (allow): checks are still answered */
    SL__STORE_STARTING = 2, /* not up yet, and nothing has failed: still connecting */
    SL__STORE_DOWN = 3,     /* checks cannot be decided: only the deny policy answers them */
};
struct sl__store_health {
    enum sl__store_state state;
    char why[192]; /* for an operator, "" when up: "redis 10.0.0.5:6379 unreachable" */
};

/*
 * What to decide: `req` (its time, cost and descriptors) and either the
 * rules snapshot to resolve it with (`rules` non-NULL: the store applies
 * matching, Envoy `replaces` and `quota_mode` exactly as sl_limiter_check)
 * or, with `rules` NULL, descriptors already resolved into `m[0..n)` (an ad
 * hoc limit such as CL.THROTTLE's). Borrowed for the start call only; an
 * asynchronous store takes its own sl_rules_ref().
 */
/* The most checks one check_batch call takes. */
#define SL__STORE_BATCH_MAX 32u

struct sl__store_req {
    const struct sl_request *req;
    const sl_rules *rules;
    const struct sl_match *m;
    size_t n;
};

/* A release: the lease token (len bytes), the time, and the request's
 * observed latency (negative: none). */
struct sl__store_lease {
    const char *lease;
    size_t len;
    int64_t now_ns;
    int64_t latency_ns;
};

struct sl__store_ops {
    const char *name;
    /* Decide req->hits (0 peeks) on every limit of every descriptor,
     * all-or-nothing (sl_limiter_check / _check_matched semantics). */
    int (*check)(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg);
    /* Report the state as a cost-0 check would, consuming nothing. */
    int (*peek)(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg);
    /* Forget the state of every limit of every descriptor; the result's
     * statuses are those of the fresh state. */
    int (*reset)(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg);
    /* Release every concurrency slot named by a lease token; `res` is NULL,
     * err SL_ENOENT if nothing was held, SL_EINVAL for a malformed token.
     * `latency_ns` (negative: none) is the request's observed latency, a
     * sample for the adaptive_concurrency slots (decided in this process
     * whatever the store: docs/distributed.md); other slots ignore it. */
    int (*release)(struct sl__store *s, const struct sl__store_lease *l, sl__store_cb cb,
                   void *arg);
    /* Optional, for a store that answers at once (NULL: the decision path
     * starts each check alone): decide q[0..n) (n <= SL__STORE_BATCH_MAX)
     * in order, each exactly as check() would, and call cb(args[i], ...)
     * for each, in order, before returning. */
    void (*check_batch)(struct sl__store *s, const struct sl__store_req *q, size_t n,
                        sl__store_cb cb, void *const *args);
    /* How it decides now (struct sl__store_health). Any thread, any time
     * (a /readyz on another worker asks): reads what the store publishes. */
    void (*health)(const struct sl__store *s, struct sl__store_health *out);
    void (*free)(struct sl__store *s);
};

/* How one kind of store plugs in (store/kinds.c lists them). */
struct sl__store_kind;

struct sl__store {
    const struct sl__store_ops *ops;
    const struct sl__store_kind *kind;
};

/* ------------------------------------------------------------ configuration */

/* Every store's configuration keys (`store.type` and the keys under
 * `store.` that each kind owns), with their defaults applied. Opaque. */
struct sl__store_config;

/* SL_OK or SL_ENOMEM. */
int sl__store_config_new(struct sl__store_config **out);
void sl__store_config_free(struct sl__store_config *c);

/*
 * Set one scalar key: `key` is the full dotted path ("store.type",
 * "store.redis.host", "store.redis.policies.api"), `value` its text, `dir`
 * the directory relative paths are resolved against (may be NULL). SL_OK;
 * SL_ENOENT when no store owns the key (the caller reports it unknown);
 * SL_EINVAL with err[0..errlen) saying what to fix.
 */
int sl__store_config_set(struct sl__store_config *c, const char *key, const char *value,
                         const char *dir, char *err, size_t errlen);

/* Is `key` (a dotted path) a mapping the stores own, such as "store.redis"
 * or "store.redis.policies"? The configuration walker descends into it. */
bool sl__store_config_is_section(const char *key);
/* The section `key` (one sl__store_config_is_section accepts) is given
 * as a mapping, possibly empty: store.redis.tls: {} turns TLS on. */
int sl__store_config_section(struct sl__store_config *c, const char *key);

/* The configured kind's name ("memory", "redis"). */
const char *sl__store_config_type(const struct sl__store_config *c);

/* Check the configuration as a whole once the file is read (e.g. a
 * cluster's seed list). SL_OK, or SL_EINVAL with err saying what to fix. */
int sl__store_config_check(const struct sl__store_config *c, char *err, size_t errlen);

/* Every key with its default and meaning (sluiced --help). */
void sl__store_config_help(FILE *out);

/* ------------------------------------------------------------ the log */

/* The levels of the server's log. */
enum sl__store_level {
    SL__SLOG_ERROR = 0,
    SL__SLOG_WARN = 1,
    SL__SLOG_INFO = 2,
    SL__SLOG_DEBUG = 3
};

/*
 * How a store tells the operator what changed: a node lost or back, a
 * circuit breaker opened or closed, decisions falling back to a failure
 * policy. One call is one line (no newline) of one event: a fixed
 * "store.what" name an operator can grep and alert on, listed in
 * docs/operations.md. The stores of one process say each event once, and
 * rate-limit what repeats: never a line per request. Any thread.
 */
typedef void (*sl__store_log_fn)(void *arg, enum sl__store_level level, const char *event,
                                 const char *line);

/* The server's log, given once before any store or rules subscriber is
 * made from `c` (without it, stores write their lines to stderr). */
void sl__store_config_set_log(struct sl__store_config *c, sl__store_log_fn fn, void *arg);

/* ------------------------------------------------------------ stores */

/* A store of the configured kind for one worker: on `loop` (its thread),
 * deciding locally (or falling back) with `lim` (shared, outlives it).
 * The first call on `c` also makes what its stores share in the process
 * (kept in `c`): call it for every worker from one thread, before the
 * workers start (the configuration functions above make nothing of the
 * sort, so that `sluice check -c` links no store).
 * SL_OK, SL_EINVAL (bad configuration), SL_ENOMEM. */
int sl__store_new(struct sl__store_config *c, uv_loop_t *loop, sl_limiter *lim,
                  struct sl__store **out);

static inline void sl__store_free(struct sl__store *s)
{
    if (s != NULL)
        s->ops->free(s);
}

static inline void sl__store_health(const struct sl__store *s, struct sl__store_health *out)
{
    s->ops->health(s, out);
}

/* The health of the workers' stores[0..n) (all of one kind) as one: the
 * worst state, and the `why` of the first store in it. Any thread. */
void sl__store_health_sum(struct sl__store *const *stores, unsigned n,
                          struct sl__store_health *out);

/*
 * Append the health of the workers' stores[0..n) as one JSON object to
 * buf[*len..cap): {"type": ..., "state": "up"|"degraded"|"down", "why":
 * ..., then the kind's own members (the Redis store: "nodes", one per
 * node with its state over the workers, "sentinel")}. Returns the bytes
 * added (0 when they would not fit; *len unchanged). Any thread.
 * SL__STORE_HEALTH_MAX bytes are always enough.
 */
#define SL__STORE_HEALTH_MAX 32768
size_t sl__store_health_render(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                               size_t *len);

/*
 * Append the store's own lines of the /metrics exposition (Prometheus text
 * format), summed over the workers' stores[0..n) (all of one kind), to
 * buf[*len..cap): sluice_store_up for every kind, then the kind's own.
 * Returns the bytes added (0: no room, then *len is unchanged). Any
 * thread: reads snapshots the stores publish. SL__STORE_METRICS_MAX bytes
 * are always enough.
 */
#define SL__STORE_METRICS_MAX 16384
size_t sl__store_metrics_render(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                                size_t *len);

/*
 * The stores' state for operators (the dashboard, `sluice top`): the
 * members of one JSON object, without its braces ("\"name\":value,..."),
 * over the workers' stores[0..n) (all of one kind), appended to
 * buf[*len..cap). What they are is the kind's (a remote store: its
 * breakers, connections and cluster nodes per worker, its failures);
 * whoever shows them prints them as they come. Returns the bytes added (0:
 * nothing to add or no room, then *len is unchanged). Any thread: reads
 * the snapshots the stores publish. SL__STORE_STATUS_MAX bytes are always
 * enough.
 */
#define SL__STORE_STATUS_MAX 4096
size_t sl__store_status_render(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                               size_t *len);

/* ------------------------------------------------------------ rules across nodes */

/*
 * Some stores can share the rules written through one node's admin API
 * with every node of a fleet (the Redis store with store.redis.rules_sync).
 * Does the configured store do so?
 */
bool sl__store_rules_shared(const struct sl__store_config *c);

/* Publish rule `id` (yaml[0..len)) or its deletion (yaml NULL) to the other
 * nodes. Blocks (bounded by the store's timeouts): call it off the event
 * loops. SL_OK with *version set (may be NULL); SL_ENOENT when the store
 * could not be reached (nothing was published); SL_EINVAL when the store
 * does not share rules or the id is too long. */
int sl__store_rules_publish(const struct sl__store_config *c, const char *id, const char *yaml,
                            size_t len, uint64_t *version);

/* The subscriber that applies what other nodes publish into the rules
 * database at `db_path`, calling on_change(arg) on `loop`'s thread after
 * the database changed. *out is NULL (and SL_OK) when the store does not
 * share rules. */
struct sl__store_rules_sub;
int sl__store_rules_subscribe(const struct sl__store_config *c, uv_loop_t *loop,
                              const char *db_path, void (*on_change)(void *arg), void *arg,
                              struct sl__store_rules_sub **out);
/* Stop it (NULL is fine); its memory goes once its handles have closed. */
void sl__store_rules_unsubscribe(struct sl__store_rules_sub *s);

/* ------------------------------------------------------------ a fleet's shared figures */

/*
 * The Redis and hybrid stores let the nodes of a fleet share small
 * figures (the rate limit quota service's demand, server/grpc/rlqs.c):
 * one hash per name, one field per node, each value starting with its
 * expiry (the writer's wall clock, ms). sl__store_fleet_open: SL_OK with
 * *out NULL when the configured store shares nothing (the memory store).
 * sl__store_fleet_share writes p's field, drops expired fields, sets the
 * hash's expiry and returns every field left as "field\0value\0" pairs
 * in *out (malloc'd; *len bytes). It blocks (bounded by the store's
 * timeouts): call it off the event loops. SL_ENOENT when Redis could not
 * be reached, SL_EINVAL for a name too long or a reply not understood.
 */
struct sl__store_fleet;
struct sl__store_fleet_put {
    const char *name;  /* the hash's name (the store adds its prefix) */
    const char *field; /* this node's id */
    const char *value; /* "<expiry ms> ..." */
    int64_t now_ms;    /* wall clock: fields expiring before this go */
    int64_t keep_ms;   /* the hash's expiry */
};
int sl__store_fleet_open(const struct sl__store_config *c, struct sl__store_fleet **out);
int sl__store_fleet_share(struct sl__store_fleet *f, const struct sl__store_fleet_put *p,
                          char **out, size_t *len);
void sl__store_fleet_close(struct sl__store_fleet *f);

#endif /* SL_STORE_H */
