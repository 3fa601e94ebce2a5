/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * privilege.h - the admin privilege, the same on every protocol (internal).
 *
 * A state-changing operator operation (resetting a key, editing rules,
 * kill switches, moving the test clock) needs both: a listener that serves
 * the admin endpoints (the `admin: true` listener, or loopback listeners
 * when none is marked) and proof of the admin token (sluiced always has
 * one: configured, or created by token.c) on the connection or request (HTTP: `Authorization:
 * Bearer TOKEN`; RESP: `AUTH TOKEN`), or a verified client certificate whose
 * name admin.client_cert_names lists. A client on a public listener never gets it.
 */
#ifndef SL_SERVER_PRIVILEGE_H
#define SL_SERVER_PRIVILEGE_H

#include <stdbool.h>
#include <stddef.h>

struct sl__config;
struct sl__listener;

/* Does `given` (len bytes, not NUL-terminated) equal `token` (a C
 * string)? Compared in constant time over the token's length, whatever
 * `given` holds; false when token is NULL. */
bool sl__token_equal(const char *token, const char *given, size_t len);

/* sl__token_equal against the configured admin token. */
bool sl__admin_token_equal(const struct sl__config *cfg, const char *given, size_t len);

/* Is `name` (len bytes; NULL: no verified client certificate) one of
 * admin.client_cert_names? Such a connection is proven as by the token.
 * Names are not secrets: compared plainly. */
bool sl__admin_cert_name_ok(const struct sl__config *cfg, const char *name, size_t len);

/* May a connection on `ls` that has (`proven`) or has not shown the token
 * run an admin operation? */
bool sl__admin_allowed(const struct sl__config *cfg, const struct sl__listener *ls, bool proven);

#endif /* SL_SERVER_PRIVILEGE_H */
