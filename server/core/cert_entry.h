/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cert_entry.h - the `client_cert_name` descriptor entry (internal): the
 * verified client certificate's name as a rate-limit key, always supplied
 * by the server. In every descriptor of a request, an entry whose key is
 * `client_cert_name` gets the name of the certificate the connection's
 * TLS handshake verified as its value, whatever the client wrote there;
 * on a connection without one (clear text, no certificate, one that did
 * not verify) the entry is removed. So a client limited per calling
 * service can neither borrow another service's budget nor step outside
 * its own by naming itself. A descriptor the client sent without that key
 * is left as it is: appending an entry would change what envoyproxy/
 * ratelimit-style rules, which match entries in order, match.
 */
#ifndef SL_SERVER_CERT_ENTRY_H
#define SL_SERVER_CERT_ENTRY_H

#include "sluice.h"

struct sl__conn;

#define SL__CERT_ENTRY_KEY "client_cert_name"

/* Rewrite req's descriptors in place as above. The protocol owns the
 * descriptor and entry arrays (its decoder wrote them), so they are
 * written through; nothing is allocated. The value points into the
 * connection's TLS state, valid while the connection lives. */
void sl__cert_entries(const struct sl__conn *c, struct sl_request *req);

#endif /* SL_SERVER_CERT_ENTRY_H */
