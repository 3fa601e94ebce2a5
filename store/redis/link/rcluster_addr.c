/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rcluster_addr.c - lists of Redis addresses as the configuration writes
 * them ("host:port,[v6]:port", rcluster_map.h): the seeds of a cluster, the
 * sentinels, the nodes rules are shared through.
 *
 * Pure: the configuration check (`sluice check -c`) and the store at run
 * time read an address list through the same function.
 */
#include <stdlib.h>
#include <string.h>

#include "rcluster_map.h"

/* One "host:port" of p[0..len) into *out; false when malformed. */
static bool parse_addr(const char *p, size_t len, struct sl__cnode *out)
{
    const char *colon = p + len;
    size_t host_len;
    long port = 0;

    while (colon > p && colon[-1] != ':')
        colon--;
    if (colon == p || colon == p + len || (size_t)(p + len - colon) > 5)
        return false;
    for (const char *d = colon; d < p + len; d++) {
        if (*d < '0' || *d > '9')
            return false;
        port = port * 10 + (*d - '0');
    }
    host_len = (size_t)(colon - 1 - p);
    if (host_len >= 2 && p[0] == '[' && p[host_len - 1] == ']') { /* [v6]:port */
        p++;
        host_len -= 2;
    }
    if (host_len == 0 || host_len >= SL__CLUSTER_HOST_MAX || port <= 0 || port > 65535 ||
        memchr(p, '[', host_len) != NULL || memchr(p, ']', host_len) != NULL)
        return false;
    memcpy(out->host, p, host_len);
    out->host[host_len] = '\0';
    out->port = (int)port;
    return true;
}

int sl__redis_parse_addrs(const char *list, struct sl__cnode *out, size_t max)
{
    size_t n = 0;

    while (*list != '\0') {
        const char *end = strchr(list, ',');
        size_t len = end != NULL ? (size_t)(end - list) : strlen(list);
        if (n == max || !parse_addr(list, len, &out[n]) || (end != NULL && end[1] == '\0'))
            return -1;
        n++;
        list += len + (end != NULL);
    }
    return (int)n;
}
