/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * client_key.h - what names one client for the per-client budgets
 * (server.max_connections_per_ip, admin.max_failures) (internal): an IPv4
 * address, or an IPv6 network of server.ipv6_client_prefix bits. One
 * IPv6 host is usually given a whole /64, so counting each address would
 * let it take 2^64 budgets. Pure: no I/O, no state.
 */
#ifndef SL_SERVER_CLIENT_KEY_H
#define SL_SERVER_CLIENT_KEY_H

#include <stddef.h>
#include <sys/socket.h>

/*
 * The client key of address `sa` into out: 4 bytes for IPv4 and for an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d, a dual-stack listener's IPv4
 * client: the same client as a.b.c.d); 16 bytes for other IPv6, the bits
 * past the first `v6_prefix_bits` (1..128; outside: 128) zeroed. Returns
 * the key's length, 0 for another family.
 */
size_t sl__client_key(const struct sockaddr *sa, unsigned v6_prefix_bits, unsigned char out[16]);

#endif /* SL_SERVER_CLIENT_KEY_H */
