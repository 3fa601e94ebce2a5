/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_addr.h - client addresses for the proxy's limits (internal): IPv4
 * and IPv6 addresses parsed from text, CIDR ranges (trusted_proxies),
 * prefix masks (masked_remote_address), and the client a request comes
 * from: the socket's peer, or, when the peer is a trusted proxy, the
 * right-most untrusted address of X-Forwarded-For or Forwarded (RFC 7239).
 *
 * Pure: no allocation, no I/O, no clock. It does not decide which header
 * to read (the configuration does) or format anything but an address.
 */
#ifndef SL_PROXY_ADDR_H
#define SL_PROXY_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy_parse.h"

/* An address: 4 bytes (family 4) or 16 (family 6) in a[], network order.
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is kept as IPv4, so a
 * dual-stack listener sees the same client as an IPv4 one. */
struct sl__proxy_ip {
    uint8_t family; /* 4 or 6; 0 none */
    uint8_t a[16];
};

struct sl__proxy_cidr {
    struct sl__proxy_ip ip; /* masked to bits */
    uint8_t bits;           /* prefix length: 0..32 or 0..128 */
};

/* Longest text of an address with a prefix: "ffff:...:ffff/128". */
#define SL__PROXY_ADDR_TEXT 52

/* Which header carries the addresses trusted proxies saw. */
enum sl__proxy_client_header {
    SL__PROXY_XFF = 0,       /* X-Forwarded-For: a, b, c */
    SL__PROXY_FORWARDED = 1, /* Forwarded: for=a, for="[v6]:port" */
};

/* Parse s[0..n): "192.0.2.1", "2001:db8::1", and, as proxies write them in
 * forwarding headers, "192.0.2.1:4711", "[2001:db8::1]" and
 * "[2001:db8::1]:4711". Surrounding spaces are ignored. false when it is
 * not an address (a name, "unknown", an obfuscated identifier). */
bool sl__proxy_ip_parse(const char *s, size_t n, struct sl__proxy_ip *out);

/* Parse "10.0.0.0/8", "2001:db8::/32" or a bare address (a /32 or /128).
 * Host bits beyond the prefix are cleared. false with *why on error. */
bool sl__proxy_cidr_parse(const char *s, struct sl__proxy_cidr *out, const char **why);

/* Is `ip` inside any of set[0..n)? */
bool sl__proxy_cidr_has(const struct sl__proxy_cidr *set, size_t n, const struct sl__proxy_ip *ip);

/* Clear every bit of `ip` after the first `bits` (capped at its length). */
void sl__proxy_ip_mask(struct sl__proxy_ip *ip, unsigned bits);

/* "192.0.2.1" or "2001:db8::1" (RFC 5952), with "/bits" after it when
 * bits >= 0, into out[0..cap); the length written (0 if it did not fit). */
size_t sl__proxy_ip_text(const struct sl__proxy_ip *ip, int bits, char *out, size_t cap);

/*
 * The client of a request that came from `peer`: the peer itself unless
 * it is in trusted[0..n); then the entries of `which` header (every line,
 * in order, read right to left) are walked while they are trusted, and the
 * first untrusted one is the client. When every entry is trusted the
 * left-most is. An entry that is not an address ends the walk: the client
 * is then the last address read (the proxy that wrote the entry).
 */
void sl__proxy_client_ip(const struct sl__proxy_ip *peer, const struct sl__proxy_head *h,
                         enum sl__proxy_client_header which, const struct sl__proxy_cidr *trusted,
                         size_t n, struct sl__proxy_ip *out);

#endif /* SL_PROXY_ADDR_H */
