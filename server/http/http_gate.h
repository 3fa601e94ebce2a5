/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_gate.h - who may call the admin endpoints (internal). In order:
 *  1. the listener must serve them (the `admin: true` listener, or loopback
 *     listeners when none is marked): 404 otherwise;
 *  2. the Host header must name this listener's address, the address the
 *     client reached, `localhost` on loopback, or a name of admin.hosts:
 *     421 otherwise (a DNS-rebound page sends its own name);
 *  3. an Origin header must be this very origin, and a Sec-Fetch-Site
 *     header `same-origin` or `none`: 403 otherwise (a web page);
 *  4. `Authorization: Bearer TOKEN` with the server's token: 401 with
 *     WWW-Authenticate otherwise (there is always a token: token.h);
 *  5. a POST, PUT or PATCH, or any write with a body, says
 *     `Content-Type: application/json`: 415 otherwise.
 * The checks that need no connection are exposed for the unit tests.
 */
#ifndef SL_SERVER_HTTP_GATE_H
#define SL_SERVER_HTTP_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include "http1.h"

struct sl__conn;

/* Does the listener of `c` serve the admin endpoints at all? (404 if not) */
bool sl__gate_listener(const struct sl__conn *c);

/* Is `authorization` (the header's value, may be empty) acceptable for a
 * server whose token is `token` (NULL: nothing is)? The token is compared
 * in constant time over the token's length. */
bool sl__gate_token_ok(const char *token, const char *authorization, size_t len);

/* What a Host header may name (all borrowed, NUL-terminated; NULL: none). */
struct sl__gate_names {
    const char *listener;     /* the listener's configured address */
    const char *local;        /* the address the client connected to */
    const char *const *hosts; /* admin.hosts */
    size_t n_hosts;
};

/* Split a Host value into host (an IPv6 address without its brackets) and
 * ":PORT" (len 0 when absent). false when it is not host[:PORT] with PORT
 * a number from 1 to 65535. */
bool sl__gate_split_host(struct sl_str value, struct sl_str *host, struct sl_str *port);
/* Is the Host value `value` one of `n` (any case, any port)? `localhost`
 * is when `n->local` is a loopback address. */
bool sl__gate_host_ok(struct sl_str value, const struct sl__gate_names *n);
/* Is `origin` (an Origin value) the origin of a request to `host` (its
 * Host value): http:// or https:// and the same authority, the scheme's
 * default port optional? "null" and other schemes are not. */
bool sl__gate_origin_ok(struct sl_str origin, struct sl_str host);
/* Is the Content-Type value `v` application/json (any case, parameters
 * after ';' allowed)? */
bool sl__gate_json_type(struct sl_str v);

/* All the checks above, answering the refusal. true when the admin
 * handler may run. */
bool sl__gate_admin(struct sl__conn *c, const struct sl__h1_req *r);

#endif /* SL_SERVER_HTTP_GATE_H */
