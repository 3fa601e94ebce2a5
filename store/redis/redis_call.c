/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_call.c - one call to Redis on a request slot: sending it with its
 * timeout timer, the reply (NOSCRIPT or "Function not found" loads the code
 * again and resends on the same connection; an unknown module command
 * makes the connection detect its engine again; quota_mode's second call),
 * the timeout and lost connection (answered by the policy, the slot kept
 * busy until hiredis lets go), and the copy of the caller's request a
 * later decision needs.
 *
 * It does not choose what to send (redis.c) nor build commands
 * (redis_plan.c); hiredis allocates each formatted command.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

void sl__rcall_release(struct sl__rreq *q)
{
    struct sl__rstore *st = q->st;

    uv_timer_stop(&q->timer);
    if (q->fmt != NULL)
        redisFreeCommand(q->fmt);
    q->fmt = NULL;
    if (q->rules != NULL)
        sl_rules_unref(q->rules);
    q->rules = NULL;
    q->busy = false;
    q->next_free = st->free_reqs;
    st->free_reqs = q;
    SL__CNT(st, in_flight, -1);
}

static void answer(struct sl__rreq *q, int err, struct sl_result *res)
{
    q->answered = true;
    uv_timer_stop(&q->timer);
    sl__ranswer_deliver(&q->fin, q->cb, q->arg, err, res, SL__BY_STATE);
}

/* The call failed (error, lost connection) or timed out. */
static void fail_slot(struct sl__rreq *q)
{
    struct sl__rstore *st = q->st;

    q->answered = true;
    uv_timer_stop(&q->timer);
    if (q->kind == SL__RQ_RELEASE || q->kind == SL__RQ_RESET)
        q->cb(q->arg, SL_EFULL, NULL, SL__BY_STATE); /* state unknown: the caller may retry */
    else
        sl__ranswer_policy_slot(st, q);
}

/* quota_mode, as lib/rules/check.c: denied only by some, not all, of the
 * quota descriptors (and by no other descriptor). */
static bool quota_excused(const struct sl__rreq *q, const struct sl_result *res)
{
    size_t quota = 0, quota_denied = 0;

    for (size_t i = 0; i < q->plan.n_desc; i++) {
        bool has = q->plan.count[i] > 0;
        bool denied = res->statuses[i].d.verdict == SL_DENY && has;
        if (q->fin.quota[i] && has) {
            quota++;
            quota_denied += denied;
        } else if (denied) {
            return false;
        }
    }
    return quota_denied > 0 && quota_denied < quota;
}

/* The second decision of quota_mode: the same request without the quota
 * descriptors that denied, which keep their first status (sl__ranswer_deliver()). */
static int recheck(struct sl__rreq *q, const struct sl_result *first)
{
    static __thread struct sl__rebuilt r;
    struct sl__rstore *st = q->st;
    struct sl__rconn *c = sl__rconn_available(st) ? sl__rconn_pick_node(st, q->conn->node) : NULL;
    int rc;

    if (c == NULL)
        return SL_EFULL;
    sl__ranswer_rebuild(q, false, &r);
    for (size_t i = 0; i < r.req.n_descriptors; i++) {
        q->fin.was_denied[i] = q->fin.quota[i] && first->statuses[i].d.verdict == SL_DENY;
        q->fin.saved[i] = first->statuses[i];
        if (q->fin.was_denied[i])
            r.m[i].n_limits = 0;
    }
    q->fin.rechecked = true;
    rc = sl__redis_plan_build(
        &st->cfg.opts,
        &(struct sl__redis_plan_in){SL__REDIS_CHECK, &r.req, r.m, r.req.n_descriptors}, &q->plan,
        &st->cmd);
    if (rc == SL_OK && st->cfg.cluster && q->plan.n_items > 0)
        rc = sl__rroute_lease_prefix(st, &q->plan, sl__rroute_item_slot(st, 0));
    if (rc != SL_OK)
        return rc;
    redisFreeCommand(q->fmt);
    q->fmt = NULL;
    q->retried = false;
    return sl__rcall_send(st, q, c);
}

/* True when the slot was sent again (quota_mode) and must stay busy. */
static bool on_reply_ok(struct sl__rreq *q, redisReply *r)
{
    struct sl_result res;
    struct sl_decision items[SL__REDIS_MAX_ITEMS];
    int64_t now_us = 0;
    int rc;

    if (q->kind == SL__RQ_RELEASE) {
        rc = sl__redis_release_result(r);
        if (rc == SL_EINVAL) {
            SL__CNT(q->st, errors, 1);
            fail_slot(q);
            return false;
        }
        SL__CNT(q->st, replies, 1);
        answer(q, rc, NULL);
        return false;
    }
    rc = sl__redis_plan_result(&q->plan, r, &res, &now_us, items);
    if (rc == SL_EINVAL) {
        SL__CNT(q->st, errors, 1);
        sl__rconn_failure(q->st, q->conn->node);
        fail_slot(q);
        return false;
    }
    SL__CNT(q->st, replies, 1);
    sl__rconn_success(q->st, q->conn->node);
    if (rc == SL_OK && q->kind == SL__RQ_CHECK && !q->fin.quota_any)
        sl__ranswer_olc_learn(q->st, q, items);
    if (rc == SL_OK && q->fin.quota_any && !q->fin.rechecked && res.verdict == SL_DENY &&
        quota_excused(q, &res)) {
        if (recheck(q, &res) == SL_OK)
            return true; /* the second call is out: the slot stays busy */
        fail_slot(q);
        return false;
    }
    if (rc == SL_OK && q->fan != NULL)
        q->st->up.group_reply(q, &res, now_us);
    answer(q, rc, rc == SL_OK ? &res : NULL);
    return false;
}

static void on_reply(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rreq *q = priv;

    if (q->st->closing) {
        sl__rcall_release(q);
        return;
    }
    if (r != NULL && !q->answered && sl__rroute_redirect(q, r, on_reply))
        return; /* Redis Cluster: resent where the slot is (or to come) */
    if (r != NULL && sl__redis_is_noscript(r) && !q->retried && !q->answered) {
        /* The script cache or the functions were flushed (restart, SCRIPT
         * FLUSH, FUNCTION FLUSH, failover): load the code again and resend,
         * in order, on this same connection. */
        q->retried = true;
        SL__CNT(q->st, noscript, 1);
        sl__rconn_reload(q->conn, r->str[0] != 'N'); /* NOSCRIPT, or Function not found */
        if (sl__rlink_formatted(l, on_reply, q, q->fmt, q->fmt_len) == SL_OK)
            return;
    }
    if (r != NULL && sl__redis_is_nomodule(r))
        sl__rconn_redetect(q->conn); /* the module was unloaded: Functions or scripts now */
    if (!q->answered && r == NULL) {
        SL__CNT(q->st, errors, 1);
        fail_slot(q);
        sl__rconn_failure(q->st, q->conn->node);
    } else if (!q->answered && on_reply_ok(q, r)) {
        return;
    }
    sl__rcall_release(q);
}

static void on_timeout(uv_timer_t *t)
{
    struct sl__rreq *q = t->data;

    if (!q->busy || q->answered)
        return;
    SL__CNT(q->st, timeouts, 1);
    fail_slot(q);                            /* answers now; the slot stays busy ... */
    sl__rconn_failure(q->st, q->conn->node); /* ... until Redis answers or is dropped */
}

static bool copy_put(struct sl__rcopy *c, size_t *at, const char *p, size_t len, uint32_t *off)
{
    if (*at + len > c->cap)
        return false;
    if (len > 0) /* an empty domain (CL.THROTTLE's) may be NULL, as the buffer may be */
        memcpy(c->buf + *at, p, len);
    *off = (uint32_t)*at;
    *at += len;
    return true;
}

/* Copy what a later decision needs once the caller's data is gone. */
int sl__rcall_keep(struct sl__rreq *q, const struct sl_request *req, const struct sl_match *m,
                   size_t n)
{
    struct sl__rcopy *c = &q->copy;
    size_t need = req->domain.len, at = 0;
    uint32_t dom;

    for (size_t i = 0; i < n; i++) {
        need += m[i].key_len;
        if (req->descriptors != NULL && i < req->n_descriptors && req->descriptors[i].n_entries > 0)
            need +=
                req->descriptors[i].entries[0].key.len + req->descriptors[i].entries[0].value.len;
    }
    if (need > c->cap) {
        char *b = realloc(c->buf, need);
        if (b == NULL)
            return SL_ENOMEM;
        c->buf = b;
        c->cap = need;
    }
    copy_put(c, &at, req->domain.p, req->domain.len, &dom);
    c->dom_len = (uint32_t)req->domain.len;
    for (size_t i = 0; i < n; i++) {
        struct sl__rcopy_desc *cd = &c->d[i];
        const struct sl_descriptor *rd =
            req->descriptors != NULL && i < req->n_descriptors ? &req->descriptors[i] : NULL;
        memset(cd, 0, sizeof(*cd));
        copy_put(c, &at, m[i].key, m[i].key_len, &cd->key_off);
        cd->key_len = (uint16_t)m[i].key_len;
        cd->hits = rd != NULL ? rd->hits : -1;
        cd->entry = rd != NULL && rd->n_entries > 0;
        if (cd->entry) {
            copy_put(c, &at, rd->entries[0].key.p, rd->entries[0].key.len, &cd->ek_off);
            copy_put(c, &at, rd->entries[0].value.p, rd->entries[0].value.len, &cd->ev_off);
            cd->ek_len = (uint16_t)rd->entries[0].key.len;
            cd->ev_len = (uint16_t)rd->entries[0].value.len;
        }
    }
    c->n = n;
    c->hits = req->hits;
    return SL_OK;
}

int sl__rcall_send(struct sl__rstore *st, struct sl__rreq *q, struct sl__rconn *c)
{
    int len = sl__redis_cmd_format(&st->cmd, &q->fmt);

    if (len < 0)
        return SL_ENOMEM;
    q->fmt_len = (size_t)len;
    q->conn = c;
    if (sl__rlink_formatted(c->link, on_reply, q, q->fmt, q->fmt_len) != SL_OK) {
        redisFreeCommand(q->fmt);
        q->fmt = NULL;
        return SL_EFULL;
    }
    SL__CNT(st, script_calls, 1);
    uv_timer_start(&q->timer, on_timeout, (uint64_t)st->cfg.timeout_ms, 0);
    return SL_OK;
}
