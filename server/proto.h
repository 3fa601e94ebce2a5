/*
 * proto.h - the table of protocols sluiced speaks and the sniffing that
 * picks one for a new connection (internal). Types in proto-t.h.
 *
 * Adding a protocol: write server/<name>.c defining one
 * `const struct sl__proto sl__proto_<name>`, declare it here and add it to
 * the table in server/proto.c (more specific sniffers first).
 */
#ifndef SL_SERVER_PROTO_H
#define SL_SERVER_PROTO_H

#include "proto-t.h"

extern const struct sl__proto sl__proto_resp;
extern const struct sl__proto sl__proto_http1;

/* The protocols in sniffing order, NULL-terminated. */
extern const struct sl__proto *const sl__protos[];

/* The protocol named `name`, or NULL. */
const struct sl__proto *sl__proto_find(const char *name, size_t len);

/*
 * Choose the protocol for a connection whose first bytes are buf[0..len),
 * among those whose bit is in `enabled`. Returns 1 with *out set, -2 when
 * more bytes are needed to tell, -1 when no enabled protocol accepts them.
 */
int sl__proto_sniff(unsigned enabled, const char *buf, size_t len, const struct sl__proto **out);

#endif /* SL_SERVER_PROTO_H */
