/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_gate.h - who may call the admin endpoints (internal): the listener
 * must serve them (config: the `admin: true` listener, or loopback listeners
 * when none is marked), and when `admin.token` is configured the request
 * must carry `Authorization: Bearer TOKEN`.
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
 * server whose token is `token` (NULL: none required)? The token is compared
 * in constant time over the token's length. */
bool sl__gate_token_ok(const char *token, const char *authorization, size_t len);

/* Check both and answer the refusal (404, or 401 with WWW-Authenticate:
 * Bearer). true when the admin handler may run. */
bool sl__gate_admin(struct sl__conn *c, const struct sl__h1_req *r);

#endif /* SL_SERVER_HTTP_GATE_H */
