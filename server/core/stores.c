/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stores.c - the workers' stores as the rooms above the core see them
 * (stores.h): their health for /readyz and /healthz?verbose, the stores'
 * own lines in /metrics, the kind's name, the server's log given to the
 * stores, and rules shared across nodes, through the store interface
 * (store.h) only, whatever the kind of store.
 *
 * It reads only what the stores publish for any thread; it never touches a
 * worker's connections.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server-t.h"
#include "store.h"
#include "stores.h"
#include "worker-t.h"
#include "xalloc.h"

/* The workers' stores as an array (a scrape or a probe: allocated). */
static struct sl__store **stores_of(const struct sl__server *srv)
{
    struct sl__store **stores = sl__xzalloc((srv->n_workers + 1) * sizeof(*stores));

    for (unsigned i = 0; i < srv->n_workers; i++)
        stores[i] = srv->workers[i].store;
    return stores;
}

enum sl__stores_state sl__server_stores_health(const struct sl__server *srv, char *why, size_t cap)
{
    struct sl__store **stores = stores_of(srv);
    struct sl__store_health h;

    sl__store_health_sum(stores, srv->n_workers, &h);
    free(stores);
    snprintf(why, cap, "%s", h.why);
    return h.state == SL__STORE_UP         ? SL__STORES_UP
           : h.state == SL__STORE_DEGRADED ? SL__STORES_DEGRADED
           : h.state == SL__STORE_STARTING ? SL__STORES_STARTING
                                           : SL__STORES_DOWN;
}

size_t sl__server_stores_render_health(const struct sl__server *srv, char *buf, size_t cap,
                                       size_t *len)
{
    struct sl__store **stores = stores_of(srv);
    size_t n = sl__store_health_render(stores, srv->n_workers, buf, cap, len);

    free(stores);
    return n;
}

size_t sl__metrics_render_store(const struct sl__server *srv, char *buf, size_t cap, size_t *len)
{
    struct sl__store **stores = stores_of(srv);
    size_t n = sl__store_metrics_render(stores, srv->n_workers, buf, cap, len);

    free(stores);
    return n;
}

size_t sl__server_store_status(const struct sl__server *srv, char *buf, size_t cap, size_t *len)
{
    struct sl__store **stores = sl__xzalloc(srv->n_workers * sizeof(*stores)); /* a read */
    size_t n;

    for (unsigned i = 0; i < srv->n_workers; i++)
        stores[i] = srv->workers[i].store;
    n = sl__store_status_render(stores, srv->n_workers, buf, cap, len);
    free(stores);
    return n;
}

static void store_log(void *arg, enum sl__store_level level, const char *event, const char *line)
{
    static const enum sl__log_level levels[] = {SL__LOG_ERROR, SL__LOG_WARN, SL__LOG_INFO,
                                                SL__LOG_DEBUG};

    (void)arg;
    sl__log_event(levels[(unsigned)level <= SL__SLOG_DEBUG ? level : SL__SLOG_DEBUG], event, "%s",
                  line);
}

void sl__server_stores_log_to_server(struct sl__server *srv)
{
    sl__store_config_set_log(srv->cfg.store, store_log, srv);
}

const char *sl__server_store_type(const struct sl__server *srv)
{
    return sl__store_config_type(srv->cfg.store);
}

bool sl__server_rules_shared(const struct sl__server *srv)
{
    return sl__store_rules_shared(srv->cfg.store);
}

int sl__server_fleet_open(const struct sl__server *srv, struct sl__store_fleet **out)
{
    return sl__store_fleet_open(srv->cfg.store, out);
}

int sl__server_fleet_share(struct sl__store_fleet *f, const struct sl__server_fleet_put *p,
                           char **out, size_t *len)
{
    const struct sl__store_fleet_put q = {p->name, p->field, p->value, p->now_ms, p->keep_ms};

    return sl__store_fleet_share(f, &q, out, len);
}

int sl__server_rules_publish(const struct sl__server *srv, const char *id, const char *yaml)
{
    return sl__store_rules_publish(srv->cfg.store, id, yaml, yaml != NULL ? strlen(yaml) : 0, NULL);
}
