/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * decide.c - the one decision path (decide.h): kill switches, the store
 * call, the metrics, then the protocol's callback.
 *
 * It parses and formats nothing: a protocol gives it a request and gets a
 * result. It does not hold requests for their delay either (that is how a
 * protocol answers a delay: HTTP's /v1/auth holds, Envoy's API does not).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "decide.h"
#include "killswitch.h"
#include "server-t.h"
#include "sluice_int.h"
#include "store.h"
#include "worker-t.h"
#include "worker.h"
#include "xalloc.h"

/* A result edited before it is handed on (a kill switch's), valid for the
 * duration of the protocol's callback. */
static _Thread_local struct sl_result edited;

static int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SL_NS_PER_S + ts.tv_nsec;
}

/*
 * Key inspection answers what a request of cost 1 would get now, so that a
 * blocked client reads "deny" (the peek it is made of costs nothing, and
 * nothing is ever denied). From the peek's state, the same for every store:
 * a limit with nothing remaining would deny it ("remaining" counts the
 * requests of cost 1 that would pass), and waiting until the limit is
 * whole again (its reset) is sure to be enough, so that is its retry (the
 * exact wait for a fixed window, an upper bound for the others). A shadow
 * limit would only have denied. Nothing is consumed: the state is the
 * peek's. A delay a shaping limit would impose is not foreseen (allow).
 */
static const struct sl_result *as_cost_one(const struct sl_result *res, struct sl_result *out)
{
    *out = *res;
    for (size_t i = 0; i < out->n_statuses && i < SL_MAX_DESCRIPTORS; i++) {
        struct sl_status *st = &out->statuses[i];
        if (st->limit == NULL || st->d.verdict == SL_DENY || st->d.remaining >= 1)
            continue;
        if (st->limit->shadow) {
            st->shadow_denied = true;
            continue;
        }
        st->d.verdict = SL_DENY;
        st->d.retry_after_ns = st->d.reset_ns;
    }
    out->verdict = SL_ALLOW;
    out->delay_ns = 0;
    for (size_t i = 0; i < out->n_statuses && i < SL_MAX_DESCRIPTORS; i++)
        if (out->statuses[i].limit != NULL && out->statuses[i].d.verdict == SL_DENY)
            out->verdict = SL_DENY;
    return out;
}

/* The store's callback: kill switch "shadow", metrics, then the protocol.
 * The labels are taken first: the protocol's callback may end the op. */
static void on_store(void *arg, int err, const struct sl_result *res, enum sl__store_by by)
{
    struct sl__decide_op *op = arg;
    struct sl__decide_labels *labels = op->labels;
    struct sl__metrics *m = op->w->srv->metrics;

    op->labels = NULL;
    if (err == SL_OK && op->kind == SL__DECIDE_INSPECT)
        res = as_cost_one(res, &edited);
    op->by = (uint8_t)by;
    if (err == SL_OK && op->shadow)
        res = sl__ks_unenforce(res, &edited);
    if (err == SL_OK && op->counted && m != NULL) {
        sl__metrics_result(m, op->w->id, (struct sl_str){op->domain, op->domain_len}, res,
                           labels != NULL ? labels->s : NULL);
        sl__metrics_latency(m, op->w->id, mono_ns() - op->start_ns);
    }
    op->done(op, err, res);
    free(labels);
}

const char *sl__decide_policy(const struct sl__decide_op *op)
{
    static const char *const names[] = {[SL__BY_STATE] = NULL,
                                        [SL__BY_ALLOW] = "allow",
                                        [SL__BY_DENY] = "deny",
                                        [SL__BY_LOCAL] = "local"};

    return op->by < sizeof(names) / sizeof(names[0]) ? names[op->by] : NULL;
}

/* Append s[0..n) to the label l (capacity SL__METRIC_LABEL_MAX). */
static void label_put(struct sl_str *l, char *buf, const char *s, size_t n)
{
    size_t room = SL__METRIC_LABEL_MAX - l->len;

    memcpy(buf + l->len, s, n < room ? n : room);
    l->len += n < room ? n : room;
    l->p = buf;
}

/* The detailed_metric labels of `req`, or NULL when no descriptor's rule
 * has detailed_metric (one extra rules match per descriptor). The values
 * come from the request: the metrics registry caps how many distinct
 * labels it keeps. */
static struct sl__decide_labels *detailed_labels(const sl_rules *rules,
                                                 const struct sl_request *req)
{
    struct sl__decide_labels *lb = NULL;
    struct sl_match m;

    for (size_t i = 0; i < req->n_descriptors; i++) {
        const struct sl_descriptor *d = &req->descriptors[i];
        if (sl_rules_match(rules, req, i, &m) != SL_OK || m.detailed_metric == NULL)
            continue;
        if (lb == NULL)
            lb = sl__xzalloc(sizeof(*lb));
        for (size_t e = 0; e < d->n_entries; e++) {
            if (e > 0)
                label_put(&lb->s[i], lb->bytes[i], ".", 1);
            label_put(&lb->s[i], lb->bytes[i], d->entries[e].key.p, d->entries[e].key.len);
            label_put(&lb->s[i], lb->bytes[i], "_", 1);
            label_put(&lb->s[i], lb->bytes[i], d->entries[e].value.p, d->entries[e].value.len);
        }
    }
    return lb;
}

static void begin(struct sl__worker *w, struct sl__decide_op *op, enum sl__decide_kind kind,
                  sl__decide_done done)
{
    op->w = w;
    op->done = done;
    op->kind = kind;
    op->counted = kind == SL__DECIDE_CHECK || kind == SL__DECIDE_ACQUIRE;
    op->shadow = false;
    op->by = SL__BY_STATE;
    op->labels = NULL;
    op->domain_len = 0;
    op->now_ns = sl__clock_now_ns();
    if (op->start_ns == 0)
        op->start_ns = mono_ns();
}

/* Kill switch "off": allowed, nothing decided, no limit reported. */
static void answer_off(struct sl__decide_op *op, const struct sl_request *req)
{
    memset(&edited, 0, sizeof(edited));
    edited.verdict = SL_ALLOW;
    edited.n_statuses = req->n_descriptors;
    if (op->w->srv->metrics != NULL)
        sl__metrics_killswitch_off(op->w->srv->metrics, op->w->id);
    on_store(op, SL_OK, &edited, SL__BY_STATE);
}

typedef int (*start_fn)(struct sl__store *, const struct sl__store_req *, sl__store_cb, void *);

static start_fn start_for(const struct sl__store *s, enum sl__decide_kind kind)
{
    switch (kind) {
    case SL__DECIDE_PEEK:
    case SL__DECIDE_INSPECT:
        return s->ops->peek;
    case SL__DECIDE_RESET:
        return s->ops->reset;
    default:
        return s->ops->check;
    }
}

void sl__decide(struct sl__worker *w, struct sl__decide_op *op, enum sl__decide_kind kind,
                struct sl_request *req, sl__decide_done done)
{
    const sl_rules *rules = sl__worker_rules(w);
    struct sl__metrics *m = w->srv->metrics;
    struct sl__store_req q = {req, rules, NULL, 0};
    int r;

    begin(w, op, kind, done);
    req->now_ns = op->now_ns;
    op->domain_len =
        (uint16_t)(req->domain.len < sizeof(op->domain) ? req->domain.len : sizeof(op->domain));
    memcpy(op->domain, req->domain.p, op->domain_len);
    if (kind == SL__DECIDE_CHECK || kind == SL__DECIDE_ACQUIRE || kind == SL__DECIDE_PEEK) {
        enum sl__ks_mode mode = sl__ks_mode(&w->srv->ks, req->domain);
        if (mode == SL__KS_OFF) {
            answer_off(op, req);
            return;
        }
        op->shadow = mode == SL__KS_SHADOW;
    }
    if (op->counted && m != NULL && !sl_rules_has_domain(rules, req->domain))
        sl__metrics_unknown_domain(m, w->id);
    if (op->counted && sl__rules_domain_detailed(rules, req->domain))
        op->labels = detailed_labels(rules, req);
    r = start_for(w->store, kind)(w->store, &q, on_store, op);
    if (r != SL_OK)
        on_store(op, r, NULL, SL__BY_STATE);
}

void sl__decide_matched(struct sl__worker *w, struct sl__decide_op *op, struct sl_request *req,
                        const struct sl_match *m, size_t n, sl__decide_done done)
{
    struct sl__store_req q = {req, NULL, m, n};
    int r;

    begin(w, op, SL__DECIDE_CHECK, done);
    op->counted = false; /* no domain to count it under */
    req->now_ns = op->now_ns;
    r = w->store->ops->check(w->store, &q, on_store, op);
    if (r != SL_OK)
        on_store(op, r, NULL, SL__BY_STATE);
}

void sl__decide_release(struct sl__worker *w, struct sl__decide_op *op, const char *lease,
                        size_t len, sl__decide_done done)
{
    int r;

    begin(w, op, SL__DECIDE_RELEASE, done);
    r = w->store->ops->release(w->store, lease, len, op->now_ns, on_store, op);
    if (r != SL_OK)
        on_store(op, SL_EINVAL, NULL, SL__BY_STATE);
}

#define SL__STR_(x) #x
#define SL__STR(x)  SL__STR_(x)

static const char caps_message[] =
    "request above a cap: at most " SL__STR(SL_MAX_DESCRIPTORS) " descriptors of at most " SL__STR(
        SL_MAX_ENTRIES) " entries, each descriptor's domain, keys and values under 1 KiB";

const char *sl__decide_strerror(int err)
{
    switch (err) {
    case SL_ETOOBIG:
        return caps_message;
    case SL_EFULL:
        return "the state table is full and configured to refuse new keys; retry later";
    case SL_ERANGE:
        return "a number is out of range for the store (a cost of 2^31 or more with the Redis "
               "store)";
    default:
        return sl_strerror(err);
    }
}
