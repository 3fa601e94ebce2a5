/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_gate.c - the gate of the proxy's traffic path (proxy_gate.h).
 *
 * A request whose route has rate_limits gets its descriptors (proxy_descr.c)
 * from its client's address (proxy_addr.c) and head, and is decided as an
 * acquire on the one decision path (server/core/decide.h), which applies
 * the kill switches and shadow mode, calls the store and counts the
 * metrics. What comes back is acted on here:
 *  - allowed: forwarded, the rate-limit headers kept for the response;
 *  - denied: answered with deny_status (proxy_deny.c);
 *  - delayed: held until its own delay is over, then forwarded; other
 *    keys' requests held on the same route never make it wait longer
 *    (nginx's limit_req delay does the same), while the requests of one
 *    key (the same route and descriptors) leave in the order they were
 *    queued; a delay above max_delay, or a route already holding
 *    max_queue requests, is a denial instead;
 *  - a store error: 503 (table full), 431 (a descriptor over the caps) or
 *    500; a remote store that cannot answer in time answers by its
 *    domain's failure policy itself, so nothing waits longer than that.
 * A concurrency lease in the result is given back (sl__decide_release)
 * when the exchange ends, whichever way: response handed to the client,
 * local answer, client or upstream gone.
 *
 * Per request the gate keeps a state from a per-worker pool (no
 * allocation once warm). A state outlives its exchange while the store
 * has not answered (the decision path holds its op): the late answer then
 * only gives back the lease it carries. The held requests of a worker are
 * one min-heap of release times (intrusive: a state knows its place;
 * grown, never shrunk), served by one timer. The gate never blocks the loop and never reads the
 * clock but the loop's (the decision's time is the decision path's). It acts on no exchange: a
 * verdict reached later (the store's answer, a queue's departure) and a store call answered are
 * reported to the state machine (pw->ev, proxy-t.h), which forwards, answers or ends the exchange.
 *
 * A route's adaptive concurrency limit (proxy_adaptive.c) is the gate's
 * too: the class is read with the head, the request admitted or shed
 * when the state machine is about to forward it, and its slot given back
 * with the exchange's end.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "decide.h"
#include "headers.h"
#include "log.h"
#include "proxy_adaptive.h"
#include "proxy_deny.h"
#include "proxy_descr.h"
#include "proxy_gate.h"
#include "proxy_int.h"
#include "verdict_edit.h"
#include "worker-t.h"
#include "xalloc.h"

#define HDRS_MAX 1024 /* rate-limit headers kept for an allowed response */

enum gstate {
    G_DECIDING,  /* the decision path has the op */
    G_QUEUED,    /* held in its route's queue */
    G_ADMITTED,  /* forwarded (or answered): waiting for the exchange's end */
    G_RELEASING, /* giving its lease back */
};

struct sl__proxy_greq {
    struct sl__decide_op op; /* first: the decision path's part */
    struct sl__worker *w;
    struct sl__proxy_worker *pw;
    struct sl__proxy_x *x; /* NULL once its exchange has ended */
    enum gstate state;
    enum sl__proxy_verdict verdict; /* what the decision came to */
    int64_t delay_ms;               /* HOLD: the delay decided */
    int64_t due_ms;                 /* queued: loop time to leave */
    uint64_t seq;                   /* queued: the order it was queued in */
    uint64_t key;                   /* a hash of its route and descriptors */
    size_t heap_i;                  /* queued: its place in the worker's heap */
    unsigned route_i;
    struct sl__proxy_greq *next; /* the free list */
    char hdrs[HDRS_MAX];         /* for an allowed response */
    char lease[SL_LEASE_MAX];    /* "" none */
};

struct sl__proxy_gscratch {
    struct sl__proxy_descr descr;
    struct sl_result edited;      /* a delay turned into a denial */
    struct sl__buf answer;        /* a local answer's headers and body */
    struct sl__proxy_local local; /* that answer, pointing into `answer` */
};

static void on_decided(struct sl__decide_op *op, int err, const struct sl_result *res);

/* ------------------------------------------------------------ the pool */

static struct sl__proxy_greq *take(struct sl__proxy_worker *pw)
{
    struct sl__proxy_greq *g = pw->gate.free;

    if (g != NULL)
        pw->gate.free = g->next;
    else
        g = sl__xzalloc(sizeof(*g));
    g->pw = pw;
    g->next = NULL;
    g->lease[0] = '\0';
    return g;
}

static void put(struct sl__proxy_greq *g)
{
    struct sl__proxy_worker *pw = g->pw;

    g->x = NULL;
    g->next = pw->gate.free;
    pw->gate.free = g;
}

/* ------------------------------------------------------------ ending */

static void on_released(struct sl__decide_op *op, int err, const struct sl_result *res)
{
    struct sl__proxy_greq *g = (struct sl__proxy_greq *)(void *)op;
    struct sl__proxy_worker *pw = g->pw;

    (void)res;
    if (err != SL_OK && err != SL_ENOENT)
        sl__dbg("proxy.lease_release_failed", "proxy: a concurrency lease was not given back: %s",
                sl_strerror(err));
    pw->gate.n_busy--;
    put(g);
    pw->ev->store_answered(pw);
}

/* The exchange is over: give the lease back, then the state. */
static void finish(struct sl__proxy_greq *g)
{
    struct sl__decided now;

    if (g->lease[0] == '\0') {
        put(g);
        return;
    }
    g->state = G_RELEASING;
    g->pw->gate.n_busy++;
    memset(&g->op, 0, sizeof(g->op));
    if (sl__decide_release(g->w, &g->op, g->lease, strlen(g->lease), on_released, &now))
        on_released(&g->op, now.err, now.res);
}

/* ------------------------------------------------------------ held requests */

static void on_due(uv_timer_t *t);

static bool before(const struct sl__proxy_greq *a, const struct sl__proxy_greq *b)
{
    return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->seq < b->seq);
}

static void heap_set(struct sl__proxy_greq **h, size_t i, struct sl__proxy_greq *g)
{
    h[i] = g;
    g->heap_i = i;
}

static void sift_up(struct sl__proxy_greq **h, size_t i)
{
    struct sl__proxy_greq *g = h[i];

    while (i > 0 && before(g, h[(i - 1) / 2])) {
        heap_set(h, i, h[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(h, i, g);
}

static void sift_down(struct sl__proxy_greq **h, size_t n, size_t i)
{
    struct sl__proxy_greq *g = h[i];

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(h[c + 1], h[c]))
            c++;
        if (!before(h[c], g))
            break;
        heap_set(h, i, h[c]);
        i = c;
    }
    heap_set(h, i, g);
}

/* Arm the timer for the earliest release. */
static void arm(struct sl__proxy_worker *pw)
{
    int64_t due, now = (int64_t)uv_now(pw->loop);

    if (pw->gate.n_queued == 0) {
        uv_timer_stop(&pw->gate.timer);
        return;
    }
    due = pw->gate.heap[0]->due_ms;
    uv_timer_start(&pw->gate.timer, on_due, due > now ? (uint64_t)(due - now) : 0, 0);
}

/* The slot remembering the last release given to g's key. */
static struct sl__proxy_keydue *keydue_of(const struct sl__proxy_greq *g)
{
    return &g->pw->gate.keydue[g->key & (SL__PROXY_KEYDUE_SLOTS - 1)];
}

static void enqueue(struct sl__proxy_greq *g)
{
    struct sl__proxy_worker *pw = g->pw;
    struct sl__proxy_gate_w *gw = &pw->gate;
    struct sl__proxy_keydue *kd = keydue_of(g);
    int64_t now;

    if (gw->n_queued == gw->heap_cap) {
        gw->heap_cap = gw->heap_cap ? 2 * gw->heap_cap : 64;
        gw->heap = sl__xrealloc(gw->heap, gw->heap_cap * sizeof(*gw->heap));
    }
    /* The loop's clock is cached and whole ms: brought up to date and one
     * ms added, the request never leaves before its delay is over. */
    uv_update_time(pw->loop);
    now = (int64_t)uv_now(pw->loop);
    g->due_ms = now + g->delay_ms + 1;
    /* Never before its own key's request queued before it (the limiter's
     * delays of one key grow with its queue; this only absorbs the
     * clocks' rounding). A slot another key took only forgets that. */
    if (kd->key == g->key && kd->due_ms > g->due_ms)
        g->due_ms = kd->due_ms;
    kd->key = g->key;
    kd->due_ms = g->due_ms;
    if (g->x != NULL)
        g->x->acc.delay_ms = g->due_ms - now - 1;
    g->state = G_QUEUED;
    g->seq = gw->seq++;
    gw->queues[g->route_i].n++;
    heap_set(gw->heap, gw->n_queued++, g);
    sift_up(gw->heap, g->heap_i);
    if (gw->heap[0] == g)
        arm(pw);
}

static void dequeue(struct sl__proxy_greq *g)
{
    struct sl__proxy_gate_w *gw = &g->pw->gate;
    size_t i = g->heap_i;
    struct sl__proxy_greq *last = gw->heap[--gw->n_queued];

    if (last != g) {
        heap_set(gw->heap, i, last);
        sift_up(gw->heap, i);
        sift_down(gw->heap, gw->n_queued, last->heap_i);
    }
    gw->queues[g->route_i].n--;
    g->state = G_ADMITTED;
}

static void on_due(uv_timer_t *t)
{
    struct sl__proxy_worker *pw = t->data;
    int64_t now = (int64_t)uv_now(pw->loop);
    struct sl__proxy_greq *g;

    while (pw->gate.n_queued > 0 && (g = pw->gate.heap[0])->due_ms <= now) {
        struct sl__proxy_x *x = g->x;
        dequeue(g);
        pw->ev->verdict(x, SL__PROXY_FORWARD, NULL); /* or the client is gone */
    }
    arm(pw);
}

/* FNV-1a over a request's route, domain and descriptors: which key's
 * requests must keep their order. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL; /* a separator: ("ab","c") is not ("a","bc") */
}

static uint64_t key_of(unsigned route_i, const struct sl_request *req)
{
    uint64_t h = hash_bytes(14695981039346656037ULL, &route_i, sizeof(route_i));

    h = hash_bytes(h, req->domain.p, req->domain.len);
    for (size_t i = 0; i < req->n_descriptors; i++)
        for (size_t e = 0; e < req->descriptors[i].n_entries; e++) {
            const struct sl_entry *en = &req->descriptors[i].entries[e];
            h = hash_bytes(h, en->key.p, en->key.len);
            h = hash_bytes(h, en->value.p, en->value.len);
        }
    return h;
}

/* ------------------------------------------------------------ judging */

static const struct sl__proxy_limits *limits_of(const struct sl__proxy_greq *g)
{
    return &g->pw->cfg->routes[g->route_i].lim;
}

static bool shadow_denied(const struct sl_result *res)
{
    for (size_t i = 0; i < res->n_statuses; i++)
        if (res->statuses[i].shadow_denied)
            return true;
    return false;
}

/* An error of the store: the client is answered, never let through. */
static enum sl__proxy_verdict store_error(struct sl__proxy_gscratch *s, int err)
{
    static const struct {
        int err, status;
        const char *why;
    } errs[] = {
        {SL_EFULL, 503, "the limiter's state table is full; retry later"},
        {SL_ETOOBIG, 431, "a header used for rate limiting is too long"},
    };
    const char *why = "the rate limiter failed";
    int status = 500;
    char body[160];

    for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
        if (errs[i].err == err) {
            status = errs[i].status;
            why = errs[i].why;
        }
    s->answer.len = 0;
    sl__buf_append(&s->answer, body, sl__proxy_error_body(body, sizeof(body), why));
    s->local = (struct sl__proxy_local){
        .status = status, .type = "application/json", .body = {s->answer.p, s->answer.len}};
    return SL__PROXY_ANSWERED;
}

/* Keep the rate-limit headers of an admitted request for its response. */
static void keep_headers(struct sl__proxy_greq *g, const struct sl_result *res)
{
    unsigned fam = limits_of(g)->headers & (SL__HDR_IETF | SL__HDR_X);
    size_t len = 0;

    if (fam == 0 || sl__hdr_write(res, g->op.now_ns, fam, g->hdrs, sizeof(g->hdrs), &len) != SL_OK)
        len = 0;
    g->x->resp_hdrs = (struct sl_str){g->hdrs, len};
}

/* What the decision means for the request: the verdict, and for
 * ANSWERED the answer in the scratch. */
static enum sl__proxy_verdict judge(struct sl__proxy_greq *g, int err, const struct sl_result *res)
{
    const struct sl__proxy_limits *lim = limits_of(g);
    struct sl__proxy_gscratch *s = g->pw->gate.scratch;
    struct sl__proxy_x *x = g->x;

    if (err != SL_OK) {
        x->acc.decision = "error";
        return store_error(s, err);
    }
    if (res->lease[0] != '\0')
        memcpy(g->lease, res->lease, strlen(res->lease) + 1);
    if (res->verdict == SL_DELAY) {
        g->delay_ms = sl_ns_to_ms_ceil(res->delay_ns);
        /* Past max_delay or a full queue: a denial whose retry is the
         * delay (the limiter admitted and counted the request). */
        if (g->delay_ms > lim->max_delay_ms || g->pw->gate.queues[g->route_i].n >= lim->max_queue)
            res = sl__verdict_delay_as_denial(&s->edited, res);
    }
    if (res->verdict == SL_DENY) {
        x->acc.decision = "deny";
        sl__proxy_deny(lim, res, g->op.now_ns, &s->answer, &s->local);
        return SL__PROXY_ANSWERED;
    }
    keep_headers(g, res);
    if (res->verdict == SL_DELAY) {
        x->acc.decision = "delay";
        return SL__PROXY_HOLD;
    }
    x->acc.decision = shadow_denied(res) ? "shadow" : "allow";
    return SL__PROXY_FORWARD;
}

/* Act on the verdict for a request the gate holds (the store answered
 * after sl__proxy_gate returned; sl__proxy_gate returns the verdict it got
 * at once to its caller instead): a delay is queued here, anything else
 * (and a delay whose client has left) is the state machine's to carry out
 * (gate_done follows when the exchange ends). */
static void act(struct sl__proxy_greq *g)
{
    struct sl__proxy_x *x = g->x;

    if (g->verdict == SL__PROXY_HOLD && !sl__proxy_client_left(x)) {
        enqueue(g);
        return;
    }
    g->pw->ev->verdict(x, g->verdict,
                       g->verdict == SL__PROXY_ANSWERED ? &g->pw->gate.scratch->local : NULL);
}

/* The store's answer, after sl__proxy_gate returned (never inside it). */
static void on_decided(struct sl__decide_op *op, int err, const struct sl_result *res)
{
    struct sl__proxy_greq *g = (struct sl__proxy_greq *)(void *)op;
    struct sl__proxy_worker *pw = g->pw;

    pw->gate.n_busy--;
    if (g->x == NULL) { /* the exchange ended first: only give the lease back */
        if (err == SL_OK && res->lease[0] != '\0')
            memcpy(g->lease, res->lease, strlen(res->lease) + 1);
        finish(g);
        pw->ev->store_answered(pw);
        return;
    }
    g->verdict = judge(g, err, res);
    g->state = G_ADMITTED;
    act(g);
}

/* ------------------------------------------------------------ the gate */

static struct sl__proxy_ip client_of(const struct sl__proxy_x *x)
{
    const struct sl__proxy_config *pc = x->pw->cfg;
    struct sl__proxy_ip peer, client;

    if (!sl__proxy_ip_parse(x->acc.client, strlen(x->acc.client), &peer))
        return peer; /* family 0: remote_address actions drop their descriptors */
    sl__proxy_client_ip(&peer, &x->h, (enum sl__proxy_client_header)pc->client_header, pc->trusted,
                        pc->n_trusted, &client);
    return client;
}

enum sl__proxy_verdict sl__proxy_gate(struct sl__proxy_x *x, struct sl__proxy_local **answer)
{
    const struct sl__proxy_limits *lim = &x->route->lim;
    struct sl__proxy_worker *pw = x->pw;
    struct sl__proxy_ip client = {0};
    struct sl_request req = {.hits = 1};
    struct sl__decided now;
    struct sl__proxy_greq *g;
    enum sl__proxy_verdict v;

    sl__proxy_adaptive_classify(x); /* while the head is at hand; admitted at forwarding */
    if (lim->n_rls == 0)
        return SL__PROXY_FORWARD;
    if (pw->gate.scratch == NULL)
        pw->gate.scratch = sl__xzalloc(sizeof(*pw->gate.scratch));
    if (lim->uses_address)
        client = client_of(x);
    req.n_descriptors = sl__proxy_descr_build(lim, &x->h, &client, &pw->gate.scratch->descr);
    if (req.n_descriptors == 0)
        return SL__PROXY_FORWARD; /* nothing to decide (e.g. its headers are absent) */
    req.domain = (struct sl_str){lim->domain, strlen(lim->domain)};
    req.descriptors = pw->gate.scratch->descr.d;
    g = take(pw);
    g->w = x->c->w;
    g->x = x;
    g->route_i = x->route_i;
    g->key = key_of(x->route_i, &req);
    g->state = G_DECIDING;
    x->gate = g;
    pw->gate.n_busy++;
    memset(&g->op, 0, sizeof(g->op));
    if (!sl__decide(g->w, &g->op, SL__DECIDE_ACQUIRE, &req, on_decided, &now))
        return SL__PROXY_HOLD; /* the store answers later (on_decided acts) */
    pw->gate.n_busy--;
    v = g->verdict = judge(g, now.err, now.res);
    g->state = G_ADMITTED;
    if (v == SL__PROXY_ANSWERED)
        *answer = &pw->gate.scratch->local; /* the caller answers; gate_done follows */
    else if (v == SL__PROXY_HOLD)
        enqueue(g);
    return v;
}

bool sl__proxy_gate_admit(struct sl__proxy_x *x, struct sl__proxy_local **answer)
{
    return sl__proxy_adaptive_admit(x, answer);
}

void sl__proxy_gate_sent(struct sl__proxy_x *x)
{
    sl__proxy_adaptive_sent(x);
}

void sl__proxy_gate_head(struct sl__proxy_x *x, int status)
{
    sl__proxy_adaptive_head(x, status);
}

void sl__proxy_gate_done(struct sl__proxy_x *x)
{
    struct sl__proxy_greq *g = x->gate;

    sl__proxy_adaptive_done(x); /* its slot, with the outcome and latency */
    if (g == NULL)
        return;
    x->gate = NULL;
    x->resp_hdrs = (struct sl_str){NULL, 0};
    g->x = NULL;
    if (g->state == G_DECIDING)
        return; /* on_decided gives the lease back */
    if (g->state == G_QUEUED)
        dequeue(g);
    finish(g);
}

/* ------------------------------------------------------------ the worker */

void sl__proxy_gate_worker_init(struct sl__proxy_worker *pw)
{
    pw->gate.queues = sl__xzalloc((pw->cfg->n_routes + 1) * sizeof(*pw->gate.queues));
    pw->gate.keydue = sl__xzalloc(SL__PROXY_KEYDUE_SLOTS * sizeof(*pw->gate.keydue));
    uv_timer_init(pw->loop, &pw->gate.timer);
    pw->gate.timer.data = pw;
    sl__proxy_adaptive_worker_init(pw);
}

bool sl__proxy_gate_worker_busy(const struct sl__proxy_worker *pw)
{
    return pw->gate.n_busy > 0;
}

void sl__proxy_gate_worker_close(struct sl__proxy_worker *pw, uv_close_cb cb)
{
    pw->closing++;
    uv_close((uv_handle_t *)&pw->gate.timer, cb);
}

void sl__proxy_gate_worker_free(struct sl__proxy_worker *pw)
{
    struct sl__proxy_greq *g;

    while ((g = pw->gate.free) != NULL) {
        pw->gate.free = g->next;
        free(g);
    }
    if (pw->gate.scratch != NULL)
        sl__buf_free(&pw->gate.scratch->answer);
    free(pw->gate.scratch);
    free(pw->gate.queues);
    free(pw->gate.heap);
    free(pw->gate.keydue);
    sl__proxy_adaptive_worker_free(pw);
}
