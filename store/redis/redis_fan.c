/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_fan.c - a check whose descriptors hash to several Redis Cluster
 * slots : one call per slot group, all sent at once (in
 * parallel, on each slot's node), their statuses joined into one result
 * with docs/contracts.md §Decisions's overall verdict (a slot's denial
 * decides the whole, also when another slot's call failed). When the whole is denied, every
 * group that Redis allowed (and so counted) gets a refund call - the same
 * items, op "refund", at the time its check used - which gives back what
 * it consumed; the caller's answer does not wait for it. So the common,
 * all-allowed case costs one round trip, in parallel over the slots.
 *
 * What a refund gives back (store/redis/lua/70_refund.lua; the bounds are in
 * docs/distributed.md): exactly the counts of fixed and sliding windows
 * and the entries of sliding logs; for token_bucket, gcra and leaky_bucket
 * the level taken back may exceed, by at most what refills during the
 * round trip (never more than the cost), what the check took. Warm-up
 * buckets are not refunded (conservative). Concurrency slots taken are
 * released (a release call of the group's leases). count_rejected limits
 * keep their counts, as in one call. A group answered by the failure
 * policy is not refunded (its local count stays). Envoy quota_mode across
 * slots is not re-decided.
 *
 * It does not route (redis_route.c) or run calls (redis_call.c). The fans
 * are a fixed pool (max_in_flight / 4, at least 8); none free: the failure
 * policy answers.
 */
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

int sl__rfan_init(struct sl__rstore *st)
{
    if (!st->cfg.cluster)
        return SL_OK;
    st->n_fans = st->cfg.max_in_flight / 4 < 8 ? 8 : st->cfg.max_in_flight / 4;
    st->fans = calloc(st->n_fans, sizeof(*st->fans));
    if (st->fans == NULL)
        return SL_ENOMEM;
    for (unsigned i = st->n_fans; i-- > 0;) {
        st->fans[i].st = st;
        st->fans[i].next_free = st->free_fans;
        st->free_fans = &st->fans[i];
    }
    return SL_OK;
}

static void drop_refunds(struct sl__rfan *f)
{
    for (unsigned g = 0; g < f->n_groups; g++) {
        if (f->g[g].refund != NULL)
            redisFreeCommand(f->g[g].refund);
        if (f->g[g].release != NULL)
            redisFreeCommand(f->g[g].release);
        f->g[g].refund = f->g[g].release = NULL;
    }
}

void sl__rfan_free_all(struct sl__rstore *st)
{
    for (unsigned i = 0; st->fans != NULL && i < st->n_fans; i++)
        drop_refunds(&st->fans[i]);
    free(st->fans);
    st->fans = NULL;
}

static void on_refund(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rstore *st = priv;

    (void)l;
    if (!st->closing && (r == NULL || r->type == REDIS_REPLY_ERROR))
        SL__CNT(st, refund_failures, 1);
}

/* Send one formatted give-back call on a connection of `node`. */
static void give_back(struct sl__rstore *st, int node, const char *fmt, size_t len)
{
    struct sl__rconn *c = sl__rconn_pick_node(st, (unsigned)node);

    if (c != NULL && sl__rlink_formatted(c->link, on_refund, st, fmt, len) == SL_OK)
        SL__CNT(st, refunds, 1);
    else
        SL__CNT(st, refund_failures, 1);
}

/* A denied whole: give back what the allowed groups consumed. */
static void send_refunds(struct sl__rfan *f)
{
    for (unsigned g = 0; g < f->n_groups; g++) {
        struct sl__rfan_group *gr = &f->g[g];
        if (gr->refund != NULL)
            give_back(f->st, gr->node, gr->refund, gr->refund_len);
        if (gr->release != NULL)
            give_back(f->st, gr->node, gr->release, gr->release_len);
    }
}

/* Every group answered. A slot that denied decides the whole, whatever
 * another slot's call gave (an error such as SL_ERANGE): the answer is
 * that denial with the denying slot's status - the descriptors of a slot
 * that failed are reported without a limit - as one call would deny, not
 * an error; and, as one call, a denial admits nothing: no delay, no lease.
 * A denial Redis made (a slot it decided denied) is Redis's answer, also
 * when another slot was answered by the failure policy (its master down):
 * that policy did not make the decision, so the whole does not carry it
 * (an allow policy's mark on a denial would say "admitted").
 * A reset that failed anywhere stays an error (that state is unknown). */
static void complete(struct sl__rfan *f)
{
    struct sl__rstore *st = f->st;
    bool denied = f->res.verdict == SL_DENY;

    if (f->kind == SL__RQ_CHECK && (f->err != SL_OK || denied)) {
        send_refunds(f);
        f->res.lease[0] = '\0'; /* denied: no lease taken (its slots are released) */
    }
    if (denied) {
        f->res.delay_ns = 0;
        if (f->kind != SL__RQ_RESET)
            f->err = SL_OK;
        if (f->state_denied)
            f->by = SL__BY_STATE;
    }
    drop_refunds(f);
    sl__ranswer_deliver(&f->fin, f->cb, f->arg, f->err, f->err == SL_OK ? &f->res : NULL, f->by);
    if (f->rules != NULL)
        sl_rules_unref(f->rules);
    f->rules = NULL;
    f->next_free = st->free_fans;
    st->free_fans = f;
}

/* Ad hoc limits (no snapshot) live in the calls' slots, which are reused
 * before the whole is answered: report the fan's own copies instead. */
static const struct sl_limit *own_limit(struct sl__rfan *f, const struct sl_limit *l)
{
    for (unsigned k = 0; l != NULL && f->rules == NULL && k < f->n_own; k++)
        if (memcmp(&f->own[k], l, sizeof(*l)) == 0)
            return &f->own[k];
    return l;
}

static void join(struct sl__rfan *f, const struct sl__rfan_group *gr, const struct sl_result *res,
                 enum sl__store_by by)
{
    for (unsigned j = 0; j < gr->n && j < res->n_statuses; j++) {
        struct sl_status *s = &f->res.statuses[gr->desc[j]];
        *s = res->statuses[j];
        s->limit = own_limit(f, s->limit);
    }
    if (res->verdict > f->res.verdict)
        f->res.verdict = res->verdict;
    if (by != SL__BY_STATE) /* a group the policy answered marks the whole */
        f->by = by;
    else if (res->verdict == SL_DENY)
        f->state_denied = true;
    if (res->delay_ns > f->res.delay_ns)
        f->res.delay_ns = res->delay_ns;
    if (res->lease[0] != '\0') {
        size_t have = strlen(f->res.lease), add = strlen(res->lease);
        if (have + 1 + add < sizeof(f->res.lease)) {
            if (have > 0)
                f->res.lease[have++] = '.';
            memcpy(f->res.lease + have, res->lease, add + 1);
        }
    }
}

static void on_group(void *arg, int err, const struct sl_result *res, enum sl__store_by by)
{
    struct sl__rfan_group *gr = arg;
    struct sl__rfan *f = gr->fan;

    gr->answered = true;
    if (err != SL_OK && f->err == SL_OK)
        f->err = err;
    else if (err == SL_OK)
        join(f, gr, res, by);
    if (--f->pending == 0)
        complete(f);
}

void sl__rfan_note_reply(struct sl__rreq *q, const struct sl_result *res, int64_t now_us)
{
    static __thread struct sl__rebuilt r;
    static __thread struct sl__redis_plan plan;
    struct sl__rstore *st = q->st;
    struct sl__rfan_group *gr = &q->fan->g[q->fan_group];
    struct sl__redis_opts o = st->cfg.opts;
    bool consumed = false;
    int len;

    gr->redis = true;
    gr->node = q->conn->node;
    for (size_t k = 0; k < q->plan.n_items; k++)
        consumed = consumed || q->plan.item_cost[k] > 0;
    if (q->kind != SL__RQ_CHECK || res->verdict == SL_DENY || !consumed || q->copy.n == 0)
        return;
    gr->consumed = true;
    sl__ranswer_rebuild(q, false, &r);
    r.req.now_ns = now_us * 1000; /* the time the check used (also with Redis TIME) */
    o.redis_clock = false;
    if (sl__redis_plan_build(
            &o, &(struct sl__redis_plan_in){SL__REDIS_REFUND, &r.req, r.m, r.req.n_descriptors},
            &plan, &st->cmd) != SL_OK)
        return;
    len = sl__redis_cmd_format(&st->cmd, &gr->refund);
    gr->refund_len = len > 0 ? (size_t)len : 0;
    if (len <= 0)
        gr->refund = NULL;
    if (res->lease[0] == '\0' || sl__redis_release_build(&o, res->lease, strlen(res->lease),
                                                         now_us * 1000, &st->cmd) != SL_OK)
        return;
    len = sl__redis_cmd_format(&st->cmd, &gr->release);
    gr->release_len = len > 0 ? (size_t)len : 0;
    if (len <= 0)
        gr->release = NULL;
}

/* Each descriptor's slot group; descriptors without limits join the first. */
static unsigned group_descriptors(struct sl__rstore *st, size_t n, uint8_t *group)
{
    const struct sl__redis_plan *p = &st->plan;
    uint16_t slots[SL_MAX_DESCRIPTORS], gs[SL_MAX_DESCRIPTORS];
    int first = -1;

    for (size_t i = 0; i < n; i++)
        if (p->count[i] > 0) {
            slots[i] = (uint16_t)sl__rroute_item_slot(st, p->slots[p->first[i]].item);
            if (first < 0)
                first = (int)slots[i];
        }
    for (size_t i = 0; i < n; i++)
        if (p->count[i] == 0)
            slots[i] = (uint16_t)(first < 0 ? 0 : first);
    return (unsigned)sl__cluster_group(slots, n, group, gs);
}

/* Copy the distinct ad hoc limits of m[0..n) into the fan. */
static int keep_limits(struct sl__rfan *f, const struct sl_match *m, size_t n)
{
    f->n_own = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < m[i].n_limits; k++) {
            const struct sl_limit *l = m[i].limits[k];
            unsigned j = 0;
            while (j < f->n_own && memcmp(&f->own[j], l, sizeof(*l)) != 0)
                j++;
            if (j == f->n_own) {
                if (f->n_own == SL_MAX_LIMITS)
                    return SL_ETOOBIG;
                f->own[f->n_own++] = *l;
            }
        }
    return SL_OK;
}

/* Start group g of the whole call `whole` as a call of its own. */
static void start_group(struct sl__rfan *f, unsigned g, const struct sl__rstart *whole)
{
    static __thread struct sl_match sm[SL_MAX_DESCRIPTORS];
    static __thread struct sl_descriptor sd[SL_MAX_DESCRIPTORS];
    struct sl__rfan_group *gr = &f->g[g];
    const struct sl_request *req = whole->req;
    const struct sl_match *m = whole->m;
    struct sl_request sub = *req;
    struct sl__rfinish fin;
    struct sl__rstart call = {.kind = f->kind,
                              .req = &sub,
                              .m = sm,
                              .n = gr->n,
                              .rules = f->rules,
                              .fin = &fin,
                              .pol = whole->pol, /* sub's domain is the whole's */
                              .cb = on_group,
                              .arg = gr,
                              .fan = f,
                              .group = (uint8_t)g};
    int rc;

    for (unsigned j = 0; j < gr->n; j++) {
        sm[j] = m[gr->desc[j]];
        if (req->descriptors != NULL && gr->desc[j] < req->n_descriptors)
            sd[j] = req->descriptors[gr->desc[j]];
    }
    if (req->descriptors != NULL)
        sub.descriptors = sd;
    sub.n_descriptors = req->descriptors != NULL ? gr->n : req->n_descriptors;
    memset(&fin, 0, sizeof(fin));
    fin.rv.deny_all = f->fin.rv.deny_all; /* a banned request only peeks */
    fin.now_ns = req->now_ns;
    rc = sl__rstore_start(f->st, &call);
    if (rc != SL_OK)
        on_group(gr, rc, NULL, SL__BY_STATE); /* nothing started for it */
}

int sl__rfan_start(struct sl__rstore *st, const struct sl__rstart *call)
{
    struct sl__rfan *f = st->free_fans;
    uint8_t group[SL_MAX_DESCRIPTORS];
    enum sl__rreq_kind kind = call->kind;
    size_t n = call->n;

    SL__CNT(st, checks, 1);
    if (f == NULL) {
        SL__CNT(st, overflow, 1);
        if (kind == SL__RQ_RESET)
            return SL_EFULL;
        sl__ranswer_policy(st, st->cfg.policy, &st->plan, call, kind != SL__RQ_CHECK);
        return SL_OK;
    }
    if (call->rules == NULL && keep_limits(f, call->m, n) != SL_OK)
        return SL_ETOOBIG;
    SL__CNT(st, cross_slot, 1);
    st->free_fans = f->next_free;
    f->kind = kind;
    f->cb = call->cb;
    f->arg = call->arg;
    f->fin = *call->fin;
    f->rules = call->rules != NULL ? sl_rules_ref((sl_rules *)(uintptr_t)call->rules) : NULL;
    f->err = SL_OK;
    f->by = SL__BY_STATE;
    f->state_denied = false;
    memset(&f->res, 0, sizeof(f->res));
    f->res.n_statuses = n;
    f->n_groups = group_descriptors(st, n, group);
    for (unsigned g = 0; g < f->n_groups; g++)
        memset(&f->g[g], 0, sizeof(f->g[g]));
    for (size_t i = 0; i < n; i++) {
        struct sl__rfan_group *gr = &f->g[group[i]];
        gr->fan = f;
        gr->desc[gr->n++] = (uint8_t)i;
    }
    f->pending = f->n_groups + 1; /* + 1: no group completes the fan while starting */
    for (unsigned g = 0; g < f->n_groups; g++)
        start_group(f, g, call);
    if (--f->pending == 0)
        complete(f);
    return SL_OK;
}

/* ---------------------------------------------------------------- release */

/* The slot tag of a lease piece "<h>-<id>-<T>" (cluster tokens): T's
 * offset and length; length 0 when it has none. */
static size_t piece_tag(const char *p, size_t len, size_t *at)
{
    size_t i = len;

    while (i > 17 && p[i - 1] != '-')
        i--;
    *at = i;
    return i > 17 ? len - i : 0;
}

/* One slot's release answered: SL_OK wins, then SL_ENOENT, else the error. */
static void on_release_group(void *arg, int err, const struct sl_result *res, enum sl__store_by by)
{
    struct sl__rfan_group *gr = arg;
    struct sl__rfan *f = gr->fan;
    struct sl__rstore *st = f->st;

    (void)res;
    (void)by;
    if (err == SL_OK || (err == SL_ENOENT && f->err != SL_OK))
        f->err = err;
    if (--f->pending > 0)
        return;
    f->cb(f->arg, f->err, NULL, SL__BY_STATE);
    f->next_free = st->free_fans;
    st->free_fans = f;
}

int sl__rfan_release(struct sl__rstore *st, const char *lease, size_t len, int64_t now_ns,
                     sl__store_cb cb, void *arg)
{
    static __thread char sub[SL_LEASE_MAX];
    const char *tag[SL_MAX_LEASES];
    size_t tlen[SL_MAX_LEASES], n = 0, at = 0;
    struct sl__rfan *f;

    while (at < len) { /* the distinct slot tags, in order */
        const char *dot = memchr(lease + at, '.', len - at);
        size_t end = dot != NULL ? (size_t)(dot - lease) : len, t, k = 0;
        size_t tl = piece_tag(lease + at, end - at, &t);
        while (k < n && (tlen[k] != tl || memcmp(tag[k], lease + at + t, tl) != 0))
            k++;
        if (k == n && n == SL_MAX_LEASES)
            return SL_EINVAL;
        if (k == n) {
            tag[n] = lease + at + t;
            tlen[n++] = tl;
        }
        at = end + 1;
    }
    if (n <= 1)
        return SL_ENOENT; /* one slot: the caller releases it directly */
    if ((f = st->free_fans) == NULL)
        return SL_EFULL;
    st->free_fans = f->next_free;
    f->st = st;
    f->cb = cb;
    f->arg = arg;
    f->rules = NULL;
    f->n_groups = 0;
    f->err = SL_EFULL; /* until a slot answers */
    f->pending = (unsigned)n + 1;
    for (size_t k = 0; k < n; k++) {
        size_t used = 0;
        for (at = 0; at < len;) {
            const char *dot = memchr(lease + at, '.', len - at);
            size_t end = dot != NULL ? (size_t)(dot - lease) : len, t;
            size_t tl = piece_tag(lease + at, end - at, &t);
            if (tl == tlen[k] && memcmp(lease + at + t, tag[k], tl) == 0) {
                if (used > 0)
                    sub[used++] = '.';
                memcpy(sub + used, lease + at, end - at);
                used += end - at;
            }
            at = end + 1;
        }
        f->g[k].fan = f;
        if (sl__rstore_release(st, sub, used, now_ns, on_release_group, &f->g[k]) != SL_OK)
            on_release_group(&f->g[k], SL_EFULL, NULL, SL__BY_STATE);
    }
    f->g[n].fan = f;
    on_release_group(&f->g[n], SL_EFULL, NULL, SL__BY_STATE); /* the starter's share */
    return SL_OK;
}
