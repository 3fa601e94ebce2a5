/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proto.h - the protocols sluiced speaks and the sniffing that picks one
 * for a new connection (internal). Types in proto-t.h.
 *
 * The core names no protocol: the table sl__protos is the server's
 * registration (server/protocols.c), and a listener's `protocols:` set is
 * a mask with one bit per entry of that table (sl__proto_bit).
 */
#ifndef SL_SERVER_PROTO_H
#define SL_SERVER_PROTO_H

#include <stddef.h>

#include "proto-t.h"

/* The protocols in sniffing order (more specific sniffers first),
 * NULL-terminated; defined by the server's registration. */
extern const struct sl__proto *const sl__protos[];

/* The protocol named `name`, or NULL. */
const struct sl__proto *sl__proto_find(const char *name, size_t len);

/* Its bit in a listener's mask, the mask of every protocol, and of those
 * a listener without a `protocols:` list serves (all but the opt-in ones). */
unsigned sl__proto_bit(const struct sl__proto *p);
unsigned sl__proto_all(void);
unsigned sl__proto_default(void);

/* The names in `mask`, separated by ", ", into buf[0..cap) (truncated). */
void sl__proto_names(unsigned mask, char *buf, size_t cap);

/*
 * Choose the protocol for a connection whose first bytes are buf[0..len),
 * among those whose bit is in `enabled`. Returns 1 with *out set, -2 when
 * more bytes are needed to tell, -1 when no enabled protocol accepts them.
 */
int sl__proto_sniff(unsigned enabled, const char *buf, size_t len, const struct sl__proto **out);

#endif /* SL_SERVER_PROTO_H */
