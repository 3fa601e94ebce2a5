/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proto_name.h - the protocols as the configuration names them (internal):
 * a listener's `protocols:` list is a mask with one bit per entry of the
 * table sl__proto_names_reg, which lists the protocols' names in the order
 * of sl__protos (proto.h).
 *
 * The configuration needs only the names, so the table is apart from the
 * protocols themselves: `sluice check -c` links it without any room's
 * runtime. The daemon checks at start that both tables agree
 * (sl__proto_registered, proto.h).
 */
#ifndef SL_SERVER_PROTO_NAME_H
#define SL_SERVER_PROTO_NAME_H

#include <stdbool.h>
#include <stddef.h>

struct sl__proto_name {
    const char *name; /* as in `protocols:`; NULL ends the table */
    bool opt_in;      /* served only by listeners that list it (struct sl__proto) */
    const char *alpn; /* its ALPN id over TLS, or NULL (struct sl__proto) */
};

/* In sniffing order, as sl__protos; defined by the configuration's
 * registration (server/config_sections.c). */
extern const struct sl__proto_name sl__proto_names_reg[];

/* The bit of the protocol named name[0..len) in a listener's mask, or 0
 * when this build speaks no such protocol. */
unsigned sl__proto_bit_named(const char *name, size_t len);

/* The mask of every protocol, and of those a listener without a
 * `protocols:` list serves (all but the opt-in ones). */
unsigned sl__proto_all(void);
unsigned sl__proto_default(void);

/* The names in `mask`, separated by ", ", into buf[0..cap) (truncated). */
void sl__proto_names(unsigned mask, char *buf, size_t cap);

#endif /* SL_SERVER_PROTO_NAME_H */
