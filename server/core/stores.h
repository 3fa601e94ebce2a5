/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stores.h - the workers' stores as the rooms above the core may see them
 * (internal): readiness, their lines in /metrics, their state for
 * operators, their kind's name, and
 * rules shared across nodes through the store - whatever the kind of
 * store, and without the store's own header (store.h is the core's only).
 */
#ifndef SL_SERVER_STORES_H
#define SL_SERVER_STORES_H

#include <stdbool.h>
#include <stddef.h>

struct sl__server;

/* Room always enough for sl__metrics_render_store()'s output (the same
 * bound as store.h's SL__STORE_METRICS_MAX). */
#define SL__METRICS_STORE_MAX 8192

/* The configured kind of store ("memory", "redis"), for display. */
const char *sl__server_store_type(const struct sl__server *srv);

/* Every worker's store can decide with its own state now. Any thread. */
bool sl__server_stores_ready(const struct sl__server *srv);

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

#endif /* SL_SERVER_STORES_H */
