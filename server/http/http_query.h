/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_query.h - URL query strings for the GET endpoints (internal):
 * "domain=api&user=alice&path=%2Fx" into decoded name/value pairs, in order.
 *
 * Decoding is percent-escapes and '+' for space (HTML forms); a malformed
 * escape is an error, not passed through. It does not decode paths and does
 * not know which names mean what.
 *
 * Ownership: decoded bytes go into the caller's scratch buffer and the
 * pairs point into it.
 */
#ifndef SL_SERVER_HTTP_QUERY_H
#define SL_SERVER_HTTP_QUERY_H

#include <stddef.h>

#include "sluice.h"

struct sl__qpair {
    struct sl_str name;
    struct sl_str value;
};

/*
 * Split and decode q[0..len) into at most `max` pairs, decoded bytes into
 * scratch[0..cap) (cap >= len always suffices). Empty pieces ("a=1&&b=2")
 * are skipped; a piece without '=' has an empty value. Returns the number of
 * pairs, SL_ETOOBIG beyond `max` pairs or scratch, SL_EINVAL for a bad
 * escape.
 */
int sl__query_parse(const char *q, size_t len, struct sl__qpair *pairs, size_t max, char *scratch,
                    size_t cap);

#endif /* SL_SERVER_HTTP_QUERY_H */
