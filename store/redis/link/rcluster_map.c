/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rcluster_map.c - the pure part of the link's Redis Cluster layer (see
 * rcluster_map.h): the slot map from CLUSTER SLOTS, MOVED/ASK parsing and
 * the reading of a cluster's error replies, grouping descriptors by slot,
 * refresh timing.
 *
 * It does not talk to Redis and does not retry anything: the store sends
 * CLUSTER SLOTS, feeds the reply here, and follows the redirections it is
 * told about. Replicas in the reply are ignored: Sluice reads and writes on
 * masters only (a script writes).
 */
#include <limits.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "rcluster_map.h"
#include "sluice.h"

void sl__cmap_init(struct sl__cmap *m)
{
    m->n_nodes = 0;
    memset(m->owner, SL__CLUSTER_NO_NODE, sizeof(m->owner));
    m->version = 0;
}

int sl__cmap_node(struct sl__cmap *m, const char *host, size_t host_len, int port)
{
    if (host_len >= SL__CLUSTER_HOST_MAX || port <= 0 || port > 65535)
        return -1;
    for (size_t i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].port == port && strlen(m->nodes[i].host) == host_len &&
            memcmp(m->nodes[i].host, host, host_len) == 0)
            return (int)i;
    if (m->n_nodes == SL__CLUSTER_MAX_NODES)
        return -1;
    memcpy(m->nodes[m->n_nodes].host, host, host_len);
    m->nodes[m->n_nodes].host[host_len] = '\0';
    m->nodes[m->n_nodes].port = port;
    return (int)m->n_nodes++;
}

/* Is `e` one well-formed range of a CLUSTER SLOTS reply:
 * [start, end, [host, port, id...], replicas...]? */
static bool range_ok(const redisReply *e)
{
    const redisReply *a;

    if (e == NULL || e->type != REDIS_REPLY_ARRAY || e->elements < 3)
        return false;
    if (e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER)
        return false;
    long long lo = e->element[0]->integer, hi = e->element[1]->integer;
    if (lo < 0 || hi < lo || hi >= SL__CLUSTER_SLOTS)
        return false;
    a = e->element[2]; /* the master */
    if (a->type != REDIS_REPLY_ARRAY || a->elements < 2)
        return false;
    if (a->element[0]->type != REDIS_REPLY_STRING && a->element[0]->type != REDIS_REPLY_NIL)
        return false;
    if (a->element[0]->type == REDIS_REPLY_STRING && a->element[0]->len >= SL__CLUSTER_HOST_MAX)
        return false;
    return a->element[1]->type == REDIS_REPLY_INTEGER && a->element[1]->integer > 0 &&
           a->element[1]->integer <= 65535;
}

/* Give a checked range's slots to its master; false when the map is full. */
static bool load_range(struct sl__cmap *m, const redisReply *e, const char *asked_host)
{
    const redisReply *h = e->element[2]->element[0];
    const char *host = h->type == REDIS_REPLY_STRING ? h->str : "";
    size_t host_len = h->type == REDIS_REPLY_STRING ? h->len : 0;
    int node;

    if (host_len == 0 || (host_len == 1 && host[0] == '?')) {
        host = asked_host;
        host_len = strlen(asked_host);
    }
    node = sl__cmap_node(m, host, host_len, (int)e->element[2]->element[1]->integer);
    if (node < 0)
        return false;
    memset(m->owner + e->element[0]->integer, node,
           (size_t)(e->element[1]->integer - e->element[0]->integer + 1));
    return true;
}

/* Every slot unowned; the node table is kept (indexes stay valid). */
static void forget_owners(struct sl__cmap *m)
{
    memset(m->owner, SL__CLUSTER_NO_NODE, sizeof(m->owner));
    m->version++;
}

int sl__cmap_load(struct sl__cmap *m, const redisReply *r, const char *asked_host)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return SL_EINVAL;
    for (size_t i = 0; i < r->elements; i++)
        if (!range_ok(r->element[i]))
            return SL_EINVAL; /* the map in use stays */
    forget_owners(m);
    for (size_t i = 0; i < r->elements; i++)
        if (!load_range(m, r->element[i], asked_host)) {
            forget_owners(m); /* more masters than a map names: half a map would misroute */
            return SL_EINVAL;
        }
    return SL_OK;
}

int sl__cmap_lookup(const struct sl__cmap *m, unsigned slot)
{
    if (slot >= SL__CLUSTER_SLOTS || m->owner[slot] == SL__CLUSTER_NO_NODE)
        return -1;
    return m->owner[slot];
}

bool sl__cmap_complete(const struct sl__cmap *m)
{
    for (unsigned i = 0; i < SL__CLUSTER_SLOTS; i++)
        if (m->owner[i] == SL__CLUSTER_NO_NODE)
            return false;
    return true;
}

/* A decimal in [lo, hi] spanning s[0..len); -1 when it is not one. */
static long parse_uint(const char *s, size_t len, long hi)
{
    long v = 0;

    if (len == 0 || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= hi ? v : -1;
}

int sl__credir_parse(const char *err, size_t len, const char *asked_host, struct sl__credir *out)
{
    size_t skip, sp, colon;
    long slot, port;

    if (len >= 6 && memcmp(err, "MOVED ", 6) == 0) {
        out->kind = SL__CREDIR_MOVED;
        skip = 6;
    } else if (len >= 4 && memcmp(err, "ASK ", 4) == 0) {
        out->kind = SL__CREDIR_ASK;
        skip = 4;
    } else {
        return SL_ENOENT;
    }
    for (sp = skip; sp < len && err[sp] != ' '; sp++)
        ;
    slot = parse_uint(err + skip, sp - skip, SL__CLUSTER_SLOTS - 1);
    if (slot < 0 || sp == len)
        return SL_EINVAL;
    /* The last ':' separates the port (an IPv6 address has colons too). */
    for (colon = len; colon > sp + 1 && err[colon - 1] != ':'; colon--)
        ;
    if (colon == sp + 1)
        return SL_EINVAL;
    port = parse_uint(err + colon, len - colon, 65535);
    if (port <= 0)
        return SL_EINVAL;
    const char *host = err + sp + 1;
    size_t host_len = colon - 1 - (sp + 1);
    if (host_len == 0) {
        host = asked_host;
        host_len = strlen(asked_host);
    }
    if (host_len >= SL__CLUSTER_HOST_MAX)
        return SL_EINVAL;
    memcpy(out->host, host, host_len);
    out->host[host_len] = '\0';
    out->slot = (unsigned)slot;
    out->port = (int)port;
    return SL_OK;
}

enum sl__cerr sl__cluster_reply(const redisReply *r, const char *asked_host, struct sl__credir *d)
{
    int rc;

    if (r == NULL || r->type != REDIS_REPLY_ERROR || r->str == NULL)
        return SL__CERR_NONE;
    if (r->len >= 8 && memcmp(r->str, "TRYAGAIN", 8) == 0)
        return SL__CERR_TRYAGAIN;
    if (r->len >= 11 && memcmp(r->str, "CLUSTERDOWN", 11) == 0)
        return SL__CERR_DOWN;
    rc = sl__credir_parse(r->str, r->len, asked_host, d);
    if (rc == SL_ENOENT)
        return SL__CERR_NONE;
    if (rc != SL_OK)
        return SL__CERR_MALFORMED;
    return d->kind == SL__CREDIR_MOVED ? SL__CERR_MOVED : SL__CERR_ASK;
}

int sl__cmap_moved(struct sl__cmap *m, const struct sl__credir *d)
{
    int node = sl__cmap_node(m, d->host, strlen(d->host), d->port);

    if (node < 0)
        return SL_ENOMEM;
    if (m->owner[d->slot] != node) {
        m->owner[d->slot] = (uint8_t)node;
        m->version++;
    }
    return SL_OK;
}

size_t sl__cluster_group(const uint16_t *slots, size_t n, uint8_t *group, uint16_t *group_slot)
{
    size_t ng = 0;

    for (size_t i = 0; i < n; i++) {
        size_t g;
        for (g = 0; g < ng && group_slot[g] != slots[i]; g++)
            ;
        if (g == ng)
            group_slot[ng++] = slots[i];
        group[i] = (uint8_t)g;
    }
    return ng;
}

void sl__crefresh_init(struct sl__crefresh *r, int64_t min_gap_ms, int64_t period_ms)
{
    r->min_gap_ms = min_gap_ms;
    r->period_ms = period_ms;
    r->last_ms = INT64_MIN;
    r->wanted = true; /* no map yet */
}

void sl__crefresh_want(struct sl__crefresh *r)
{
    r->wanted = true;
}

int64_t sl__crefresh_wait(const struct sl__crefresh *r, int64_t now_ms)
{
    int64_t at;

    if (r->last_ms == INT64_MIN)
        return r->wanted || r->period_ms > 0 ? 0 : -1;
    if (r->wanted)
        at = r->last_ms + r->min_gap_ms;
    else if (r->period_ms > 0)
        at = r->last_ms + (r->period_ms > r->min_gap_ms ? r->period_ms : r->min_gap_ms);
    else
        return -1;
    return at <= now_ms ? 0 : at - now_ms;
}

bool sl__crefresh_due(struct sl__crefresh *r, int64_t now_ms)
{
    if (sl__crefresh_wait(r, now_ms) != 0)
        return false;
    r->last_ms = now_ms;
    r->wanted = false;
    return true;
}
