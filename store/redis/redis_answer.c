/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_answer.c - the Redis store's answers that do not come from a
 * script reply: the failure policies (allow, deny, or the memory store
 * over the request's matches, from the caller's data or the slot's copy),
 * the over-limit cache's answers and what it learns from denials, and the
 * one path every answer takes to the caller (deliver: quota_mode's kept
 * statuses and deny-all limits applied as sl_limiter_check reports them).
 *
 * It does not talk to Redis (redis_call.c) or start calls (redis.c).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

/* allow / deny for every descriptor, reported on its first limit. What
 * Redis holds is unknown: under allow, remaining is the whole quota
 * (nothing was counted); under deny 0, and a denial's retry is the time the
 * breaker waits before probing again. */
static void fixed_answer(const struct sl__rstore *st, const struct sl__redis_plan *p, bool deny,
                         struct sl_result *res)
{
    memset(res, 0, sizeof(*res));
    res->verdict = deny ? SL_DENY : SL_ALLOW;
    res->n_statuses = p->n_desc;
    for (size_t i = 0; i < p->n_desc; i++) {
        struct sl_status *s = &res->statuses[i];
        s->d.verdict = SL_ALLOW;
        if (p->count[i] == 0)
            continue;
        s->limit = p->slots[p->first[i]].l;
        s->d.quota = sl_limit_quota(s->limit);
        s->d.remaining = deny ? 0 : s->d.quota;
        if (deny) {
            s->d.verdict = SL_DENY;
            s->d.retry_after_ns = st->cfg.breaker_open_ms * SL_NS_PER_MS;
        }
    }
}

/* The memory store's decision over resolved matches. */
static int local_decide(struct sl__rstore *st, const struct sl_match *m, size_t n,
                        const struct sl_request *req, bool peek, struct sl_result *res)
{
    struct sl_request zero;
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];

    if (!peek)
        return sl_limiter_check_matched(st->local, m, n, req, res);
    zero = *req;
    zero.hits = 0;
    for (size_t i = 0; i < n; i++) {
        memset(&d[i], 0, sizeof(d[i]));
        d[i].hits = 0;
    }
    zero.descriptors = d;
    zero.n_descriptors = n;
    return sl_limiter_check_matched(st->local, m, n, &zero, res);
}

void sl__ranswer_rebuild(const struct sl__rreq *q, bool peek, struct sl__rebuilt *r)
{
    const struct sl__redis_plan *p = &q->plan;
    const struct sl__rcopy *c = &q->copy;

    memset(&r->req, 0, sizeof(r->req));
    for (size_t i = 0; i < c->n; i++) {
        const struct sl__rcopy_desc *cd = &c->d[i];
        memset(&r->m[i], 0, sizeof(r->m[i]));
        r->m[i].n_limits = i < p->n_desc ? p->count[i] : 0;
        for (size_t k = 0; k < r->m[i].n_limits; k++)
            r->m[i].limits[k] = p->slots[p->first[i] + k].l;
        memcpy(r->m[i].key, c->buf + cd->key_off, cd->key_len);
        r->m[i].key_len = cd->key_len;
        r->m[i].quota_mode = q->fin.quota[i];
        r->e[i].key = (struct sl_str){c->buf + cd->ek_off, cd->ek_len};
        r->e[i].value = (struct sl_str){c->buf + cd->ev_off, cd->ev_len};
        r->d[i] = (struct sl_descriptor){
            .entries = &r->e[i], .n_entries = cd->entry, .hits = peek ? 0 : cd->hits};
    }
    r->req.domain = (struct sl_str){c->buf, c->dom_len};
    r->req.descriptors = r->d;
    r->req.n_descriptors = c->n;
    r->req.hits = peek ? 0 : c->hits;
    r->req.now_ns = q->now_ns;
}

static int local_from_slot(struct sl__rstore *st, const struct sl__rreq *q, struct sl_result *res)
{
    static __thread struct sl__rebuilt r; /* 40 KiB: not on the stack */

    sl__ranswer_rebuild(q, q->kind == SL__RQ_PEEK || q->fin.rv.deny_all, &r);
    return sl_limiter_check_matched(st->local, r.m, r.req.n_descriptors, &r.req, res);
}

/* Every answer to a caller goes through here: what the rules resolution
 * took out (deny-all limits) is reported as sl_limiter_check reports it. */
void sl__ranswer_deliver(const struct sl__rfinish *fin, sl__store_cb cb, void *arg, int err,
                         struct sl_result *res, enum sl__store_by by)
{
    for (size_t i = 0; err == SL_OK && fin != NULL && fin->rechecked && i < res->n_statuses; i++)
        if (fin->was_denied[i])
            res->statuses[i] = fin->saved[i];
    if (err == SL_OK && res != NULL && fin != NULL && fin->active)
        sl__rules_finish(&fin->rv, fin->now_ns, res);
    cb(arg, err, err == SL_OK ? res : NULL, err == SL_OK ? by : SL__BY_STATE);
}

/* An answer by policy `pol`: said in the log and counted; who answered. */
static enum sl__store_by policy_answers(struct sl__rstore *st, enum sl__redis_policy pol)
{
    sl__revent_policy(st, pol); /* the log: rate-limited, never a line per answer */
    if (pol == SL__POLICY_LOCAL) {
        SL__CNT(st, policy_local, 1);
        return SL__BY_LOCAL;
    }
    SL__CNT(st, policy_allow, pol == SL__POLICY_ALLOW);
    SL__CNT(st, policy_deny, pol == SL__POLICY_DENY);
    return pol == SL__POLICY_ALLOW ? SL__BY_ALLOW : SL__BY_DENY;
}

/* Answer by policy from the caller's matches (nothing sent yet). */
void sl__ranswer_policy(struct sl__rstore *st, enum sl__redis_policy pol,
                        const struct sl__redis_plan *p, const struct sl__rstart *call, bool peek)
{
    struct sl_result res;
    enum sl__store_by by = policy_answers(st, pol);
    int rc = SL_OK;

    if (pol == SL__POLICY_LOCAL)
        rc = local_decide(st, call->m, p->n_desc, call->req, peek, &res);
    else
        fixed_answer(st, p, pol == SL__POLICY_DENY, &res);
    sl__ranswer_deliver(call->fin, call->cb, call->arg, rc, &res, by);
}

/* Answer by policy from the slot's copy (its call failed). */
void sl__ranswer_policy_slot(struct sl__rstore *st, const struct sl__rreq *q)
{
    struct sl_result res;
    enum sl__store_by by = policy_answers(st, q->policy);
    int rc = SL_OK;

    if (q->policy == SL__POLICY_LOCAL)
        rc = local_from_slot(st, q, &res);
    else
        fixed_answer(st, &q->plan, q->policy == SL__POLICY_DENY, &res);
    sl__ranswer_deliver(&q->fin, q->cb, q->arg, rc, &res, by);
}

/* --------------------------------------------------- over-limit cache */

static bool cacheable(const struct sl_limit *l)
{
    return !l->count_rejected && !l->shadow && l->algo != SL_ALGO_CONCURRENCY;
}

/* Is any item of the plan a cached denial? Then answer it, no round trip:
 * its descriptor denied on that limit; the others, which were not read,
 * are reported without a limit. */
bool sl__ranswer_olc(struct sl__rstore *st, const struct sl__redis_plan *p, const uint64_t *hash,
                     const struct sl__rstart *call)
{
    int64_t now_ns = call->req->now_ns;
    const struct sl__olc_slot *hit[SL__REDIS_MAX_ITEMS];
    bool denied[SL_MAX_DESCRIPTORS] = {false}, any = false;
    struct sl_result res;

    if (st->olc == NULL)
        return false;
    for (size_t k = 0; k < p->n_items; k++) {
        hit[k] = NULL;
        if (cacheable(p->item_l[k]) && p->item_cost[k] > 0)
            hit[k] = sl__olc_find(st, hash[k], now_ns, p->item_cost[k]);
        any = any || hit[k] != NULL;
    }
    if (!any)
        return false;
    for (size_t s = 0; s < p->n_slots; s++)
        denied[p->slots[s].desc] = denied[p->slots[s].desc] || hit[p->slots[s].item] != NULL;
    /* Answered here only when every descriptor that has limits is known to
     * be denied: each is then reported by its cached denial. Otherwise the
     * others' statuses (and their counting) need Redis: the call goes out. */
    for (size_t i = 0; i < p->n_desc; i++)
        if (p->count[i] > 0 && !denied[i])
            return false;
    memset(&res, 0, sizeof(res));
    res.verdict = SL_DENY;
    res.n_statuses = p->n_desc;
    for (size_t s = 0; s < p->n_slots; s++) {
        const struct sl__olc_slot *h = hit[p->slots[s].item];
        struct sl_status *stt = &res.statuses[p->slots[s].desc];
        if (h == NULL || stt->limit != NULL)
            continue;
        stt->limit = p->slots[s].l;
        stt->d.verdict = SL_DENY;
        stt->d.quota = sl_limit_quota(stt->limit);
        stt->d.retry_after_ns = h->until_ns - now_ns;
        stt->d.reset_ns = h->reset_at_ns > now_ns ? h->reset_at_ns - now_ns : 0;
    }
    SL__CNT(st, olc_hits, 1);
    sl__ranswer_deliver(call->fin, call->cb, call->arg, SL_OK, &res, SL__BY_STATE);
    return true;
}

void sl__ranswer_olc_learn(struct sl__rstore *st, const struct sl__rreq *q,
                           const struct sl_decision *d)
{
    int64_t max_ns = st->cfg.olc_max_ms * SL_NS_PER_MS;

    for (size_t k = 0; st->olc != NULL && k < q->plan.n_items; k++) {
        int64_t wait = d[k].retry_after_ns;
        if (d[k].verdict != SL_DENY || !cacheable(q->plan.item_l[k]) || wait == 0)
            continue;
        if (wait < 0 || wait > max_ns)
            wait = max_ns;
        sl__olc_insert(st, q->item_hash[k], q->plan.item_cost[k], q->now_ns + wait,
                       q->now_ns + d[k].reset_ns);
    }
}
