/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_route.h - how a room serves HTTP endpoints (internal): a table of
 * (method, path, handler) rows. The router (http_api.c) walks every table
 * listed in sl__http_route_tables, which the server's registration
 * (server/protocols.c) defines, so a room above HTTP (the admin room) adds
 * endpoints without the HTTP room knowing it.
 */
#ifndef SL_SERVER_HTTP_ROUTE_H
#define SL_SERVER_HTTP_ROUTE_H

#include <stdbool.h>

#include "http1.h"

typedef void (*sl__http_handler)(struct sl__conn *c, const struct sl__h1_req *r);

struct sl__http_route {
    int method; /* enum http_method */
    const char *path;
    sl__http_handler fn;
    bool prefix; /* path is a prefix: /v1/rules/{id} */
    bool admin;  /* behind the gate: admin listener and bearer token */
    /* A GET that also answers HEAD: the handler sees the HEAD request and
     * sends the same head without the body (a static page). */
    bool head;
};

/* The HTTP room's own endpoints (checks, keys, metrics, health), ended by
 * a row whose path is NULL. */
extern const struct sl__http_route sl__http_api_routes[];

/* Every table the router serves, in order, NULL-terminated (defined by the
 * server's registration). */
extern const struct sl__http_route *const sl__http_route_tables[];

#endif /* SL_SERVER_HTTP_ROUTE_H */
