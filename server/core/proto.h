/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proto.h - the protocols sluiced speaks and the sniffing that picks one
 * for a new connection (internal). Types in proto-t.h.
 *
 * The core names no protocol: the table sl__protos is the server's
 * registration (server/protocols.c), and a listener's `protocols:` set is
 * a mask with one bit per entry of that table (sl__proto_bit), read from
 * the configuration by name (proto_name.h).
 */
#ifndef SL_SERVER_PROTO_H
#define SL_SERVER_PROTO_H

#include <stddef.h>

#include "proto-t.h"
#include "proto_name.h"

/* The protocols in sniffing order (more specific sniffers first),
 * NULL-terminated; defined by the server's registration. */
extern const struct sl__proto *const sl__protos[];

/* Its bit in a listener's mask (proto_name.h has the masks by name). */
unsigned sl__proto_bit(const struct sl__proto *p);

/* Do sl__protos and the configuration's sl__proto_names_reg list the same
 * names, opt-in alike, in the same order? The daemon refuses to start
 * otherwise: a listener's mask would serve other protocols than it lists. */
bool sl__proto_registered(void);

/*
 * Choose the protocol for a connection whose first bytes are buf[0..len),
 * among those whose bit is in `enabled`. Returns 1 with *out set, -2 when
 * more bytes are needed to tell, -1 when no enabled protocol accepts them.
 */
int sl__proto_sniff(unsigned enabled, const char *buf, size_t len, const struct sl__proto **out);

/* Every registered protocol's render_metrics (render_stats) output, in
 * table order, appended to `out`; the stats members each preceded by a
 * comma, to follow the caller's own. Any thread. */
void sl__protos_render_metrics(const struct sl__server *srv, struct sl__buf *out);
void sl__protos_render_stats(const struct sl__server *srv, struct sl__buf *out);
/* Every protocol's main_start (0, or -1 at the first that fails) and
 * main_stop (proto-t.h). */
int sl__protos_main_start(struct sl__server *srv);
void sl__protos_main_stop(struct sl__server *srv);

#endif /* SL_SERVER_PROTO_H */
