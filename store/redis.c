/*
 * redis.c - the Redis store's operations (see redis.h): each check, peek,
 * reset or release becomes one script call on a pooled request slot with
 * its own timeout timer; what cannot go to Redis (breaker open, nothing
 * connected, max_in_flight reached, timeout, error) is answered by the
 * domain's failure policy; denials are remembered in the over-limit cache.
 *
 * It does not manage connections (redis_conn.c) or build commands
 * (redis_plan.c). Allocation per request: none of its own (hiredis formats
 * and queues each command in memory it allocates).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

static const struct sl__store_ops redis_ops;
static int send_slot(struct sl__rstore *st, struct sl__rreq *q, struct sl__rconn *c);

void sl__redis_config_init(struct sl__redis_config *c)
{
    memset(c, 0, sizeof(*c));
    memcpy(c->host, "127.0.0.1", sizeof("127.0.0.1"));
    c->port = 6379;
    sl__redis_opts_init(&c->opts);
    c->timeout_ms = 5;
    c->connections = 2;
    c->max_in_flight = 256;
    c->policy = SL__POLICY_LOCAL;
    c->breaker_failures = 5;
    c->breaker_open_ms = 500;
    c->backoff_min_ms = 50;
    c->backoff_max_ms = 2000;
    c->olc_entries = 4096;
    c->olc_max_ms = 60000;
}

int sl__redis_policy_parse(const char *s, enum sl__redis_policy *out)
{
    static const char *const names[] = {"allow", "deny", "local"};

    for (int i = 0; i < 3; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (enum sl__redis_policy)i;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

static struct sl__rstore *of(const struct sl__store *s)
{
    return (struct sl__rstore *)(void *)s;
}

static enum sl__redis_policy policy_for(const struct sl__rstore *st, struct sl_str domain)
{
    for (size_t i = 0; i < st->cfg.n_domains; i++) {
        const char *d = st->cfg.domains[i].domain;
        if (strlen(d) == domain.len && memcmp(d, domain.p, domain.len) == 0)
            return st->cfg.domains[i].policy;
    }
    return st->cfg.policy;
}

/* ------------------------------------------------- answers without Redis */

/* allow / deny for every descriptor, reported on its first limit; what
 * Redis holds is unknown, so remaining is 0; a denial's retry is the time
 * the breaker waits before probing again. */
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

/* The request and matches a started call was made of, from the slot's
 * copy and its plan's limits (`peek`: every cost 0). */
struct rebuilt {
    struct sl_match m[SL_MAX_DESCRIPTORS];
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl_entry e[SL_MAX_DESCRIPTORS];
    struct sl_request req;
};

static void rebuild(const struct sl__rreq *q, bool peek, struct rebuilt *r)
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
    static __thread struct rebuilt r; /* 40 KiB: not on the stack */

    rebuild(q, q->kind == SL__RQ_PEEK || q->fin.deny_all, &r);
    return sl_limiter_check_matched(st->local, r.m, r.req.n_descriptors, &r.req, res);
}

/* Every answer to a caller goes through here: what the rules resolution
 * took out (deny-all limits) is reported as sl_limiter_check reports it. */
static void deliver(const struct sl__rfinish *fin, sl__store_cb cb, void *arg, int err,
                    struct sl_result *res)
{
    for (size_t i = 0; err == SL_OK && fin != NULL && fin->rechecked && i < res->n_statuses; i++)
        if (fin->was_denied[i])
            res->statuses[i] = fin->saved[i];
    if (err == SL_OK && res != NULL && fin != NULL && fin->active)
        sl__redis_resolve_finish(fin->banned, fin->deny_all, fin->now_ns, res);
    cb(arg, err, err == SL_OK ? res : NULL);
}

/* Answer by policy; `m` non-NULL: the caller's matches (nothing sent yet),
 * else the slot's copy. */
static void by_policy(struct sl__rstore *st, enum sl__redis_policy pol,
                      const struct sl__redis_plan *p, const struct sl__rreq *q,
                      const struct sl_match *m, const struct sl_request *req, bool peek,
                      const struct sl__rfinish *fin, sl__store_cb cb, void *arg)
{
    struct sl_result res;
    int rc = SL_OK;

    if (pol == SL__POLICY_LOCAL) {
        SL__CNT(st, policy_local, 1);
        rc = m != NULL ? local_decide(st, m, p->n_desc, req, peek, &res)
                       : local_from_slot(st, q, &res);
    } else {
        SL__CNT(st, policy_allow, pol == SL__POLICY_ALLOW);
        SL__CNT(st, policy_deny, pol == SL__POLICY_DENY);
        fixed_answer(st, p, pol == SL__POLICY_DENY, &res);
    }
    deliver(fin, cb, arg, rc, &res);
}

/* --------------------------------------------------- over-limit cache */

static bool cacheable(const struct sl_limit *l)
{
    return !l->count_rejected && !l->shadow && l->algo != SL_ALGO_CONCURRENCY;
}

/* Is any item of the plan a cached denial? Then answer it, no round trip:
 * its descriptor denied on that limit; the others, which were not read,
 * are reported without a limit. */
static bool olc_answer(struct sl__rstore *st, const struct sl__redis_plan *p, const uint64_t *hash,
                       int64_t now_ns, const struct sl__rfinish *fin, sl__store_cb cb, void *arg)
{
    struct sl_result res;

    for (size_t k = 0; st->olc != NULL && k < p->n_items; k++) {
        const struct sl__olc_slot *hit;
        if (!cacheable(p->item_l[k]) || p->item_cost[k] == 0)
            continue;
        hit = sl__olc_find(st, hash[k], now_ns, p->item_cost[k]);
        if (hit == NULL)
            continue;
        memset(&res, 0, sizeof(res));
        res.verdict = SL_DENY;
        res.n_statuses = p->n_desc;
        for (size_t s = 0; s < p->n_slots; s++) {
            struct sl_status *stt = &res.statuses[p->slots[s].desc];
            if (p->slots[s].item != k || stt->limit != NULL)
                continue;
            stt->limit = p->slots[s].l;
            stt->d.verdict = SL_DENY;
            stt->d.quota = sl_limit_quota(stt->limit);
            stt->d.retry_after_ns = hit->until_ns - now_ns;
            stt->d.reset_ns = hit->reset_at_ns > now_ns ? hit->reset_at_ns - now_ns : 0;
        }
        SL__CNT(st, olc_hits, 1);
        deliver(fin, cb, arg, SL_OK, &res);
        return true;
    }
    return false;
}

static void olc_learn(struct sl__rstore *st, const struct sl__rreq *q, const struct sl_decision *d)
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

/* ------------------------------------------------------ request slots */

static void release_slot(struct sl__rreq *q)
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
    deliver(&q->fin, q->cb, q->arg, err, res);
}

/* The call failed (error, lost connection) or timed out. */
static void fail_slot(struct sl__rreq *q)
{
    struct sl__rstore *st = q->st;

    q->answered = true;
    uv_timer_stop(&q->timer);
    if (q->kind == SL__RQ_RELEASE || q->kind == SL__RQ_RESET)
        q->cb(q->arg, SL_EFULL, NULL); /* state unknown: the caller may retry */
    else
        by_policy(st, q->policy, &q->plan, q, NULL, NULL, q->kind == SL__RQ_PEEK, &q->fin, q->cb,
                  q->arg);
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
 * descriptors that denied, which keep their first status (deliver()). */
static int recheck(struct sl__rreq *q, const struct sl_result *first)
{
    static __thread struct rebuilt r;
    struct sl__rstore *st = q->st;
    struct sl__rconn *c = sl__rconn_available(st) ? sl__rconn_pick(st) : NULL;
    int rc;

    if (c == NULL)
        return SL_EFULL;
    rebuild(q, false, &r);
    for (size_t i = 0; i < r.req.n_descriptors; i++) {
        q->fin.was_denied[i] = q->fin.quota[i] && first->statuses[i].d.verdict == SL_DENY;
        q->fin.saved[i] = first->statuses[i];
        if (q->fin.was_denied[i])
            r.m[i].n_limits = 0;
    }
    q->fin.rechecked = true;
    rc = sl__redis_plan_build(&st->cfg.opts, SL__REDIS_CHECK, &r.req, r.m, r.req.n_descriptors,
                              &q->plan, &st->cmd);
    if (rc != SL_OK)
        return rc;
    redisFreeCommand(q->fmt);
    q->fmt = NULL;
    q->retried = false;
    return send_slot(st, q, c);
}

/* True when the slot was sent again (quota_mode) and must stay busy. */
static bool on_reply_ok(struct sl__rreq *q, redisReply *r)
{
    struct sl_result res;
    struct sl_decision items[SL__REDIS_MAX_ITEMS];
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
    rc = sl__redis_plan_result(&q->plan, r, &res, NULL, items);
    if (rc == SL_EINVAL) {
        SL__CNT(q->st, errors, 1);
        sl__rconn_failure(q->st);
        fail_slot(q);
        return false;
    }
    SL__CNT(q->st, replies, 1);
    sl__rconn_success(q->st);
    if (rc == SL_OK && q->kind == SL__RQ_CHECK && !q->fin.quota_any)
        olc_learn(q->st, q, items);
    if (rc == SL_OK && q->fin.quota_any && !q->fin.rechecked && res.verdict == SL_DENY &&
        quota_excused(q, &res)) {
        if (recheck(q, &res) == SL_OK)
            return true; /* the second call is out: the slot stays busy */
        fail_slot(q);
        return false;
    }
    answer(q, rc, rc == SL_OK ? &res : NULL);
    return false;
}

static void on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    struct sl__rreq *q = priv;
    redisReply *r = reply;

    if (q->st->closing) {
        release_slot(q);
        return;
    }
    if (r != NULL && sl__redis_is_noscript(r) && !q->retried && !q->answered) {
        /* The script cache was flushed (restart, SCRIPT FLUSH, failover):
         * load it and resend, in order, on this same connection. */
        q->retried = true;
        SL__CNT(q->st, noscript, 1);
        sl__rconn_reload(q->conn);
        if (redisAsyncFormattedCommand(ac, on_reply, q, q->fmt, q->fmt_len) == REDIS_OK)
            return;
    }
    if (!q->answered && r == NULL) {
        SL__CNT(q->st, errors, 1);
        fail_slot(q);
        sl__rconn_failure(q->st);
    } else if (!q->answered && on_reply_ok(q, r)) {
        return;
    }
    release_slot(q);
}

static void on_timeout(uv_timer_t *t)
{
    struct sl__rreq *q = t->data;

    if (!q->busy || q->answered)
        return;
    SL__CNT(q->st, timeouts, 1);
    fail_slot(q);             /* answers now; the slot stays busy ... */
    sl__rconn_failure(q->st); /* ... until Redis answers or is dropped */
}

static bool copy_put(struct sl__rcopy *c, size_t *at, const char *p, size_t len, uint32_t *off)
{
    if (*at + len > c->cap)
        return false;
    memcpy(c->buf + *at, p, len);
    *off = (uint32_t)*at;
    *at += len;
    return true;
}

/* Copy what a later decision needs once the caller's data is gone. */
static int keep_request(struct sl__rreq *q, const struct sl_request *req, const struct sl_match *m,
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

static int send_slot(struct sl__rstore *st, struct sl__rreq *q, struct sl__rconn *c)
{
    int len;

    st->cmd.argv[0] = "EVALSHA";
    st->cmd.argvlen[0] = 7;
    st->cmd.argv[1] = st->sha;
    st->cmd.argvlen[1] = 40;
    len = redisFormatCommandArgv(&q->fmt, st->cmd.argc, st->cmd.argv, st->cmd.argvlen);
    if (len < 0)
        return SL_ENOMEM;
    q->fmt_len = (size_t)len;
    q->conn = c;
    if (redisAsyncFormattedCommand(c->ac, on_reply, q, q->fmt, q->fmt_len) != REDIS_OK) {
        redisFreeCommand(q->fmt);
        q->fmt = NULL;
        return SL_EFULL;
    }
    SL__CNT(st, script_calls, 1);
    uv_timer_start(&q->timer, on_timeout, (uint64_t)st->cfg.timeout_ms, 0);
    return SL_OK;
}

/* A reset: delete every state key first, on the same connection (so in
 * order), and forget their cached denials; the peek that follows reports
 * the fresh state. */
static void send_reset_delete(struct sl__rstore *st, struct sl__rconn *c, size_t n_items)
{
    const char *argv[1 + SL__REDIS_MAX_ITEMS];
    size_t len[1 + SL__REDIS_MAX_ITEMS];

    argv[0] = "DEL";
    len[0] = 3;
    for (size_t k = 0; k < n_items; k++) {
        argv[1 + k] = st->cmd.argv[3 + k];
        len[1 + k] = st->cmd.argvlen[3 + k];
        sl__olc_forget(st, sl__olc_hash(st, argv[1 + k], len[1 + k]));
    }
    if (n_items > 0) {
        redisAsyncCommandArgv(c->ac, NULL, NULL, (int)(1 + n_items), argv, len);
        sl__rconn_announce_reset(c, argv + 1, len + 1, n_items);
    }
}

/* Ad hoc limits (no rules snapshot, e.g. CL.THROTTLE's, which its caller
 * reuses) are copied into the slot so the reply reports stable ones. */
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

/* Take a slot and fill it for the call; the caller sends it. */
static struct sl__rreq *take_slot(struct sl__rstore *st, enum sl__rreq_kind kind,
                                  enum sl__redis_policy pol, const sl_rules *rules,
                                  const struct sl__rfinish *fin, sl__store_cb cb, void *arg)
{
    struct sl__rreq *q = st->free_reqs;

    st->free_reqs = q->next_free;
    q->busy = true;
    q->answered = false;
    q->retried = false;
    q->kind = kind;
    q->policy = pol;
    q->cb = cb;
    q->arg = arg;
    q->rules = rules != NULL ? sl_rules_ref((sl_rules *)(uintptr_t)rules) : NULL;
    q->fin = *fin;
    memcpy(&q->plan, &st->plan, sizeof(st->plan));
    SL__CNT(st, in_flight, 1);
    return q;
}

static int start(struct sl__rstore *st, enum sl__rreq_kind kind, const struct sl_request *req,
                 const struct sl_match *m, size_t n, const sl_rules *rules,
                 const struct sl__rfinish *fin, sl__store_cb cb, void *arg)
{
    struct sl__redis_plan *p = &st->plan;
    uint64_t hash[SL__REDIS_MAX_ITEMS];
    enum sl__redis_policy pol = policy_for(st, req->domain);
    bool peek = kind != SL__RQ_CHECK || fin->deny_all;
    struct sl__rreq *q;
    struct sl__rconn *c;
    int rc = sl__redis_plan_build(&st->cfg.opts, peek ? SL__REDIS_PEEK : SL__REDIS_CHECK, req, m, n,
                                  p, &st->cmd);

    if (rc != SL_OK)
        return rc;
    SL__CNT(st, checks, 1);
    for (size_t k = 0; st->olc != NULL && k < p->n_items; k++)
        hash[k] = sl__olc_hash(st, st->cmd.argv[3 + k], st->cmd.argvlen[3 + k]);
    if (!peek && !fin->quota_any && olc_answer(st, p, hash, req->now_ns, fin, cb, arg))
        return SL_OK;
    c = sl__rconn_available(st) ? sl__rconn_pick(st) : NULL;
    if (c == NULL || st->free_reqs == NULL || st->sha[0] == '\0') {
        if (st->free_reqs == NULL)
            SL__CNT(st, overflow, 1);
        else
            SL__CNT(st, unavailable, 1);
        if (kind == SL__RQ_RESET)
            return SL_EFULL;
        by_policy(st, pol, p, NULL, m, req, peek, fin, cb, arg);
        return SL_OK;
    }
    q = take_slot(st, kind, pol, rules, fin, cb, arg);
    q->now_ns = req->now_ns;
    if (st->olc != NULL)
        memcpy(q->item_hash, hash, sizeof(hash[0]) * p->n_items);
    rc = rules == NULL ? own_limits(q) : SL_OK;
    if (rc == SL_OK && (pol == SL__POLICY_LOCAL || fin->quota_any))
        rc = keep_request(q, req, m, n);
    if (rc == SL_OK && kind == SL__RQ_RESET)
        send_reset_delete(st, c, p->n_items);
    if (rc == SL_OK)
        rc = send_slot(st, q, c);
    if (rc != SL_OK)
        release_slot(q); /* nothing started: the caller gets rc */
    return rc;
}

/* ------------------------------------------------------------- ops */

/* With a rules snapshot, resolve as sl_limiter_check does (matching,
 * Envoy `replaces`, requests_per_unit: 0); Envoy quota_mode's second
 * decision is not made (see redis.h). */
static int run(struct sl__store *s, const struct sl__store_req *q, enum sl__rreq_kind kind,
               sl__store_cb cb, void *arg)
{
    struct sl_match m[SL_MAX_DESCRIPTORS];
    struct sl__rfinish fin;
    const struct sl_request *req = q->req;
    int rc;

    if (req == NULL)
        return SL_EINVAL;
    memset(&fin, 0, sizeof(fin));
    if (q->rules == NULL)
        return start(of(s), kind, req, q->m, q->n, NULL, &fin, cb, arg);
    rc = sl__redis_resolve(q->rules, req, m, fin.banned, &fin.deny_all);
    if (rc != SL_OK)
        return rc;
    fin.now_ns = req->now_ns;
    fin.deny_all = fin.deny_all && kind != SL__RQ_RESET;
    for (size_t i = 0; kind == SL__RQ_CHECK && !fin.deny_all && i < req->n_descriptors; i++) {
        fin.quota[i] = m[i].quota_mode;
        fin.quota_any = fin.quota_any || (m[i].quota_mode && m[i].n_limits > 0);
    }
    for (size_t i = 0; i < req->n_descriptors; i++)
        fin.active = fin.active || fin.banned[i] != NULL;
    fin.active = fin.active && kind != SL__RQ_RESET;
    return start(of(s), kind, req, m, req->n_descriptors, q->rules, &fin, cb, arg);
}

static int check(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    return run(s, q, SL__RQ_CHECK, cb, arg);
}

static int peek(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    return run(s, q, SL__RQ_PEEK, cb, arg);
}

static int reset(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    return run(s, q, SL__RQ_RESET, cb, arg);
}

static int release(struct sl__store *s, const char *lease, size_t len, int64_t now_ns,
                   sl__store_cb cb, void *arg)
{
    struct sl__rstore *st = of(s);
    struct sl__rconn *c = sl__rconn_available(st) ? sl__rconn_pick(st) : NULL;
    struct sl__rreq *q = st->free_reqs;
    struct sl__rfinish fin;
    int rc = sl__redis_release_build(&st->cfg.opts, lease, len, now_ns, &st->cmd);

    if (rc != SL_OK)
        return rc;
    SL__CNT(st, checks, 1);
    if (c == NULL || q == NULL || st->sha[0] == '\0')
        return SL_EFULL; /* the leases are in Redis: nothing local to free */
    memset(&fin, 0, sizeof(fin));
    st->plan.n_items = 0;
    st->plan.n_desc = 0;
    st->plan.n_slots = 0;
    q = take_slot(st, SL__RQ_RELEASE, st->cfg.policy, NULL, &fin, cb, arg);
    q->now_ns = now_ns;
    rc = send_slot(st, q, c);
    if (rc != SL_OK)
        release_slot(q);
    return rc;
}

static void on_req_closed(uv_handle_t *h)
{
    (void)h;
}

static void store_free(struct sl__store *s)
{
    struct sl__rstore *st = of(s);

    st->closing = true;
    sl__rconn_close_all(st); /* pending calls come back NULL: slots freed */
    for (unsigned i = 0; st->reqs != NULL && i < st->cfg.max_in_flight; i++)
        uv_close((uv_handle_t *)&st->reqs[i].timer, on_req_closed);
    uv_run(st->loop, UV_RUN_NOWAIT); /* complete the closes */
    for (unsigned i = 0; st->reqs != NULL && i < st->cfg.max_in_flight; i++)
        free(st->reqs[i].copy.buf);
    free(st->reqs);
    free(st->conns);
    free(st->olc);
    free(st);
}

static const struct sl__store_ops redis_ops = {
    .name = "redis",
    .check = check,
    .peek = peek,
    .reset = reset,
    .release = release,
    .free = store_free,
};

static int validate_config(const struct sl__redis_config *c)
{
    for (const char *p = c->opts.prefix; *p != '\0'; p++)
        if (*p <= ' ' || *p > '~' || *p == ':' || *p == '{' || *p == '}' || *p == '%')
            return SL_EINVAL;
    if (c->host[0] == '\0' || c->port <= 0 || c->port > 65535 || c->timeout_ms <= 0 ||
        c->connections == 0 || c->connections > 64 || c->max_in_flight == 0 ||
        c->breaker_failures == 0 || c->opts.prefix[0] == '\0')
        return SL_EINVAL;
    return SL_OK;
}

int sl__store_redis_new(uv_loop_t *loop, const struct sl__redis_config *c, sl_limiter *local,
                        struct sl__store **out)
{
    struct sl__rstore *st;
    int rc = validate_config(c);

    *out = NULL;
    if (rc != SL_OK || loop == NULL || local == NULL)
        return SL_EINVAL;
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return SL_ENOMEM;
    st->base.ops = &redis_ops;
    st->loop = loop;
    st->cfg = *c;
    st->local = local;
    st->reqs = calloc(c->max_in_flight, sizeof(*st->reqs));
    if (st->reqs == NULL || sl__olc_init(st) != SL_OK) {
        free(st->reqs);
        free(st);
        return SL_ENOMEM;
    }
    for (unsigned i = c->max_in_flight; i-- > 0;) {
        struct sl__rreq *q = &st->reqs[i];
        q->st = st;
        uv_timer_init(loop, &q->timer);
        uv_unref((uv_handle_t *)&q->timer);
        q->timer.data = q;
        q->next_free = st->free_reqs;
        st->free_reqs = q;
    }
    rc = sl__rconn_init_all(st);
    if (rc != SL_OK) {
        store_free(&st->base);
        return rc;
    }
    *out = &st->base;
    return SL_OK;
}

bool sl__store_is_redis(const struct sl__store *s)
{
    return s != NULL && s->ops == &redis_ops;
}

#define LOAD(f) atomic_load_explicit(&c->f, memory_order_relaxed)

void sl__store_redis_stats(const struct sl__store *s, struct sl__redis_stats *out)
{
    const struct sl__rcounters *c = &of(s)->ctr;

    out->checks = LOAD(checks);
    out->script_calls = LOAD(script_calls);
    out->replies = LOAD(replies);
    out->timeouts = LOAD(timeouts);
    out->errors = LOAD(errors);
    out->noscript = LOAD(noscript);
    out->overflow = LOAD(overflow);
    out->unavailable = LOAD(unavailable);
    out->policy_allow = LOAD(policy_allow);
    out->policy_deny = LOAD(policy_deny);
    out->policy_local = LOAD(policy_local);
    out->olc_hits = LOAD(olc_hits);
    out->olc_inserts = LOAD(olc_inserts);
    out->reconnects = LOAD(reconnects);
    out->in_flight = LOAD(in_flight);
    out->conns_ready = LOAD(conns_ready);
    out->breaker = (enum sl__breaker)LOAD(breaker);
    out->olc_active = LOAD(olc_active);
}

/* Ready for /readyz. Any thread. */
bool sl__store_redis_ready(const struct sl__store *s)
{
    const struct sl__rcounters *c = &of(s)->ctr;

    return LOAD(breaker) == SL__BREAKER_CLOSED && LOAD(conns_ready) > 0;
}
