/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stores.c - the workers' stores as the rooms above the core see them
 * (stores.h): readiness for /readyz, the stores' own lines in /metrics,
 * the kind's name and rules shared across nodes, through the store
 * interface (store.h) only, whatever the kind of store.
 *
 * It reads only what the stores publish for any thread; it never touches a
 * worker's connections.
 */
#include <stdlib.h>
#include <string.h>

#include "server-t.h"
#include "store.h"
#include "stores.h"
#include "worker-t.h"
#include "xalloc.h"

bool sl__server_stores_ready(const struct sl__server *srv)
{
    for (unsigned i = 0; i < srv->n_workers; i++)
        if (srv->workers[i].store == NULL || !sl__store_ready(srv->workers[i].store))
            return false;
    return true;
}

size_t sl__metrics_render_store(const struct sl__server *srv, char *buf, size_t cap, size_t *len)
{
    struct sl__store **stores = sl__xzalloc(srv->n_workers * sizeof(*stores)); /* a scrape */
    size_t n;

    for (unsigned i = 0; i < srv->n_workers; i++)
        stores[i] = srv->workers[i].store;
    n = sl__store_metrics_render(stores, srv->n_workers, buf, cap, len);
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

const char *sl__server_store_type(const struct sl__server *srv)
{
    return sl__store_config_type(srv->cfg.store);
}

bool sl__server_rules_shared(const struct sl__server *srv)
{
    return sl__store_rules_shared(srv->cfg.store);
}

int sl__server_rules_publish(const struct sl__server *srv, const char *id, const char *yaml)
{
    return sl__store_rules_publish(srv->cfg.store, id, yaml, yaml != NULL ? strlen(yaml) : 0, NULL);
}
