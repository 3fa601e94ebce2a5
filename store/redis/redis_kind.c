/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_kind.c - the Redis store as a kind of store (store/kind.h): its
 * constructor, its lines in /metrics, and rules across nodes
 * (rules_sync*.c) behind the store interface. Its configuration is
 * redis_kind_config.c's (the key table, redis_config.c's).
 *
 * The metrics read only snapshots the stores publish for any thread
 * (sl__store_redis_stats); they never touch a worker's connections.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "redis_int.h"
#include "rules_sync.h"

static int create(const void *cfg, const struct sl__store_env *env, struct sl__store **out)
{
    return sl__store_redis_new_logged(env, cfg, out);
}

static void *shared_new(void)
{
    return sl__rshared_new();
}

static void shared_free(void *shared)
{
    sl__rshared_free(shared);
}

/* ------------------------------------------------------------ metrics */

/* One counter of struct sl__redis_stats, as a table row. */
static const struct sl__store_counter counters[] = {
#define C(field, help)                                                                             \
    {                                                                                              \
        "sluice_store_redis_" #field "_total", help, offsetof(struct sl__redis_stats, field)       \
    }
    C(checks, "Operations started on the Redis store (check, peek, reset, release)."),
    C(script_calls, "Script calls (EVALSHA/EVAL) sent to Redis."),
    C(replies, "Script replies used."),
    C(timeouts, "Calls answered by the failure policy after the timeout."),
    C(errors, "Error replies and lost connections."),
    C(noscript, "NOSCRIPT replies answered by reloading the script."),
    C(overflow, "Calls refused because max_in_flight was reached."),
    C(unavailable, "Calls refused with no ready connection or the breaker open."),
    C(policy_allow, "Answers given by the allow failure policy."),
    C(policy_deny, "Answers given by the deny failure policy."),
    C(policy_local, "Answers given by the local failure policy (memory store)."),
    C(olc_hits, "Denials answered from the over-limit cache with no round trip."),
    C(olc_inserts, "Keys put into the over-limit cache."),
    C(reconnects, "Connection attempts after the first."),
    C(moved, "Redis Cluster MOVED redirections followed."),
    C(ask, "Redis Cluster ASK redirections followed."),
    C(tryagain, "Redis Cluster TRYAGAIN replies resent (a slot migrating)."),
    C(map_refreshes, "Redis Cluster slot maps loaded (CLUSTER SLOTS)."),
    C(cross_slot, "Checks split over several Redis Cluster slots."),
    C(refunds, "Refund calls sent after a cross-slot denial."),
    C(refund_failures, "Refunds that could not be sent or were not confirmed."),
    C(master_switches, "New master addresses from Sentinel after the first."),
#undef C
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

#define put sl__store_put

static bool metrics(struct sl__store *const *stores, unsigned n, char *buf, size_t cap, size_t *len)
{
    static const char *const engines[] = {"module", "function", "script"};
    struct sl__redis_stats sum = {0}, st;
    unsigned ready = 0, open = 0, by_engine[SL__ENGINE_SCRIPT + 1] = {0};
    size_t start = *len;
    bool ok = true;

    for (unsigned i = 0; i < n; i++) {
        sl__store_redis_stats(stores[i], &st);
        sl__store_add_counters(counters, NCOUNTERS, &sum, &st);
        sum.in_flight += st.in_flight;
        ready += sl__store_redis_ready(stores[i]);
        open += st.breaker != SL__BREAKER_CLOSED;
        if ((unsigned)st.engine <= SL__ENGINE_SCRIPT)
            by_engine[st.engine]++;
    }
    ok = sl__store_put_counters(buf, cap, len, counters, NCOUNTERS, &sum);
    ok = ok && put(buf, cap, len,
                   "# HELP sluice_store_redis_in_flight Calls to Redis awaiting a reply.\n"
                   "# TYPE sluice_store_redis_in_flight gauge\n"
                   "sluice_store_redis_in_flight %llu\n"
                   "# HELP sluice_store_redis_workers_ready Workers whose Redis store is ready.\n"
                   "# TYPE sluice_store_redis_workers_ready gauge\n"
                   "sluice_store_redis_workers_ready %u\n"
                   "# HELP sluice_store_redis_breakers_open Workers whose circuit breaker is "
                   "open or probing.\n"
                   "# TYPE sluice_store_redis_breakers_open gauge\n"
                   "sluice_store_redis_breakers_open %u\n",
                   (unsigned long long)sum.in_flight, ready, open);
    ok = ok && put(buf, cap, len,
                   "# HELP sluice_store_redis_engine Workers whose Redis calls use this engine "
                   "(module: SLUICE.CHECK of sluice-redis.so, function: FCALL, script: "
                   "EVALSHA).\n"
                   "# TYPE sluice_store_redis_engine gauge\n");
    for (unsigned e = SL__ENGINE_MODULE; ok && e <= SL__ENGINE_SCRIPT; e++)
        ok = put(buf, cap, len, "sluice_store_redis_engine{engine=\"%s\"} %u\n",
                 engines[e - SL__ENGINE_MODULE], by_engine[e]);
    ok = ok && sl__rhealth_metrics(stores, n, buf, cap, len);
    if (!ok)
        *len = start;
    return ok;
}

/* ------------------------------------------------------------ state for operators */

static const char *const breaker_names[] = {"closed", "open", "probing"};
static const char *const engine_names[] = {"auto", "module", "function", "script"};

/* Per worker: ready, breaker, connections, cluster nodes, calls waiting;
 * then the failures since start, summed. */
static size_t status(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                     size_t *len)
{
    struct sl__redis_stats st;
    uint64_t timeouts = 0, errors = 0, unavailable = 0, policy = 0;
    size_t start = *len;
    bool ok = put(buf, cap, len, "\"workers\":[");

    for (unsigned i = 0; ok && i < n; i++) {
        sl__store_redis_stats(stores[i], &st);
        timeouts += st.timeouts;
        errors += st.errors;
        unavailable += st.unavailable;
        policy += st.policy_allow + st.policy_deny + st.policy_local;
        ok = put(buf, cap, len,
                 "%s{\"ready\":%s,\"breaker\":\"%s\",\"connections_ready\":%u,"
                 "\"nodes_known\":%u,\"in_flight\":%llu,\"engine\":\"%s\"}",
                 i ? "," : "", sl__store_redis_ready(stores[i]) ? "true" : "false",
                 breaker_names[(unsigned)st.breaker % 3], st.conns_ready, st.nodes_known,
                 (unsigned long long)st.in_flight, engine_names[(unsigned)st.engine % 4]);
    }
    ok = ok && put(buf, cap, len,
                   "],\"timeouts\":%llu,\"errors\":%llu,\"unavailable\":%llu,"
                   "\"policy_answers\":%llu",
                   (unsigned long long)timeouts, (unsigned long long)errors,
                   (unsigned long long)unavailable, (unsigned long long)policy);
    if (!ok) {
        *len = start;
        return 0;
    }
    return *len - start;
}

/* ------------------------------------------------------------ rules across nodes */

static bool rules_shared(const void *cfg)
{
    return ((const struct sl__redis_config *)cfg)->rules_sync;
}

static int rules_publish(const void *cfg, const char *id, const char *yaml, size_t len,
                         uint64_t *version)
{
    struct sl__rsync_config rc;

    if (sl__rsync_config_from_redis(&rc, cfg) != SL_OK)
        return SL_EINVAL;
    return sl__rsync_push(&rc, id, yaml, len, version);
}

static int rules_subscribe(const void *cfg, uv_loop_t *loop, const char *db_path,
                           void (*on_change)(void *arg), void *arg, void **out)
{
    struct sl__rsync_config rc;
    struct sl__rsync *s = NULL;
    int r;

    if (sl__rsync_config_from_redis(&rc, cfg) != SL_OK)
        return SL_EINVAL;
    r = sl__rsync_start(loop, &rc, db_path, on_change, arg, &s);
    *out = s;
    return r;
}

static void rules_unsubscribe(void *sub)
{
    sl__rsync_stop(sub);
}

/* ------------------------------------------------------------ a fleet's shared figures */

static void *fleet_open(const void *cfg)
{
    struct sl__rsync_config *rc = malloc(sizeof(*rc));

    if (rc != NULL && sl__rsync_config_from_redis(rc, cfg) != SL_OK) {
        free(rc);
        rc = NULL;
    }
    return rc;
}

static int fleet_share(void *f, const struct sl__store_fleet_put *p, char **out, size_t *len)
{
    const struct sl__rsync_share s = {p->name, p->field, p->value, p->now_ms, p->keep_ms};

    return sl__rsync_share(f, &s, out, len);
}

static void fleet_close(void *f)
{
    free(f);
}

const struct sl__store_kind sl__store_kind_redis = {
    .config = &sl__store_kind_redis_config,
    .shared_new = shared_new,
    .shared_free = shared_free,
    .create = create,
    .metrics = metrics,
    .status = status,
    .health_members = sl__rhealth_members,
    .rules_shared = rules_shared,
    .rules_publish = rules_publish,
    .rules_subscribe = rules_subscribe,
    .rules_unsubscribe = rules_unsubscribe,
    .fleet_open = fleet_open,
    .fleet_share = fleet_share,
    .fleet_close = fleet_close,
};
