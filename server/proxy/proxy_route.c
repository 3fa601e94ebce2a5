/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_route.c - which route a request takes: the first, in the order
 * configured, whose host, path prefix and methods all match. Pure. It
 * does not decode or normalise the target: a prefix matches the bytes as
 * sent, which is also what the upstream receives (docs/proxy.md says what
 * that means for routes used as access control).
 */
#include <string.h>
#include <strings.h>

#include "proxy_int.h"

/* The Host header without its port. */
static struct sl_str host_name(struct sl_str host)
{
    const char *colon;

    if (host.len > 0 && host.p[0] == '[') {
        const char *end = memchr(host.p, ']', host.len);
        return end ? (struct sl_str){host.p, (size_t)(end - host.p) + 1} : host;
    }
    colon = memchr(host.p, ':', host.len);
    return colon ? (struct sl_str){host.p, (size_t)(colon - host.p)} : host;
}

static bool route_matches(const struct sl__proxy_route *r, const struct sl__proxy_head *h)
{
    size_t plen = strlen(r->path_prefix);

    if (h->target.len < plen || memcmp(h->target.p, r->path_prefix, plen) != 0)
        return false;
    if (r->host != NULL) {
        struct sl_str name = host_name(h->host);
        if (name.len != strlen(r->host) || strncasecmp(name.p, r->host, name.len) != 0)
            return false;
    }
    if (r->n_methods == 0)
        return true;
    for (size_t i = 0; i < r->n_methods; i++)
        if (strlen(r->methods[i]) == h->method.len &&
            memcmp(r->methods[i], h->method.p, h->method.len) == 0)
            return true;
    return false;
}

int sl__proxy_route_match(const struct sl__proxy_config *pc, const struct sl__proxy_head *h)
{
    for (size_t i = 0; i < pc->n_routes; i++)
        if (route_matches(&pc->routes[i], h))
            return (int)i;
    return -1;
}
