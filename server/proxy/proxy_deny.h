/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_deny.h - the answer to a request its route's limits denied
 * (internal; proxy_deny.c). Loop thread only, like the room.
 */
#ifndef SL_PROXY_DENY_H
#define SL_PROXY_DENY_H

#include <stddef.h>
#include <stdint.h>

#include "conn-t.h"
#include "proxy_limit-t.h"
#include "sluice.h"

struct sl__proxy_local;

/*
 * The answer to `res` (a denial decided at now_ns) under the route's
 * `lim`: its status, Content-Type, header lines (Retry-After and
 * lim->headers) and body, written into `buf` (emptied first, grown as
 * needed) and described by `l` (pointing into buf, valid until buf
 * changes).
 */
void sl__proxy_deny(const struct sl__proxy_limits *lim, const struct sl_result *res, int64_t now_ns,
                    struct sl__buf *buf, struct sl__proxy_local *l);

/* A wait for people: "1 second", "90 seconds", "3 minutes", "2 hours",
 * "3 days" (rounded up; at least one second). */
void sl__proxy_wait_text(int64_t ns, char *out, size_t cap);

#endif /* SL_PROXY_DENY_H */
