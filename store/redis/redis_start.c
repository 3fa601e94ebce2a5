/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_start.c - the start of one Redis call (one slot): its plan built,
 * the over-limit cache asked, a connection and a pooled slot taken, the
 * caller's request copied where a later decision needs it, and the call
 * sent; or, with no connection, no slot or the breaker open, the failure
 * policy's answer at once. The release of a token's leases too.
 *
 * A call whose descriptors hash to several slots (Redis Cluster) is not
 * started here: SL__RSTART_SPANS tells the caller (redis.c), which hands
 * it to redis_fan.c; the fan's groups come back here, one slot each. So
 * the fan sits above this file, never beside it in a cycle.
 *
 * Allocation per request: none of its own.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

/* Ad hoc limits (no rules snapshot, e.g. CL.THROTTLE's, which its caller
 * reuses, or a request's own limit override) are copied into the slot so
 * the reply reports stable ones. */
static int own_limits(struct sl__rreq *q)
{
    size_t n = 0;
    struct sl__redis_plan *p = &q->plan;

    for (size_t s = 0; s < p->n_slots; s++) {
        size_t k = 0;
        while (k < n && memcmp(&q->own[k], p->slots[s].l, sizeof(q->own[k])) != 0)
            k++;
        if (k == n) {
            if (n == SL_MAX_LIMITS)
                return SL_ETOOBIG;
            q->own[n++] = *p->slots[s].l;
        }
        p->item_l[p->slots[s].item] = &q->own[k];
        p->slots[s].l = &q->own[k];
    }
    return SL_OK;
}

/* Does a descriptor bring its own limit (Envoy's override)? The request's
 * memory is the caller's for the start call only. */
static bool brings_limits(const struct sl_request *req)
{
    for (size_t i = 0; req->descriptors != NULL && i < req->n_descriptors; i++)
        if (req->descriptors[i].limit != NULL)
            return true;
    return false;
}

/* Take a slot and fill it for `call`; the caller sends it. */
static struct sl__rreq *take_slot(struct sl__rstore *st, const struct sl__rstart *call)
{
    struct sl__rreq *q = st->free_reqs;

    st->free_reqs = q->next_free;
    q->busy = true;
    q->answered = false;
    q->retried = false;
    q->redirects = 0;
    q->fan = NULL;
    q->kind = call->kind;
    q->policy = call->pol;
    q->cb = call->cb;
    q->arg = call->arg;
    q->rules = call->rules != NULL ? sl_rules_ref((sl_rules *)(uintptr_t)call->rules) : NULL;
    q->fin = *call->fin;
    memcpy(&q->plan, &st->plan, sizeof(st->plan));
    SL__CNT(st, in_flight, 1);
    return q;
}

/* Redis Cluster: the node of the plan's slot (in *slot), or -1 when its
 * items hash to several slots. Without cluster: node 0. */
static int plan_node(const struct sl__rstore *st, const struct sl__redis_plan *p, unsigned *slot)
{
    *slot = 0;
    if (!st->cfg.cluster || p->n_items == 0)
        return 0;
    *slot = sl__rroute_item_slot(st, 0);
    for (size_t k = 1; k < p->n_items; k++)
        if (sl__rroute_item_slot(st, k) != *slot)
            return -1;
    return (int)sl__rroute_node(st, *slot);
}

int sl__rstore_start(struct sl__rstore *st, const struct sl__rstart *call)
{
    struct sl__redis_plan *p = &st->plan;
    uint64_t hash[SL__REDIS_MAX_ITEMS];
    enum sl__rreq_kind kind = call->kind;
    const struct sl_request *req = call->req;
    const struct sl__rfinish *fin = call->fin;
    struct sl__rfan *fan = call->fan;
    bool peek = kind != SL__RQ_CHECK || fin->rv.deny_all;
    struct sl__rreq *q;
    struct sl__rconn *c;
    unsigned slot;
    int node;
    enum sl__redis_op op = kind == SL__RQ_RESET ? SL__REDIS_RESET
                           : peek               ? SL__REDIS_PEEK
                                                : SL__REDIS_CHECK;
    int rc = sl__redis_plan_build(
        &st->cfg.opts,
        &(struct sl__redis_plan_in){.op = op, .req = req, .m = call->m, .n = call->n}, p, &st->cmd);

    if (rc != SL_OK)
        return rc;
    node = plan_node(st, p, &slot);
    if (node < 0 && fan == NULL) /* several slots: the caller starts one call per slot */
        return SL__RSTART_SPANS;
    if (node < 0)
        return SL_EINVAL; /* a group spans slots: cannot happen (one tag per descriptor) */
    if (fan == NULL)
        SL__CNT(st, checks, 1);
    for (size_t k = 0; st->olc != NULL && k < p->n_items; k++)
        hash[k] =
            sl__olc_hash(st, st->cmd.argv[SL__REDIS_KEY0 + k], st->cmd.argvlen[SL__REDIS_KEY0 + k]);
    if (!peek && !fin->quota_any && sl__ranswer_olc(st, p, hash, call))
        return SL_OK;
    c = sl__rconn_available(st) ? sl__rconn_pick_node(st, (unsigned)node) : NULL;
    if (c == NULL || st->free_reqs == NULL) {
        if (st->free_reqs == NULL)
            SL__CNT(st, overflow, 1);
        else
            SL__CNT(st, unavailable, 1);
        if (c == NULL)
            sl__rroute_stale(st); /* a failed-over master: ask who serves the slot now */
        if (kind == SL__RQ_RESET)
            return SL_EFULL;
        sl__ranswer_policy(st, call->pol, p, call, peek);
        return SL_OK;
    }
    q = take_slot(st, call);
    q->now_ns = req->now_ns;
    q->fan = fan;
    q->fan_group = call->group;
    if (st->olc != NULL)
        memcpy(q->item_hash, hash, sizeof(hash[0]) * p->n_items);
    rc = call->rules == NULL || brings_limits(req) ? own_limits(q) : SL_OK;
    /* A cross-slot check's group keeps its request: a refund is built from it. */
    if (rc == SL_OK &&
        (call->pol == SL__POLICY_LOCAL || fin->quota_any || (fan != NULL && kind == SL__RQ_CHECK)))
        rc = sl__rcall_keep(q, req, call->m, call->n);
    for (size_t k = 0; rc == SL_OK && kind == SL__RQ_RESET && k < p->n_items; k++)
        sl__olc_forget(st, sl__olc_hash(st, st->cmd.argv[SL__REDIS_KEY0 + k],
                                        st->cmd.argvlen[SL__REDIS_KEY0 + k]));
    if (rc == SL_OK)
        rc = sl__rroute_lease_prefix(st, p, slot);
    if (rc == SL_OK)
        rc = sl__rcall_send(st, q, c);
    if (rc != SL_OK)
        sl__rcall_release(q); /* nothing started: the caller gets rc */
    return rc;
}

int sl__rstore_release(struct sl__rstore *st, const char *lease, size_t len, int64_t now_ns,
                       sl__store_cb cb, void *arg)
{
    struct sl__rconn *c = NULL;
    struct sl__rreq *q = st->free_reqs;
    struct sl__rfinish fin;
    const struct sl__rstart call = {
        .kind = SL__RQ_RELEASE, .fin = &fin, .pol = st->cfg.policy, .cb = cb, .arg = arg};
    int rc = sl__redis_release_build(&st->cfg.opts, lease, len, now_ns, &st->cmd);

    if (rc != SL_OK)
        return rc;
    /* Cluster: the slot of the leases (one slot here: a token naming
     * several is split by sl__rfan_release). */
    if (sl__rconn_available(st))
        c = sl__rconn_pick_node(st, sl__rroute_node(st, sl__rroute_item_slot(st, 0)));
    SL__CNT(st, checks, 1);
    if (c == NULL || q == NULL)
        return SL_EFULL; /* the leases are in Redis: nothing local to free */
    memset(&fin, 0, sizeof(fin));
    st->plan.n_items = 0;
    st->plan.n_desc = 0;
    st->plan.n_slots = 0;
    q = take_slot(st, &call);
    q->now_ns = now_ns;
    rc = sl__rcall_send(st, q, c);
    if (rc != SL_OK)
        sl__rcall_release(q);
    return rc;
}
