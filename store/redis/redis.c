/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis.c - the Redis store's operations (see redis.h) and its life: each
 * check, peek, reset or release is resolved (rules, when given), looked up
 * in the over-limit cache, and then either started as one call (the
 * module's command, FCALL or EVALSHA: the engine the connections agreed on)
 * on a pooled request slot or - breaker open, nothing connected,
 * max_in_flight reached - answered at once by the domain's failure policy.
 *
 * It does not start a call (redis_start.c), split one over slots
 * (redis_fan.c), manage connections (redis_conn.c), run a call
 * (redis_call.c), make answers without Redis (redis_answer.c) or build
 * commands (redis_plan.c). It is the top floor of store/redis/: it wires
 * the upward reports of the rooms below (struct sl__rup), so that no call
 * goes back up. Allocation per request: none of its own
 * (hiredis formats and queues each command in memory it allocates).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "redis_int.h"

static const struct sl__store_ops redis_ops;

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

/* ------------------------------------------------------------- ops */

/* One call, or one per slot when its descriptors hash to several
 * (Redis Cluster): redis_fan.c splits it and starts each group. */
static int start(struct sl__rstore *st, const struct sl__rstart *call)
{
    int rc = sl__rstore_start(st, call);

    return rc == SL__RSTART_SPANS ? sl__rfan_start(st, call) : rc;
}

/* ---------------------------------------------- adaptive_concurrency */

/* adaptive_concurrency is decided on this node, in the local table
 * (docs/distributed.md): 1 when every limit of the matches is adaptive (at
 * least one), -1 when adaptive limits come with limits decided in Redis
 * (refused: one answer cannot be decided in two places all-or-nothing; the
 * rules load refuses a domain that mixes them), 0 when none is adaptive. */
static int adaptive_only(const struct sl_match *m, size_t n)
{
    size_t adaptive = 0, other = 0;

    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; !m[i].unlimited && k < m[i].n_limits; k++) {
            if (m[i].limits[k]->algo == SL_ALGO_ADAPTIVE_CONCURRENCY)
                adaptive++;
            else
                other++;
        }
    }
    return adaptive == 0 ? 0 : other > 0 ? -1 : 1;
}

/* The request decided in the local table, as the memory store does: a
 * check, a peek (cost 0), or a reset of the matches then a peek. */
static int local_run(struct sl__rstore *st, const struct sl__store_req *q, enum sl__rreq_kind kind,
                     const struct sl_match *m, sl__store_cb cb, void *arg)
{
    size_t n = q->rules != NULL ? q->req->n_descriptors : q->n; /* m's */
    const struct sl_request *req = q->req;
    struct sl_request zero = *req;
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl_result res;
    int r = SL_OK;

    if (req->n_descriptors > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    if (kind == SL__RQ_RESET) {
        r = sl_limiter_reset(st->local, m, n);
        if (r != SL_OK && r != SL_ENOENT)
            return r;
    }
    if (kind != SL__RQ_CHECK) {
        for (size_t i = 0; i < req->n_descriptors; i++) {
            d[i] = req->descriptors[i];
            d[i].hits = 0;
        }
        zero.descriptors = d;
        zero.hits = 0;
        req = &zero;
    }
    if (q->rules != NULL)
        r = sl_limiter_check(st->local, q->rules, req, &res);
    else
        r = sl_limiter_check_matched(st->local, q->m, q->n, req, &res);
    cb(arg, r, r == SL_OK ? &res : NULL, SL__BY_STATE);
    return SL_OK;
}

/* With a rules snapshot, resolve as sl_limiter_check does (matching,
 * Envoy `replaces`, requests_per_unit: 0); Envoy quota_mode's second
 * decision is not made (see redis.h). The call is described once, here,
 * for everything below it (struct sl__rstart). */
static int run(struct sl__store *s, const struct sl__store_req *q, enum sl__rreq_kind kind,
               sl__store_cb cb, void *arg)
{
    struct sl_match m[SL_MAX_DESCRIPTORS];
    struct sl__rfinish fin;
    const struct sl_request *req = q->req;
    struct sl__rstart call = {.kind = kind, .req = req, .fin = &fin, .cb = cb, .arg = arg};
    int rc;

    if (req == NULL)
        return SL_EINVAL;
    call.pol = policy_for(of(s), req->domain);
    memset(&fin, 0, sizeof(fin));
    if (q->rules == NULL) {
        rc = adaptive_only(q->m, q->n);
        if (rc != 0)
            return rc > 0 ? local_run(of(s), q, kind, q->m, cb, arg) : SL_EINVAL;
        call.m = q->m;
        call.n = q->n;
        return start(of(s), &call);
    }
    rc = sl__rules_resolve(q->rules, req, m, &fin.rv);
    if (rc != SL_OK)
        return rc;
    rc = adaptive_only(m, req->n_descriptors);
    if (rc != 0)
        return rc > 0 ? local_run(of(s), q, kind, m, cb, arg) : SL_EINVAL;
    fin.now_ns = req->now_ns;
    fin.rv.deny_all = fin.rv.deny_all && kind != SL__RQ_RESET;
    for (size_t i = 0; kind == SL__RQ_CHECK && !fin.rv.deny_all && i < req->n_descriptors; i++) {
        fin.quota[i] = m[i].quota_mode;
        fin.quota_any = fin.quota_any || (m[i].quota_mode && m[i].n_limits > 0);
    }
    fin.active = kind != SL__RQ_RESET; /* rule-based: the report needs the resolution */
    call.m = m;
    call.n = req->n_descriptors;
    call.rules = q->rules;
    return start(of(s), &call);
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

/* A token of the local table (adaptive_concurrency slots, decided on this
 * node: docs/distributed.md; or slots a local failure policy took) is
 * released there: its form (hex only) is not that of a Redis token ("<h>-<id>"),
 * which goes to Redis. */
static int release(struct sl__store *s, const struct sl__store_lease *rl, sl__store_cb cb,
                   void *arg)
{
    struct sl__rstore *st = of(s);
    const char *lease = rl->lease;
    size_t len = rl->len;
    int64_t now_ns = rl->now_ns;
    int rc = sl_limiter_release_latency(st->local, lease, len, now_ns, rl->latency_ns);

    if (rc != SL_EINVAL) {
        cb(arg, rc, NULL, SL__BY_STATE);
        return SL_OK;
    }
    rc = st->cfg.cluster ? sl__rfan_release(st, lease, len, now_ns, cb, arg) : SL_ENOENT;

    return rc == SL_ENOENT ? sl__rstore_release(st, lease, len, now_ns, cb, arg) : rc;
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
    sl__rsentinel_close(st);
    sl__rroute_close(st);
    sl__rlink_group_free(st->group); /* after its links: their writes are done */
    st->group = NULL;
    for (unsigned i = 0; st->reqs != NULL && i < st->cfg.max_in_flight; i++)
        uv_close((uv_handle_t *)&st->reqs[i].timer, on_req_closed);
    uv_run(st->loop, UV_RUN_NOWAIT); /* complete the closes */
    for (unsigned i = 0; st->reqs != NULL && i < st->cfg.max_in_flight; i++)
        free(st->reqs[i].copy.buf);
    free(st->reqs);
    free(st->conns);
    free(st->olc);
    sl__rfan_free_all(st);
    free(st->map);
    if (st->pub_ready)
        sl__rhealth_close(st);
    sl__rshared_free(st->own_shared);
    sl__rlink_tls_close(&st->tls);
    free(st);
}

static const struct sl__store_ops redis_ops = {
    .name = "redis",
    .check = check,
    .peek = peek,
    .reset = reset,
    .release = release,
    .health = sl__rhealth_get,
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
    if ((c->sentinels[0] != '\0') != (c->master_name[0] != '\0') ||
        (c->sentinels[0] != '\0' && c->cluster))
        return SL_EINVAL; /* Sentinel needs both, and is not for a cluster */
    return SL_OK;
}

/* The link's settings every connection of the store shares, and TLS. */
static int link_init(struct sl__rstore *st)
{
    st->group = sl__rlink_group_new(st->loop);
    if (st->group == NULL)
        return SL_ENOMEM;
    st->link.user = st->cfg.user;
    st->link.password = st->cfg.password;
    /* no connect timeout of the link's: a data connection's probe timer
     * (redis_conn.c) bounds its connection and its detection together */
    if (st->cfg.tls.on) {
        if (sl__rlink_tls_init(&st->tls, &st->cfg.tls) != SL_OK) {
            sl__rlog(st, SL__SLOG_ERROR, "store.tls_failed", "%s", st->tls.why);
            return SL_EINVAL;
        }
        st->link.tls = &st->tls;
    }
    st->sentinel_link = st->link;
    st->sentinel_link.user = st->sentinel_link.password = NULL;
    st->sentinel_link.connect_timeout_ms =
        st->cfg.timeout_ms * 20 < 200 ? 200 : st->cfg.timeout_ms * 20;
    return SL_OK;
}

int sl__store_redis_new(uv_loop_t *loop, const struct sl__redis_config *c, sl_limiter *local,
                        struct sl__store **out)
{
    const struct sl__store_env env = {.loop = loop, .lim = local};

    return sl__store_redis_new_logged(&env, c, out);
}

int sl__store_redis_new_logged(const struct sl__store_env *env, const struct sl__redis_config *c,
                               struct sl__store **out)
{
    uv_loop_t *loop = env->loop;
    sl_limiter *local = env->lim;
    struct sl__rshared *shared = env->shared;
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
    st->cfg.opts.engine = c->engine == SL__ENGINE_AUTO ? SL__ENGINE_SCRIPT : c->engine;
    atomic_store_explicit(&st->ctr.engine, (int)st->cfg.opts.engine, memory_order_relaxed);
    st->local = local;
    st->log = env->log;
    st->log_arg = env->log_arg;
    st->shared = shared;
    if (shared == NULL)
        st->own_shared = st->shared = sl__rshared_new();
    st->reqs = calloc(c->max_in_flight, sizeof(*st->reqs));
    if (st->reqs == NULL || st->shared == NULL || sl__olc_init(st) != SL_OK ||
        sl__rhealth_init(st) != SL_OK) {
        sl__rshared_free(st->own_shared);
        free(st->olc);
        free(st->reqs);
        free(st);
        return SL_ENOMEM;
    }
    st->pub_ready = true;
    for (unsigned i = c->max_in_flight; i-- > 0;) {
        struct sl__rreq *q = &st->reqs[i];
        q->st = st;
        uv_timer_init(loop, &q->timer);
        uv_unref((uv_handle_t *)&q->timer);
        q->timer.data = q;
        q->next_free = st->free_reqs;
        st->free_reqs = q;
    }
    /* what the lower rooms report upward, by pointer (redis_int.h) */
    st->up.master_moved = sl__rconn_retarget;
    st->up.conn_ready = sl__rroute_kick;
    st->up.conn_lost = sl__rroute_stale;
    st->up.group_reply = sl__rfan_note_reply;
    rc = link_init(st);
    if (rc == SL_OK)
        rc = sl__rroute_init(st);
    if (rc == SL_OK)
        rc = sl__rfan_init(st);
    if (rc == SL_OK)
        rc = sl__rsentinel_init(st); /* before the connections: they wait for a master */
    if (rc == SL_OK)
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
    out->moved = LOAD(moved);
    out->ask = LOAD(ask);
    out->tryagain = LOAD(tryagain);
    out->map_refreshes = LOAD(map_refreshes);
    out->cross_slot = LOAD(cross_slot);
    out->refunds = LOAD(refunds);
    out->refund_failures = LOAD(refund_failures);
    out->master_switches = LOAD(master_switches);
    out->nodes_known = LOAD(nodes_known);
    out->conns_ready = LOAD(conns_ready);
    out->breaker = (enum sl__breaker)LOAD(breaker);
    out->engine = (enum sl__redis_engine)LOAD(engine);
    out->olc_active = LOAD(olc_active);
}

/* Ready for /readyz. Any thread. */
