/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_sync.h - one rule set across a fleet of sluiced : rules
 * written through one node's admin API are also stored in Redis (a hash
 * "<prefix>:v1:{rules}", field = rule id, value = "<version>\n<Y|D><yaml>")
 * and announced on the channel "<prefix>:v1:rules"; every node subscribes,
 * pulls the hash, and applies what is newer into its own rules database
 * (rulesdb/), where the rules rank as database rules, then reloads.
 *
 * Works on one Redis, on Redis Cluster and behind Sentinel: the blocking
 * client follows MOVED and ASK (store/redis/redis_cluster.c parses them),
 * cluster pub/sub reaches every node's subscribers, and with Sentinel the
 * seeds are the sentinels, each asked for the master before every call
 * and before every subscription (a replica would refuse the push; a
 * subscription on a demoted master still hears what the new one
 * publishes, and a lost one is made again on the master named then). A
 * node that cannot reach Redis keeps
 * its rules database as it is (on local disk: a restart without Redis
 * serves the last rules it knew).
 *
 * It does not merge: a rule written on a node while Redis was unreachable
 * stays local (the admin API says it was not published) and is replaced
 * when a newer version of the same id arrives. It does not validate beyond
 * what sl_rulesdb_put does, and it does not watch rule files.
 *
 * Threads: sl__rsync_push/_delete/_pull block (each call bounded by
 * timeout_ms per connection) and may run on any thread; the subscriber
 * runs on one loop (the server's main loop) and pulls on libuv's thread
 * pool, one pull at a time. Ownership: the config is copied; strings are
 * borrowed for the call.
 */
#ifndef SL_SERVER_RULES_SYNC_H
#define SL_SERVER_RULES_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "rlink.h"

#define SL__RSYNC_MAX_SEEDS  8
#define SL__RSYNC_PREFIX_MAX 64

struct sl__rsync_seed {
    char host[256];
    int port;
};

struct sl__rsync_config {
    struct sl__rsync_seed seeds[SL__RSYNC_MAX_SEEDS]; /* any node(s), or the sentinels */
    size_t n_seeds;
    char master_name[128]; /* "": the seeds are Redis; else sentinels asked for it */
    char user[128];        /* ACL user, "" for none */
    char password[128];    /* "" for no AUTH */
    char prefix[SL__RSYNC_PREFIX_MAX + 1];
    int64_t timeout_ms;       /* per blocking connection and command; default 500 */
    int64_t period_ms;        /* pull at least this often; default 30000 */
    struct sl__redis_tls tls; /* store.redis.tls (link/rlink.h) */
};
/* Defaults: no seed, prefix "sluice". */
void sl__rsync_config_init(struct sl__rsync_config *c);
struct sl__redis_config;
/* From the Redis store's configuration: its host:port and store.redis.nodes
 * as seeds (or, with Sentinel, the sentinels and the master's name), its
 * credentials and prefix. SL_OK, SL_EINVAL for a bad address list. */
int sl__rsync_config_from_redis(struct sl__rsync_config *o, const struct sl__redis_config *c);

/* Store rule `id` (yaml[0..len)) or its deletion (yaml NULL) in Redis with
 * the next version, and announce it. SL_OK with *version set (may be NULL);
 * SL_EINVAL for an id or prefix too long; SL_ENOENT when no seed answered
 * (Redis unreachable: nothing was stored there). */
int sl__rsync_push(const struct sl__rsync_config *c, const char *id, const char *yaml, size_t len,
                   uint64_t *version);

/* With Sentinel (c->master_name set): ask seed `i` (a sentinel) which
 * master it names, blocking up to timeout_ms. SL_OK with host (cap bytes)
 * and *port; SL_ENOENT when it cannot say. */
int sl__rsync_master(const struct sl__rsync_config *c, size_t i, char *host, size_t cap, int *port);

/* The versions already applied, per rule id (a pull applies only newer
 * ones). Zeroed is empty; free with sl__rsync_known_free. */
struct sl__rsync_known {
    struct sl__rsync_ver *v;
    size_t n, cap;
};
void sl__rsync_known_free(struct sl__rsync_known *k);

/* Read every rule from Redis and apply each newer one to the rules database
 * at db_path (created if missing): put (replace) or delete. *changed counts
 * rows changed. SL_OK; SL_ENOENT when Redis was unreachable (nothing
 * changed); SL_EINVAL for a malformed stored value (the others still
 * apply); a rulesdb error code when the database cannot be opened. */
int sl__rsync_pull(const struct sl__rsync_config *c, const char *db_path, struct sl__rsync_known *k,
                   unsigned *changed);

/* The subscriber: keeps a subscription to the channel on one seed
 * (reconnecting, rotating seeds, with backoff), pulls after every
 * subscription and announcement and every period_ms, and calls on_change
 * on the loop thread after a pull changed the database. */
struct sl__rsync;
typedef void (*sl__rsync_change_cb)(void *arg);

struct sl__rsync_stats {
    uint64_t pulls;    /* pulls completed */
    uint64_t failures; /* pulls that could not reach Redis */
    uint64_t applied;  /* rows changed by pulls */
    uint64_t messages; /* announcements heard */
    bool subscribed;   /* now */
};

int sl__rsync_start(uv_loop_t *loop, const struct sl__rsync_config *c, const char *db_path,
                    sl__rsync_change_cb cb, void *arg, struct sl__rsync **out);
/* Loop thread only. */
void sl__rsync_stats(const struct sl__rsync *s, struct sl__rsync_stats *out);
/* Stop: closes its handles; the memory is freed once the loop has run
 * their close callbacks and any pull in progress has finished. */
void sl__rsync_stop(struct sl__rsync *s);

/* A fleet's shared figures (the rate limit quota service's demand, one
 * hash per pool: "<prefix>:rlqs:{<name>}", field = a node's id, value =
 * "<expiry ms> ..." as the node wrote it). One round trip, a script:
 * write this node's field, drop every field whose expiry (the value's
 * first number, the writer's wall clock in ms) is before now_ms, give the
 * key keep_ms to live, and return what is left. SL_OK with *out (malloc'd,
 * free it) holding "field\0value\0" pairs, *len bytes; SL_ENOENT when no
 * seed answered, SL_EINVAL for a name too long or an error reply. */
struct sl__rsync_share {
    const char *name;  /* the hash's name inside {} */
    const char *field; /* this node's id */
    const char *value; /* "<expiry ms> ..." */
    int64_t now_ms;    /* wall clock */
    int64_t keep_ms;   /* PEXPIRE of the hash */
};
int sl__rsync_share(const struct sl__rsync_config *c, const struct sl__rsync_share *s, char **out,
                    size_t *len);

#endif /* SL_SERVER_RULES_SYNC_H */
