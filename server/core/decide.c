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
#include "stats.h"
#include "store.h"
#include "worker-t.h"
#include "worker.h"
#include "xalloc.h"

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

static int64_t answered_ns(struct sl__worker *w);

/* An answer made inside the call outlives the store's frame that made it
 * (the memory store's result is on its stack): copied into the worker's
 * `answer`, the part in use only (the statuses of the request's
 * descriptors, the lease's text), so a one-descriptor answer costs about a
 * hundred bytes. Valid until the next decision on the worker. */
static const struct sl_result *keep_result(struct sl__worker *w, const struct sl_result *res)
{
    struct sl_result *a = &w->answer;
    size_t n = res->n_statuses < SL_MAX_DESCRIPTORS ? res->n_statuses : SL_MAX_DESCRIPTORS;

    if (res == a)
        return a;
    a->verdict = res->verdict;
    a->delay_ns = res->delay_ns;
    a->n_statuses = res->n_statuses;
    memcpy(a->statuses, res->statuses, n * sizeof(res->statuses[0]));
    size_t lease = strnlen(res->lease, sizeof(res->lease) - 1);
    memcpy(a->lease, res->lease, lease);
    a->lease[lease] = '\0';
    return a;
}

/* The store's callback: kill switch "shadow", metrics and statistics, then
 * the protocol. The labels are taken first: the protocol's callback may
 * end the op. */
static void on_store(void *arg, int err, const struct sl_result *res, enum sl__store_by by)
{
    struct sl__decide_op *op = arg;
    struct sl__decide_labels *labels = op->labels;
    struct sl__metrics *m = op->w->srv->metrics;
    struct sl__stats *st = op->w->srv->stats;
    int64_t mono = 0;

    op->labels = NULL;
    if (err == SL_OK && op->kind == SL__DECIDE_INSPECT)
        res = as_cost_one(res, &op->w->edited);
    op->by = (uint8_t)by;
    if (err == SL_OK && op->shadow)
        res = sl__ks_unenforce(res, &op->w->edited);
    if (op->counted && (m != NULL || st != NULL))
        mono = answered_ns(op->w);
    if (err == SL_OK && op->counted && m != NULL) {
        sl__metrics_result(m, op->w->id, (struct sl_str){op->domain, op->domain_len}, res,
                           labels != NULL ? labels->s : NULL);
        sl__metrics_latency(m, op->w->id, mono - op->start_ns);
    }
    if (op->counted && st != NULL)
        sl__stats_decision(st, &(struct sl__stats_answer){.worker = op->w->id,
                                                          .domain = op->domain,
                                                          .domain_len = op->domain_len,
                                                          .op = &op->stats,
                                                          .err = err,
                                                          .res = res,
                                                          .now_ns = op->now_ns,
                                                          .mono_ns = mono});
    if (op->now != NULL) { /* inside the call that started it: returned */
        op->now->err = err;
        op->now->res = res != NULL ? keep_result(op->w, res) : NULL;
        op->answered = true;
    } else {
        op->done(op, err, res);
    }
    if (labels != NULL) /* rare (detailed domains): no call into free per decision */
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

/* ------------------------------------------------------------ batches */

/* Bytes of a queued request's domain, keys and values copied with it. */
#define PENDING_BYTES 1024u

/* One check queued in a batch, with a copy of what it borrowed. */
struct pending {
    struct sl__decide_op *op;
    const sl_rules *rules; /* NULL: decided against m */
    struct sl_request req;
    struct sl_descriptor d;
    struct sl_entry e[SL_MAX_ENTRIES];
    struct sl_limit limit; /* the descriptor's own limit, if it brought one */
    struct sl_match m;
    size_t nm;
    char bytes[PENDING_BYTES];
};

struct sl__decide_batch {
    unsigned depth;  /* open begin() calls */
    bool flushing;   /* deciding what is queued: nothing more is queued */
    bool have_time;  /* now_ns/mono_ns taken for this batch */
    int64_t now_ns;  /* the batch's decision time */
    int64_t mono_ns; /* and its arrival time for the latency histogram */
    int64_t done_ns; /* the flush's answer time (0: not read yet) */
    size_t n;
    struct pending p[SL__DECIDE_BATCH_MAX];
};

static void begin(struct sl__worker *w, struct sl__decide_op *op, enum sl__decide_kind kind,
                  sl__decide_done done, struct sl__decided *now)
{
    struct sl__decide_batch *b = w->batch;

    op->w = w;
    op->done = done;
    op->now = now;
    op->answered = false;
    op->kind = kind;
    op->counted = kind == SL__DECIDE_CHECK || kind == SL__DECIDE_ACQUIRE;
    op->shadow = false;
    op->by = SL__BY_STATE;
    op->labels = NULL;
    op->domain_len = 0;
    op->stats.req = NULL;
    op->stats.rules = NULL;
    op->stats.store_ns = 0;
    op->stats.ring_len = 0;
    if (b != NULL && b->depth > 0) {
        /* one read, one time: two clock reads per batch, not per decision */
        if (!b->have_time) {
            b->now_ns = sl__clock_now_ns();
            b->mono_ns = mono_ns();
            b->have_time = true;
        }
        op->now_ns = b->now_ns;
        if (op->start_ns == 0)
            op->start_ns = b->mono_ns;
        return;
    }
    op->now_ns = sl__clock_now_ns();
    if (op->start_ns == 0)
        op->start_ns = mono_ns();
}

/* Kill switch "off": allowed, nothing decided, no limit reported. */
static void answer_off(struct sl__decide_op *op, const struct sl_request *req)
{
    struct sl_result *off = &op->w->edited;

    memset(off, 0, sizeof(*off));
    off->verdict = SL_ALLOW;
    off->n_statuses = req->n_descriptors;
    if (op->w->srv->metrics != NULL)
        sl__metrics_killswitch_off(op->w->srv->metrics, op->w->id);
    on_store(op, SL_OK, off, SL__BY_STATE);
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

/* The end of every sl__decide* call: whether it was answered inside (in
 * *op->now), and from here on any answer goes to `done`. */
static bool end(struct sl__decide_op *op)
{
    op->now = NULL;
    return op->answered;
}

/* Start a decision the statistics count. The key texts are read from the
 * request while it lives: in on_store when the store answers inside its
 * start call (the memory store: no copy), else copied into the op before
 * this returns (a remote store answers after the request is gone). */
static void start_counted(struct sl__worker *w, struct sl__decide_op *op, start_fn start,
                          const struct sl__store_req *q)
{
    int r;

    sl__stats_op_begin(&op->stats, q->req, q->rules);
    op->stats.store_ns = mono_ns();
    r = start(w->store, q, on_store, op);
    if (r != SL_OK) {
        op->stats.store_ns = 0; /* no round trip */
        on_store(op, r, NULL, SL__BY_STATE);
        return;
    }
    if (!op->answered)
        sl__stats_op_keep(w->srv->stats, w->id, &op->stats);
}

void sl__decide_batch_begin(struct sl__worker *w)
{
    if (w->batch == NULL) /* once per worker */
        w->batch = sl__xzalloc(sizeof(*w->batch));
    w->batch->depth++;
}

void sl__decide_flush(struct sl__worker *w)
{
    struct sl__decide_batch *b = w->batch;
    struct sl__store_req q[SL__DECIDE_BATCH_MAX];
    void *args[SL__DECIDE_BATCH_MAX];
    size_t n;

    if (b == NULL)
        return;
    b->have_time = false; /* what comes next may see another clock */
    if (b->n == 0 || b->flushing)
        return;
    n = b->n;
    for (size_t i = 0; i < n; i++) {
        struct pending *p = &b->p[i];
        q[i] = (struct sl__store_req){&p->req, p->rules, p->nm > 0 ? &p->m : NULL, p->nm};
        args[i] = p->op;
    }
    if (w->srv->metrics != NULL)
        sl__metrics_batch(w->srv->metrics, w->id, n);
    /* The callbacks may start decisions of their own: those go alone. */
    b->flushing = true;
    b->done_ns = 0;
    w->store->ops->check_batch(w->store, q, n, on_store, args);
    b->flushing = false;
    b->n = 0;
}

/* When a decision was answered, for the latency histogram and the
 * statistics: the clock once per flush (its decisions are answered
 * together, within microseconds of each other, so a reading each cost more
 * than it told), else now. */
static int64_t answered_ns(struct sl__worker *w)
{
    struct sl__decide_batch *b = w->batch;

    if (b == NULL || !b->flushing)
        return mono_ns();
    if (b->done_ns == 0)
        b->done_ns = mono_ns();
    return b->done_ns;
}

void sl__decide_batch_end(struct sl__worker *w)
{
    struct sl__decide_batch *b = w->batch;

    if (b == NULL || b->depth == 0)
        return;
    if (--b->depth == 0)
        sl__decide_flush(w);
}

void sl__decide_batch_free(struct sl__worker *w)
{
    free(w->batch);
    w->batch = NULL;
}

/* Copy s into p's bytes; false when they are full. */
static bool keep(struct pending *p, size_t *used, struct sl_str *s)
{
    if (s->len > PENDING_BYTES - *used)
        return false;
    if (s->len > 0)
        memcpy(p->bytes + *used, s->p, s->len);
    s->p = p->bytes + *used;
    *used += s->len;
    return true;
}

/* Is a batch open that can take this check? Flushes a full one. Anything
 * that cannot be queued decides what is queued first (order). */
static struct sl__decide_batch *batch_for(struct sl__worker *w, bool queueable)
{
    struct sl__decide_batch *b = w->batch;

    if (b == NULL || b->depth == 0 || b->flushing)
        return NULL;
    if (!queueable || w->store->ops->check_batch == NULL) {
        sl__decide_flush(w);
        b->have_time = true; /* the flush forgot it; nothing changed the clock */
        return NULL;
    }
    if (b->n == SL__DECIDE_BATCH_MAX) {
        sl__decide_flush(w);
        b->have_time = true;
    }
    return b;
}

/* Queue a rules check of at most one descriptor; false (nothing queued)
 * when its bytes do not fit a pending slot. */
static bool enqueue_rules(struct sl__decide_batch *b, struct sl__decide_op *op,
                          const sl_rules *rules, const struct sl_request *req)
{
    struct pending *p = &b->p[b->n];
    size_t used = 0;

    p->req = *req;
    if (!keep(p, &used, &p->req.domain))
        return false;
    if (req->n_descriptors == 1) {
        p->d = req->descriptors[0];
        if (p->d.n_entries > SL_MAX_ENTRIES)
            return false;
        for (size_t i = 0; i < p->d.n_entries; i++) {
            p->e[i] = p->d.entries[i];
            if (!keep(p, &used, &p->e[i].key) || !keep(p, &used, &p->e[i].value))
                return false;
        }
        p->d.entries = p->e;
        if (p->d.limit != NULL) {
            p->limit = *p->d.limit;
            p->d.limit = &p->limit;
        }
        p->req.descriptors = &p->d;
    } else {
        p->req.descriptors = NULL;
    }
    p->op = op;
    p->rules = rules;
    p->nm = 0;
    b->n++;
    return true;
}

/* Queue a check against one resolved match (its key copied). */
static void enqueue_matched(struct sl__decide_batch *b, struct sl__decide_op *op,
                            const struct sl_request *req, const struct sl_match *m)
{
    struct pending *p = &b->p[b->n];

    p->req = *req;
    if (req->n_descriptors == 1) {
        p->d = req->descriptors[0];
        p->req.descriptors = &p->d;
    } else {
        p->req.descriptors = NULL;
    }
    memcpy(p->m.limits, m->limits, sizeof(m->limits));
    p->m.n_limits = m->n_limits;
    memcpy(p->m.key, m->key, m->key_len);
    p->m.key_len = m->key_len;
    p->m.unlimited = m->unlimited;
    p->m.detailed_metric = m->detailed_metric;
    p->op = op;
    p->rules = NULL;
    p->nm = 1;
    b->n++;
}

bool sl__decide(struct sl__worker *w, struct sl__decide_op *op, enum sl__decide_kind kind,
                struct sl_request *req, sl__decide_done done, struct sl__decided *now)
{
    const sl_rules *rules = sl__worker_rules(w);
    struct sl__metrics *m = w->srv->metrics;
    struct sl__store_req q = {req, rules, NULL, 0};
    struct sl__decide_batch *b;
    int r;

    begin(w, op, kind, done, now);
    req->now_ns = op->now_ns;
    op->domain_len =
        (uint16_t)(req->domain.len < sizeof(op->domain) ? req->domain.len : sizeof(op->domain));
    memcpy(op->domain, req->domain.p, op->domain_len);
    if (kind == SL__DECIDE_CHECK || kind == SL__DECIDE_ACQUIRE || kind == SL__DECIDE_PEEK) {
        enum sl__ks_mode mode = sl__ks_mode(&w->srv->ks, req->domain);
        if (mode == SL__KS_OFF) {
            answer_off(op, req);
            return end(op);
        }
        op->shadow = mode == SL__KS_SHADOW;
    }
    if (op->counted && m != NULL && !sl_rules_has_domain(rules, req->domain))
        sl__metrics_unknown_domain(m, w->id);
    if (op->counted && sl__rules_domain_detailed(rules, req->domain))
        op->labels = detailed_labels(rules, req);
    b = batch_for(w, kind == SL__DECIDE_CHECK && req->n_descriptors <= 1);
    if (b != NULL && enqueue_rules(b, op, rules, req)) {
        if (op->counted && w->srv->stats != NULL) {
            /* answered at the flush, after the request is gone: the
             * statistics keep its key texts now */
            sl__stats_op_begin(&op->stats, req, rules);
            op->stats.store_ns = b->have_time ? b->mono_ns : mono_ns(); /* queued now */
            sl__stats_op_keep(w->srv->stats, w->id, &op->stats);
        }
        return end(op);
    }
    if (b != NULL) /* too large to queue: what is queued goes first */
        sl__decide_flush(w);
    if (op->counted && w->srv->stats != NULL) {
        start_counted(w, op, start_for(w->store, kind), &q);
        return end(op);
    }
    r = start_for(w->store, kind)(w->store, &q, on_store, op);
    if (r != SL_OK)
        on_store(op, r, NULL, SL__BY_STATE);
    return end(op);
}

bool sl__decide_matched(struct sl__worker *w, struct sl__decide_op *op, struct sl_request *req,
                        const struct sl_match *m, size_t n, sl__decide_done done,
                        struct sl__decided *now)
{
    struct sl__store_req q = {req, NULL, m, n};
    struct sl__decide_batch *b;
    int r;

    begin(w, op, SL__DECIDE_CHECK, done, now);
    op->counted = false; /* no domain to count it under */
    req->now_ns = op->now_ns;
    /* queued with its one match and at most one descriptor, which may
     * carry a cost of its own but no entries to copy */
    b = batch_for(w, n == 1 && m->key_len <= SL_KEY_MAX &&
                         (req->n_descriptors == 0 ||
                          (req->n_descriptors == 1 && req->descriptors[0].n_entries == 0 &&
                           req->descriptors[0].limit == NULL)));
    if (b != NULL) {
        enqueue_matched(b, op, req, m);
        return end(op);
    }
    r = w->store->ops->check(w->store, &q, on_store, op);
    if (r != SL_OK)
        on_store(op, r, NULL, SL__BY_STATE);
    return end(op);
}

bool sl__decide_matched_reset(struct sl__worker *w, struct sl__decide_op *op,
                              struct sl_request *req, const struct sl_match *m, size_t n,
                              sl__decide_done done, struct sl__decided *now)
{
    struct sl__store_req q = {req, NULL, m, n};
    int r;

    begin(w, op, SL__DECIDE_RESET, done, now);
    req->now_ns = op->now_ns;
    (void)batch_for(w, false); /* the checks queued before it go first */
    r = w->store->ops->reset(w->store, &q, on_store, op);
    if (r != SL_OK)
        on_store(op, r, NULL, SL__BY_STATE);
    return end(op);
}

bool sl__decide_release(struct sl__worker *w, struct sl__decide_op *op, const char *lease,
                        size_t len, sl__decide_done done, struct sl__decided *now)
{
    return sl__decide_release_latency(w, op, lease, len, -1, done, now);
}

bool sl__decide_release_latency(struct sl__worker *w, struct sl__decide_op *op, const char *lease,
                                size_t len, int64_t latency_ns, sl__decide_done done,
                                struct sl__decided *now)
{
    int r;

    begin(w, op, SL__DECIDE_RELEASE, done, now);
    (void)batch_for(w, false); /* leases taken by queued checks first */
    r = w->store->ops->release(
        w->store, &(struct sl__store_lease){lease, len, op->now_ns, latency_ns}, on_store, op);
    if (r != SL_OK)
        on_store(op, SL_EINVAL, NULL, SL__BY_STATE);
    return end(op);
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

bool sl__decide_denies_unmatched(const sl_rules *rules, struct sl_str domain)
{
    return sl__rules_domain_denies_unmatched(rules, domain);
}

bool sl__decide_limit_denies_all(const struct sl_limit *l)
{
    return sl__rules_limit_denies_all(l);
}

bool sl__decide_limit_is_rate(const struct sl_limit *l)
{
    return sl__limit_is_rate(l);
}

int sl__decide_match_unordered(const sl_rules *rules, struct sl_str domain,
                               const struct sl_entry *e, size_t n, struct sl_match *out)
{
    return sl__rules_match_unordered(rules, domain, e, n, out);
}
