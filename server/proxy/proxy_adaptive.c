/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_adaptive.c - adaptive concurrency limits in the proxy's traffic
 * path (proxy_adaptive.h, docs/proxy.md §Adaptive concurrency).
 *
 * Each worker keeps, for each route with adaptive_concurrency, one
 * controller (sl_adaptive, seeded by worker and route) and one partition
 * of its limit among the route's classes (sl_partition). The partition
 * decides admission against the controller's current limit: a class
 * within its guaranteed share is admitted even when the limit is reached,
 * so the total in flight may pass the limit by the shares borrowed, and
 * sl_adaptive_acquire() (which refuses at the limit) cannot be the gate.
 * In-flight requests are therefore counted by the partition, and the
 * controller learns of each ended request through sl_adaptive_on_sample()
 * with the in-flight count its admission saw: the controller's own
 * in-flight count stays 0 and its admitted/rejected counters unused; the
 * partition's per-class counters are what /metrics shows.
 *
 * Latency is the upstream's: from the request head handed to a ready
 * upstream connection (the last try's) to the final response head
 * parsed, on the monotonic clock (uv_hrtime). An ended request is a
 * success with that latency when a response head came with a status
 * below 500; a drop when the upstream answered 5xx or failed or timed out
 * (the 502 and 504 answered here); ignored when the client left before a
 * response head (or the request itself was at fault: 400, 408, 413).
 *
 * What a worker shows is published in its own block of the route's board
 * (proxy-t.h) with relaxed stores, one writer per block; a scrape on any
 * thread sums the blocks with relaxed loads, as server/core/metrics.c
 * does its per-worker blocks. Nothing here locks or allocates per request.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "conn.h"
#include "proxy.h"
#include "proxy_adaptive.h"
#include "proxy_deny.h"
#include "proxy_int.h"
#include "server-t.h"
#include "xalloc.h"

struct sl__proxy_aw {
    struct sl_adaptive a;
    struct sl_partition p;
    struct sl__proxy_apub *pub;
    int64_t sample_at_ns; /* when the latest sample was fed; 0 none */
};

struct sl__proxy_ascratch {
    char hdrs[64];
    char body[384];
    struct sl__proxy_local local;
};

static const struct sl__proxy_adaptive *ad_of(const struct sl__proxy_x *x)
{
    return x->route != NULL ? x->route->ad : NULL;
}

static int64_t now_ns(void)
{
    return (int64_t)uv_hrtime();
}

/* ------------------------------------------------------------ publishing */

static void put32(_Atomic uint32_t *p, uint32_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
}

static void put64(_Atomic int64_t *p, int64_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
}

static void putu64(_Atomic uint64_t *p, uint64_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
}

/* The worker's view of one route into its block; `cls` the class that
 * changed (every class when >= n). */
static void publish(struct sl__proxy_aw *aw, uint32_t cls)
{
    struct sl__proxy_apub *pub = aw->pub;
    struct sl_adaptive_stats st;

    if (pub == NULL)
        return;
    sl_adaptive_stats(&aw->a, &st);
    put32(&pub->limit, st.limit);
    put32(&pub->inflight, aw->p.inflight);
    put64(&pub->min_rtt_ns, st.min_rtt_ns);
    put64(&pub->sample_rtt_ns, st.sample_rtt_ns);
    put64(&pub->sample_at_ns, aw->sample_at_ns);
    for (uint32_t k = 0; k < aw->p.cfg.n; k++) {
        if (cls < aw->p.cfg.n && k != cls)
            continue;
        putu64(&pub->admitted[k], aw->p.cls[k].admitted);
        putu64(&pub->shed[k], aw->p.cls[k].shed);
        put32(&pub->cls_inflight[k], aw->p.cls[k].inflight);
    }
}

/* ------------------------------------------------------------ the worker */

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sl__proxy_adaptive_worker_init(struct sl__proxy_worker *pw)
{
    const struct sl__proxy_config *pc = pw->cfg;
    int64_t now = now_ns();

    if (pc->n_adaptive == 0)
        return;
    pw->ad = sl__xzalloc(pc->n_adaptive * sizeof(*pw->ad));
    pw->ad_sc = sl__xzalloc(sizeof(*pw->ad_sc));
    for (size_t r = 0; r < pc->n_routes; r++) {
        const struct sl__proxy_adaptive *ad = pc->routes[r].ad;
        struct sl__proxy_aw *aw;
        struct sl__proxy_apub *pub = NULL;
        if (ad == NULL)
            continue;
        aw = &pw->ad[ad->index];
        /* validated with the configuration: neither can fail */
        if (sl_adaptive_init(&aw->a, &ad->ac, now, mix(((uint64_t)pw->wid << 32) ^ r), NULL) !=
                SL_OK ||
            sl_partition_init(&aw->p, &ad->pc, NULL) != SL_OK)
            abort();
        if (pw->wid < SL__PROXY_MAX_WORKERS) {
            _Atomic(struct sl__proxy_apub *) *slot = &ad->board->w[pw->wid];
            pub = atomic_load_explicit(slot, memory_order_acquire);
            if (pub == NULL) { /* once per worker and route; the board frees it */
                pub = sl__xzalloc(sizeof(*pub));
                atomic_store_explicit(slot, pub, memory_order_release);
            }
        }
        aw->pub = pub;
        publish(aw, SL_PARTITION_MAX);
    }
}

void sl__proxy_adaptive_worker_free(struct sl__proxy_worker *pw)
{
    free(pw->ad);
    free(pw->ad_sc);
    pw->ad = NULL;
    pw->ad_sc = NULL;
}

void sl__proxy_adaptive_tick(struct sl__proxy_worker *pw)
{
    int64_t now = now_ns();

    for (size_t i = 0; i < pw->cfg->n_adaptive; i++) {
        sl_adaptive_tick(&pw->ad[i].a, now);
        publish(&pw->ad[i], SL_PARTITION_MAX);
    }
}

/* ------------------------------------------------------------ a request */

/* Is the direct peer one of proxy.trusted_proxies? */
static bool peer_trusted(const struct sl__proxy_x *x)
{
    const struct sl__proxy_config *pc = x->pw->cfg;
    struct sl__proxy_ip peer;

    return pc->n_trusted > 0 && sl__proxy_ip_parse(x->acc.client, strlen(x->acc.client), &peer) &&
           sl__proxy_cidr_has(pc->trusted, pc->n_trusted, &peer);
}

void sl__proxy_adaptive_classify(struct sl__proxy_x *x)
{
    const struct sl__proxy_adaptive *ad = ad_of(x);
    const struct sl__proxy_head *h = &x->h;

    if (ad == NULL)
        return;
    x->ad_cls = ad->pc.n - 1; /* the least critical, unless told otherwise */
    if (ad->class_from == SL__PCF_ROUTE) {
        x->ad_cls = ad->route_class;
        return;
    }
    if (ad->class_from != SL__PCF_HEADER || !peer_trusted(x))
        return; /* anyone may write the header: believed from trusted proxies only */
    for (unsigned i = 0; i < h->n_hdrs; i++) {
        struct sl_str v = h->hdrs[i].value;
        if (!sl__proxy_ieq(h->hdrs[i].name, ad->class_header))
            continue;
        for (uint32_t k = 0; k < ad->pc.n; k++)
            if (strlen(ad->classes[k]) == v.len && strncasecmp(ad->classes[k], v.p, v.len) == 0) {
                x->ad_cls = k;
                return;
            }
        return; /* the first such header decides; a name of no class is the least critical */
    }
}

/* The answer to a shed request: status, Retry-After, a problem+json body. */
static struct sl__proxy_local *shed_answer(struct sl__proxy_worker *pw,
                                           const struct sl__proxy_adaptive *ad)
{
    struct sl__proxy_ascratch *sc = pw->ad_sc;
    int64_t secs = (ad->retry_after_ms + 999) / 1000;
    char wait[48];
    int hn, bn;

    if (secs < 1)
        secs = 1;
    sl__proxy_wait_text(secs * SL_NS_PER_S, wait, sizeof(wait));
    hn = snprintf(sc->hdrs, sizeof(sc->hdrs), "Retry-After: %" PRId64 "\r\n", secs);
    bn = snprintf(sc->body, sizeof(sc->body),
                  "{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%u,\"detail\":\"Too many "
                  "requests in flight to this service. Wait %s and try again.\"}\n",
                  sl__proxy_reason((int)ad->status), ad->status, wait);
    sc->local = (struct sl__proxy_local){
        .status = (int)ad->status,
        .type = "application/problem+json",
        .headers = {sc->hdrs, hn > 0 && (size_t)hn < sizeof(sc->hdrs) ? (size_t)hn : 0},
        .body = {sc->body, bn > 0 && (size_t)bn < sizeof(sc->body) ? (size_t)bn : 0},
    };
    return &sc->local;
}

bool sl__proxy_adaptive_admit(struct sl__proxy_x *x, struct sl__proxy_local **answer)
{
    const struct sl__proxy_adaptive *ad = ad_of(x);
    struct sl__proxy_aw *aw;
    int64_t now;

    if (ad == NULL || x->ad_held)
        return true;
    aw = &x->pw->ad[ad->index];
    now = now_ns();
    sl_adaptive_tick(&aw->a, now);
    if (!sl_partition_try_acquire(&aw->p, x->ad_cls, sl_adaptive_limit(&aw->a))) {
        publish(aw, x->ad_cls);
        x->acc.decision = "shed";
        *answer = shed_answer(x->pw, ad);
        return false;
    }
    x->ad_held = true;
    x->ad_status = 0;
    x->ad_inflight = aw->p.inflight;
    x->ad_admit_ns = now;
    x->ad_sent_ns = x->ad_head_ns = 0;
    publish(aw, x->ad_cls);
    return true;
}

void sl__proxy_adaptive_sent(struct sl__proxy_x *x)
{
    if (x->ad_held)
        x->ad_sent_ns = now_ns(); /* a retry measures from its own try */
}

void sl__proxy_adaptive_head(struct sl__proxy_x *x, int status)
{
    if (!x->ad_held || x->ad_head_ns != 0)
        return;
    x->ad_head_ns = now_ns();
    x->ad_status = status;
}

void sl__proxy_adaptive_done(struct sl__proxy_x *x)
{
    const struct sl__proxy_adaptive *ad = ad_of(x);
    struct sl__proxy_aw *aw;
    int64_t now, from;

    if (ad == NULL || !x->ad_held)
        return;
    x->ad_held = false;
    aw = &x->pw->ad[ad->index];
    now = now_ns();
    from = x->ad_sent_ns != 0 ? x->ad_sent_ns : x->ad_admit_ns;
    sl_partition_release(&aw->p, x->ad_cls);
    if (x->ad_head_ns != 0) { /* the upstream answered: 5xx is a drop */
        sl_adaptive_on_sample(&aw->a, now, x->ad_head_ns - from, x->ad_inflight,
                              x->ad_status >= 500);
        aw->sample_at_ns = now;
    } else if (x->acc.status == 502 || x->acc.status == 504) { /* failed, timed out */
        sl_adaptive_on_sample(&aw->a, now, now - from, x->ad_inflight, true);
        aw->sample_at_ns = now;
    } else {
        sl_adaptive_tick(&aw->a, now); /* the client left, or its request was at fault */
    }
    publish(aw, x->ad_cls);
}

/* ------------------------------------------------------------ scrapes */

/* s as a Prometheus label value (quotes added) or a JSON string. */
static void quoted(struct sl__buf *out, const char *s, bool json)
{
    sl__buf_append(out, "\"", 1);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == '"') {
            char e[2] = {'\\', (char)c};
            sl__buf_append(out, e, 2);
        } else if (c == '\n') {
            sl__buf_append(out, "\\n", 2);
        } else if (c < 0x20) {
            if (json)
                sl__buf_appendf(out, "\\u%04x", c);
        } else {
            sl__buf_append(out, s, 1);
        }
    }
    sl__buf_append(out, "\"", 1);
}

/* One route summed over the workers' blocks. */
struct asum {
    uint64_t limit, inflight;
    int64_t min_rtt_ns;    /* the least known; 0 none */
    int64_t sample_rtt_ns; /* the latest worker's */
    int64_t sample_at_ns;
    uint64_t admitted[SL_PARTITION_MAX], shed[SL_PARTITION_MAX], cls_inflight[SL_PARTITION_MAX];
    unsigned workers;
};

static void sum(const struct sl__proxy_adaptive *ad, unsigned n_workers, struct asum *s)
{
    memset(s, 0, sizeof(*s));
    for (unsigned w = 0; w < n_workers && w < SL__PROXY_MAX_WORKERS; w++) {
        struct sl__proxy_apub *p = atomic_load_explicit(&ad->board->w[w], memory_order_acquire);
        int64_t rtt, at;
        if (p == NULL)
            continue; /* a worker that has not proxied yet */
        s->workers++;
        s->limit += atomic_load_explicit(&p->limit, memory_order_relaxed);
        s->inflight += atomic_load_explicit(&p->inflight, memory_order_relaxed);
        rtt = atomic_load_explicit(&p->min_rtt_ns, memory_order_relaxed);
        if (rtt > 0 && (s->min_rtt_ns == 0 || rtt < s->min_rtt_ns))
            s->min_rtt_ns = rtt;
        at = atomic_load_explicit(&p->sample_at_ns, memory_order_relaxed);
        rtt = atomic_load_explicit(&p->sample_rtt_ns, memory_order_relaxed);
        if (rtt > 0 && at >= s->sample_at_ns) {
            s->sample_at_ns = at;
            s->sample_rtt_ns = rtt;
        }
        for (uint32_t k = 0; k < ad->pc.n; k++) {
            s->admitted[k] += atomic_load_explicit(&p->admitted[k], memory_order_relaxed);
            s->shed[k] += atomic_load_explicit(&p->shed[k], memory_order_relaxed);
            s->cls_inflight[k] += atomic_load_explicit(&p->cls_inflight[k], memory_order_relaxed);
        }
    }
}

static bool has_min_rtt(const struct sl__proxy_adaptive *ad)
{
    return ad->ac.algo == SL_ADAPTIVE_GRADIENT || ad->ac.algo == SL_ADAPTIVE_VEGAS;
}

static const struct sl__proxy_config *config_of(const struct sl__server *srv)
{
    return sl__config_room(&srv->cfg, &sl__proxy_config_section);
}

static void head(struct sl__buf *out, const char *name, const char *type, const char *help)
{
    sl__buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge_lines(struct sl__buf *out, const struct sl__proxy_config *pc,
                        const struct asum *sums, const char *name, int which)
{
    for (size_t r = 0, i = 0; r < pc->n_routes; r++) {
        const struct sl__proxy_adaptive *ad = pc->routes[r].ad;
        const struct asum *s;
        if (ad == NULL)
            continue;
        s = &sums[i++];
        if (which == 2 && !has_min_rtt(ad))
            continue;
        sl__buf_appendf(out, "%s{route=", name);
        quoted(out, pc->routes[r].name, false);
        if (which == 0)
            sl__buf_appendf(out, "} %" PRIu64 "\n", s->limit);
        else if (which == 1)
            sl__buf_appendf(out, "} %" PRIu64 "\n", s->inflight);
        else
            sl__buf_appendf(out, "} %.9f\n",
                            (double)(which == 2 ? s->min_rtt_ns : s->sample_rtt_ns) / 1e9);
    }
}

static void class_lines(struct sl__buf *out, const struct sl__proxy_config *pc,
                        const struct asum *sums, const char *name, bool shed)
{
    for (size_t r = 0, i = 0; r < pc->n_routes; r++) {
        const struct sl__proxy_adaptive *ad = pc->routes[r].ad;
        const struct asum *s;
        if (ad == NULL)
            continue;
        s = &sums[i++];
        for (uint32_t k = 0; k < ad->pc.n; k++) {
            sl__buf_appendf(out, "%s{route=", name);
            quoted(out, pc->routes[r].name, false);
            sl__buf_append(out, ",class=", 7);
            quoted(out, ad->classes[k], false);
            sl__buf_appendf(out, "} %" PRIu64 "\n", shed ? s->shed[k] : s->admitted[k]);
        }
    }
}

void sl__proxy_adaptive_metrics(const struct sl__server *srv, struct sl__buf *out)
{
    const struct sl__proxy_config *pc = config_of(srv);
    struct asum *sums;

    if (pc == NULL || pc->n_adaptive == 0)
        return;
    sums = sl__xzalloc(pc->n_adaptive * sizeof(*sums)); /* a scrape, not the hot path */
    for (size_t r = 0, i = 0; r < pc->n_routes; r++)
        if (pc->routes[r].ad != NULL)
            sum(pc->routes[r].ad, srv->n_workers, &sums[i++]);
    head(out, "sluice_proxy_adaptive_limit", "gauge",
         "A route's adaptive concurrency limit, summed over the workers (each has its own).");
    gauge_lines(out, pc, sums, "sluice_proxy_adaptive_limit", 0);
    head(out, "sluice_proxy_adaptive_inflight", "gauge",
         "Requests of a route admitted by its adaptive limit and not ended, over the workers.");
    gauge_lines(out, pc, sums, "sluice_proxy_adaptive_inflight", 1);
    head(out, "sluice_proxy_adaptive_min_rtt_seconds", "gauge",
         "The least no-load upstream latency over the workers (gradient: minRTT; vegas: "
         "rtt_noload); 0 until measured.");
    gauge_lines(out, pc, sums, "sluice_proxy_adaptive_min_rtt_seconds", 2);
    head(out, "sluice_proxy_adaptive_sample_rtt_seconds", "gauge",
         "The latest upstream latency sample a route's controller took (gradient: its latest "
         "window's percentile).");
    gauge_lines(out, pc, sums, "sluice_proxy_adaptive_sample_rtt_seconds", 3);
    head(out, "sluice_proxy_adaptive_admitted_total", "counter",
         "Requests a route's adaptive limit let through, by class.");
    class_lines(out, pc, sums, "sluice_proxy_adaptive_admitted_total", false);
    head(out, "sluice_proxy_adaptive_shed_total", "counter",
         "Requests a route's adaptive limit answered itself (503) instead of forwarding, by "
         "class.");
    class_lines(out, pc, sums, "sluice_proxy_adaptive_shed_total", true);
    free(sums);
}

static void ms_or_null(struct sl__buf *out, const char *key, int64_t ns)
{
    if (ns > 0)
        sl__buf_appendf(out, ",\"%s\":%.6f", key, (double)ns / 1e6);
    else
        sl__buf_appendf(out, ",\"%s\":null", key);
}

void sl__proxy_adaptive_stats(const struct sl__server *srv, struct sl__buf *out)
{
    const struct sl__proxy_config *pc = config_of(srv);
    bool first = true;

    sl__buf_append(out, "\"adaptive\":[", 12);
    for (size_t r = 0; pc != NULL && r < pc->n_routes; r++) {
        const struct sl__proxy_adaptive *ad = pc->routes[r].ad;
        struct asum s;
        if (ad == NULL)
            continue;
        sum(ad, srv->n_workers, &s);
        sl__buf_append(out, first ? "{\"route\":" : ",{\"route\":", first ? 9 : 10);
        first = false;
        quoted(out, pc->routes[r].name, true);
        sl__buf_appendf(
            out, ",\"algorithm\":\"%s\",\"workers\":%u,\"limit\":%" PRIu64 ",\"inflight\":%" PRIu64,
            sl_adaptive_algo_name(ad->ac.algo), s.workers, s.limit, s.inflight);
        ms_or_null(out, "min_rtt_ms", has_min_rtt(ad) ? s.min_rtt_ns : 0);
        ms_or_null(out, "sample_rtt_ms", s.sample_rtt_ns);
        sl__buf_append(out, ",\"classes\":[", 12);
        for (uint32_t k = 0; k < ad->pc.n; k++) {
            sl__buf_append(out, k ? ",{\"name\":" : "{\"name\":", k ? 9 : 8);
            quoted(out, ad->classes[k], true);
            sl__buf_appendf(out,
                            ",\"share_pct\":%u,\"admitted\":%" PRIu64 ",\"shed\":%" PRIu64
                            ",\"inflight\":%" PRIu64 "}",
                            ad->pc.share_pct[k], s.admitted[k], s.shed[k], s.cls_inflight[k]);
        }
        sl__buf_append(out, "]}", 2);
    }
    sl__buf_append(out, "]", 1);
}
