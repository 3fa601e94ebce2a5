/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_route.c - Redis Cluster routing for the Redis store: the
 * store's slot map (the link's cluster layer: link/rcluster_map.c, asked
 * on a data connection with link/rcluster.h) kept fresh with CLUSTER SLOTS
 * (at start, soon after a MOVED or a lost connection, and every 5 s), the
 * node of a slot, and MOVED, ASK and TRYAGAIN followed for a call: MOVED
 * updates the map and resends on the new owner's connection, ASK sends
 * ASKING and the call to the importing node (the map is unchanged: the
 * slot is only migrating), TRYAGAIN (keys of one call split by a migration)
 * resends on the same connection. At most MAX_REDIRECTS per call; past
 * that, or with no connection ready to the node, the call fails and the
 * failure policy answers, like any failed call.
 *
 * Without cluster mode the map holds one node, the configured Redis, and
 * nothing here sends anything. It does not split checks over slots
 * (redis_fan.c) and never blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

#define MAX_REDIRECTS    5
#define REFRESH_GAP_MS   100  /* never two CLUSTER SLOTS closer than this */
#define REFRESH_EVERY_MS 5000 /* and at least this often */

static void on_refresh_timer(uv_timer_t *t);

/* "host:port,host:port" of cfg.nodes into the map, after the seed. */
static int add_seeds(struct sl__rstore *st)
{
    struct sl__cnode a[SL__CLUSTER_MAX_NODES];
    int n = sl__redis_parse_addrs(st->cfg.nodes, a, SL__CLUSTER_MAX_NODES);

    if (n < 0)
        return SL_EINVAL;
    for (int i = 0; i < n; i++)
        if (sl__cmap_node(st->map, a[i].host, strlen(a[i].host), a[i].port) < 0)
            return SL_EINVAL;
    return SL_OK;
}

int sl__rroute_init(struct sl__rstore *st)
{
    st->map = malloc(sizeof(*st->map));
    if (st->map == NULL)
        return SL_ENOMEM;
    sl__cmap_init(st->map);
    if (st->cfg.cluster) { /* first: sl__rroute_close closes it whatever fails next */
        sl__crefresh_init(&st->refresh, REFRESH_GAP_MS, REFRESH_EVERY_MS);
        uv_timer_init(st->loop, &st->refresh_timer);
        uv_unref((uv_handle_t *)&st->refresh_timer);
        st->refresh_timer.data = st;
        uv_timer_start(&st->refresh_timer, on_refresh_timer, REFRESH_GAP_MS, REFRESH_GAP_MS);
    }
    if (sl__cmap_node(st->map, st->cfg.host, strlen(st->cfg.host), st->cfg.port) != 0)
        return SL_EINVAL;
    return st->cfg.cluster ? add_seeds(st) : SL_OK;
}

static void on_timer_closed(uv_handle_t *h)
{
    (void)h;
}

void sl__rroute_close(struct sl__rstore *st)
{
    free(st->slot_tags);
    st->slot_tags = NULL;
    if (st->cfg.cluster && st->map != NULL)
        uv_close((uv_handle_t *)&st->refresh_timer, on_timer_closed);
}

unsigned sl__rroute_node(const struct sl__rstore *st, unsigned slot)
{
    int node = sl__cmap_lookup(st->map, slot);
    return node < 0 ? 0 : (unsigned)node;
}

unsigned sl__rroute_item_slot(const struct sl__rstore *st, size_t k)
{
    return sl__redis_keyslot(st->cmd.argv[SL__REDIS_KEY0 + k], st->cmd.argvlen[SL__REDIS_KEY0 + k]);
}

/* The answer to CLUSTER SLOTS (link/rcluster.h loaded it into the map). */
static void on_slots(void *arg, int rc)
{
    struct sl__rstore *st = arg;

    if (st->closing)
        return;
    st->refreshing = false;
    if (rc != SL_OK) {
        sl__crefresh_want(&st->refresh); /* try again after the gap */
        return;
    }
    SL__CNT(st, map_refreshes, 1);
    sl__rconn_start_nodes(st);
    sl__rhealth_publish(st); /* which nodes serve slots may have changed */
}

void sl__rroute_kick(struct sl__rstore *st)
{
    struct sl__rconn *c;

    if (!st->cfg.cluster || st->refreshing || st->closing)
        return;
    if (sl__crefresh_wait(&st->refresh, (int64_t)uv_now(st->loop)) != 0)
        return;
    if ((c = sl__rconn_pick(st)) == NULL)
        return; /* the next ready connection kicks again */
    sl__crefresh_due(&st->refresh, (int64_t)uv_now(st->loop));
    st->slots_q.map = st->map;
    st->slots_q.done = on_slots;
    st->slots_q.arg = st;
    if (sl__rcslots_ask(c->link, &st->slots_q, st->map->nodes[c->node].host) == SL_OK)
        st->refreshing = true;
}

void sl__rroute_stale(struct sl__rstore *st)
{
    if (!st->cfg.cluster)
        return;
    sl__crefresh_want(&st->refresh);
    sl__rroute_kick(st);
}

static void on_refresh_timer(uv_timer_t *t)
{
    sl__rroute_kick(t->data);
}

/* A tag of `slot` (sl__redis_slot_tags, computed when first needed). */
static const char *slot_tag(struct sl__rstore *st, unsigned slot)
{
    if (st->slot_tags == NULL) {
        st->slot_tags = malloc(SL__CLUSTER_SLOTS * sizeof(*st->slot_tags));
        if (st->slot_tags == NULL || sl__redis_slot_tags(st->slot_tags) != SL_OK) {
            free(st->slot_tags);
            st->slot_tags = NULL;
            return NULL;
        }
    }
    return st->slot_tags[slot];
}

int sl__rroute_lease_prefix(struct sl__rstore *st, const struct sl__redis_plan *p, unsigned slot)
{
    const char *tag;
    bool leases = false;

    for (size_t k = 0; k < p->n_items; k++)
        leases = leases || p->item_l[k]->algo == SL_ALGO_CONCURRENCY;
    if (!st->cfg.cluster || !leases)
        return SL_OK;
    if ((tag = slot_tag(st, slot)) == NULL)
        return SL_ENOMEM;
    return sl__redis_cmd_tag_prefix(&st->cmd, tag);
}

/* Resend q's formatted call on c (after ASKING when `asking`). */
static bool resend(struct sl__rreq *q, struct sl__rconn *c, bool asking,
                   sl__rlink_reply_fn on_reply)
{
    if (c == NULL)
        return false;
    if (asking && sl__rlink_command(c->link, NULL, NULL, "ASKING") != SL_OK)
        return false;
    if (sl__rlink_formatted(c->link, on_reply, q, q->fmt, q->fmt_len) != SL_OK)
        return false;
    q->conn = c;
    return true;
}

bool sl__rroute_redirect(struct sl__rreq *q, const redisReply *r, sl__rlink_reply_fn on_reply)
{
    struct sl__rstore *st = q->st;
    struct sl__credir d;
    int node;

    enum sl__cerr e;

    if (!st->cfg.cluster || r == NULL || r->type != REDIS_REPLY_ERROR || q->fmt == NULL ||
        q->redirects >= MAX_REDIRECTS)
        return false;
    e = sl__cluster_reply(r, st->map->nodes[q->conn->node].host, &d);
    if (e == SL__CERR_TRYAGAIN) {
        q->redirects++;
        SL__CNT(st, tryagain, 1);
        return resend(q, q->conn, false, on_reply);
    }
    if (e != SL__CERR_MOVED && e != SL__CERR_ASK)
        return false;
    q->redirects++;
    if (e == SL__CERR_MOVED) {
        SL__CNT(st, moved, 1);
        if (sl__cmap_moved(st->map, &d) != SL_OK)
            return false;
        sl__rhealth_publish(st);
        sl__rroute_stale(st); /* one slot moved: others probably did too */
        node = sl__cmap_lookup(st->map, d.slot);
        return node >= 0 && resend(q, sl__rconn_pick_node(st, (unsigned)node), false, on_reply);
    }
    SL__CNT(st, ask, 1);
    node = sl__cmap_node(st->map, d.host, strlen(d.host), d.port);
    return node >= 0 && resend(q, sl__rconn_pick_node(st, (unsigned)node), true, on_reply);
}
