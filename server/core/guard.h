/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * guard.h - failed admin credentials per client address (internal). Past
 * admin.max_failures failures in a minute from one address, that
 * address's admin requests are refused before their credentials are
 * looked at, until its budget refills (one more try every 60 s /
 * admin.max_failures): a client cannot try tokens at the speed it can
 * send them. The same budget covers every protocol (an HTTP bearer token,
 * a RESP AUTH), which consult it through the connection's server.
 * Thread-safe; bounded memory.
 */
#ifndef SL_SERVER_GUARD_H
#define SL_SERVER_GUARD_H

#include <stdint.h>

struct sl__guard;
struct sl__conn;

/* A guard allowing `per_minute` failures a minute per address (that many
 * at once, then one every 60 s / per_minute), its table keyed with
 * `secret`; NULL when out of memory. */
struct sl__guard *sl__guard_new(unsigned per_minute, const uint8_t secret[16]);
void sl__guard_free(struct sl__guard *g);

/* 0 when c's peer may present credentials now; else the whole seconds
 * until it may (its request is to be refused, credentials unread). Always
 * 0 without a guard (admin.max_failures 0). */
int64_t sl__guard_wait_s(struct sl__conn *c);
/* c's peer presented wrong credentials. */
void sl__guard_failed(struct sl__conn *c);

#endif /* SL_SERVER_GUARD_H */
