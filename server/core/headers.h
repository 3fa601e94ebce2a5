/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * headers.h - the rate-limit response headers of a decision (internal), for
 * every protocol that answers over HTTP: the HTTP API, Envoy's answers
 * (response_headers_to_add), the proxy.
 *
 * From one struct sl_result this writes, as "Name: value\r\n" lines:
 *   RateLimit-Policy: "name";q=100;w=60      (IETF draft-ietf-httpapi-
 *   RateLimit: "name";r=99;t=60               ratelimit-headers-10)
 *   X-RateLimit-Limit / -Remaining / -Reset   (Reset: Unix epoch seconds)
 *   Retry-After: 12                           (denials only)
 * It does not decide which HTTP status to send, and it does not write the
 * status line or any other header.
 *
 * Ownership: everything is borrowed for the call; output goes into the
 * caller's buffer. No allocation, no clock (the caller passes now_ns).
 */
#ifndef SL_SERVER_HEADERS_H
#define SL_SERVER_HEADERS_H

#include <stddef.h>
#include <stdint.h>

#include "config-t.h"
#include "sluice.h"

/* The header families (enum sl__hdr_family) are configuration: config-t.h. */

/*
 * The status that speaks for the whole request (docs/contracts.md §Decisions): the denying
 * one with the longest retry (-1 longest) if any status denies, otherwise the
 * one with the lowest remaining (tie: the longer period). NULL when no
 * status has a limit (nothing applied: no headers).
 */
const struct sl_status *sl__hdr_primary(const struct sl_result *res);

/*
 * Append the header lines of `families` for `res` decided at `now_ns` to
 * buf[0..cap). The IETF fields list every distinct limit reported (one list
 * member each, in status order); the X- fields and Retry-After come from
 * sl__hdr_primary(). Retry-After is written only when res->verdict is
 * SL_DENY and the retry is not -1 (seconds, rounded up). Names are sent as
 * sf-strings (quote and backslash escaped, bytes outside printable ASCII
 * replaced by '?'); a limit without a name is called "default". Integers
 * are clamped to the sf-integer range.
 *
 * Returns SL_OK with *len the bytes written, or SL_ETOOBIG (buf too small;
 * its content is then unspecified). With no limit reported, writes nothing.
 */
int sl__hdr_write(const struct sl_result *res, int64_t now_ns, unsigned families, char *buf,
                  size_t cap, size_t *len);

#endif /* SL_SERVER_HEADERS_H */
