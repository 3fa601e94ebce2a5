/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stores.h - the workers' stores as the rooms above the core may see them
 * (internal): their health (for /readyz and /healthz?verbose), their lines
 * in /metrics, their state for operators (the dashboard), their kind's
 * name, and rules shared across nodes through the store - whatever the
 * kind of store, and without the store's own header (store.h is the
 * core's only).
 */
#ifndef SL_SERVER_STORES_H
#define SL_SERVER_STORES_H

#include <stdbool.h>
#include <stddef.h>

struct sl__server;

/* Room always enough for sl__metrics_render_store()'s output (the same
 * bound as store.h's SL__STORE_METRICS_MAX), and for
 * sl__server_stores_render_health()'s (SL__STORE_HEALTH_MAX). */
#define SL__METRICS_STORE_MAX 16384
#define SL__STORES_HEALTH_MAX 32768

/* The configured kind of store ("memory", "redis"), for display. */
const char *sl__server_store_type(const struct sl__server *srv);

/* How the workers' stores decide now (the worst of them), as store.h's
 * enum sl__store_state says it. */
enum sl__stores_state {
    SL__STORES_UP = 0,       /* with their own state */
    SL__STORES_DEGRADED = 1, /* checks answered, some by a local or allow failure policy */
    SL__STORES_STARTING = 2, /* not connected yet, nothing failed yet */
    SL__STORES_DOWN = 3,     /* checks cannot be decided (only denied by policy) */
};

/* Their state, and what is wrong in why[0..cap) ("" when up). Any thread. */
enum sl__stores_state sl__server_stores_health(const struct sl__server *srv, char *why, size_t cap);

/* Append the stores' health as one JSON object (type, state, why and the
 * store's per-node view) to buf[*len..cap). Bytes appended, 0 if they
 * would not fit. Any thread. */
size_t sl__server_stores_render_health(const struct sl__server *srv, char *buf, size_t cap,
                                       size_t *len);

/* Give the stores the server's log (before the workers make them). */
void sl__server_stores_log_to_server(struct sl__server *srv);

/* Append the stores' own counters, summed over every worker, in the
 * Prometheus text format to buf[*len..cap) (nothing for a store without
 * metrics of its own). Returns the bytes appended (0 if they would not
 * fit). Any thread. */
size_t sl__metrics_render_store(const struct sl__server *srv, char *buf, size_t cap, size_t *len);

/* Room always enough for sl__server_store_status()'s output. */
#define SL__STATUS_STORE_MAX 4096

/* The stores' state for operators as the members of a JSON object (no
 * braces; store.h's sl__store_status_render) appended to buf[*len..cap);
 * the bytes appended (0: none). Any thread. */
size_t sl__server_store_status(const struct sl__server *srv, char *buf, size_t cap, size_t *len);

/* Does the store share rules written here with the other nodes? */
bool sl__server_rules_shared(const struct sl__server *srv);
/* Publish rule `id` (yaml NUL-terminated) or its deletion (yaml NULL) to
 * the other nodes. Blocks: call it off the event loops. SL_OK, or why not. */
int sl__server_rules_publish(const struct sl__server *srv, const char *id, const char *yaml);

/* A fleet's shared figures through the store (store.h's
 * sl__store_fleet_*: the Redis and hybrid stores; the memory store shares
 * none, *out NULL). The handle copies what it needs of the configuration;
 * share blocks (off the event loops). */
struct sl__store_fleet;
struct sl__server_fleet_put {
    const char *name;  /* the hash's name (the store adds its prefix) */
    const char *field; /* this node's id */
    const char *value; /* "<expiry ms> ..." */
    long long now_ms;  /* wall clock: fields expiring before this go */
    long long keep_ms; /* the hash's expiry */
};
int sl__server_fleet_open(const struct sl__server *srv, struct sl__store_fleet **out);
int sl__server_fleet_share(struct sl__store_fleet *f, const struct sl__server_fleet_put *p,
                           char **out, size_t *len);

#endif /* SL_SERVER_STORES_H */
