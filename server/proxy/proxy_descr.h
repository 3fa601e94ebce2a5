/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_descr.h - a request's descriptors, built by its route's rate
 * limit actions (internal), as Envoy's HTTP rate limit filter builds
 * them: each rate_limits item is one descriptor, each of its actions one
 * entry, in order; an action that cannot produce its entry drops the
 * whole descriptor (a missing header unless skip_if_absent, a header
 * match that did not come out as expected, a client that is not an IP
 * address), and a descriptor left with no entry is not sent.
 *
 * Pure: no allocation, no I/O. The entries point into the request head
 * (valid as long as it is) and into the caller's struct. It does not
 * decide anything (proxy_gate.c hands the descriptors to the decision
 * path).
 */
#ifndef SL_PROXY_DESCR_H
#define SL_PROXY_DESCR_H

#include <stddef.h>

#include "proxy_addr.h"
#include "proxy_limit-t.h"
#include "proxy_parse.h"
#include "sluice.h"

#define SL__PROXY_MAX_ACTIONS (SL_MAX_DESCRIPTORS * SL_MAX_ENTRIES)

/* Room for one request's descriptors (large: one per worker, reused). */
struct sl__proxy_descr {
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl_entry e[SL__PROXY_MAX_ACTIONS];
    char text[SL__PROXY_MAX_ACTIONS][SL__PROXY_ADDR_TEXT]; /* addresses written out */
    char join[SL__PROXY_MAX_HEAD];                         /* a repeated header, joined */
};

/*
 * The descriptors of `l` for the request `h` whose client is `client`
 * (read only when l->uses_address; family 0 when unknown) into out->d.
 * Returns how many (0: nothing to decide).
 */
size_t sl__proxy_descr_build(const struct sl__proxy_limits *l, const struct sl__proxy_head *h,
                             const struct sl__proxy_ip *client, struct sl__proxy_descr *out);

#endif /* SL_PROXY_DESCR_H */
