/*
 * store_stats.h - the store's own metrics for GET /metrics (internal).
 * Included by server/http_api.c only.
 */
#ifndef SL_SERVER_STORE_STATS_H
#define SL_SERVER_STORE_STATS_H

#include <stddef.h>

struct sl__server;

/* Room enough for sl__metrics_render_store()'s output. */
#define SL__METRICS_STORE_MAX 4096

/* Append the Redis store's counters, summed over every worker, in the
 * Prometheus text format to buf[*len..cap); nothing for the memory store.
 * Returns the bytes appended (0 if they would not fit). Any thread. */
size_t sl__metrics_render_store(const struct sl__server *srv, char *buf, size_t cap, size_t *len);

#endif /* SL_SERVER_STORE_STATS_H */
