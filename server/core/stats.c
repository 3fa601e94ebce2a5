/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats.c - the writing side of the statistics (stats.h): each worker
 * counts the decisions it made into its own block - the pair's slot of the
 * current second, the store's round trip, and a limited key into the
 * pair's Space-Saving counters (stats_key.c).
 *
 * Finding a pair costs one pointer lookup: a small table from the limit's
 * address to its pair, emptied when the worker decides with a new rules
 * snapshot (the table keeps that snapshot referenced, so an address cannot
 * be reused while it is cached). Only a limit seen for the first time, or
 * one a request brought itself (Envoy's override), hashes its names.
 *
 * It allocates only in sl__stats_new(); it formats and reads nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "stats_int.h"

static size_t ring_bytes(void)
{
    return sizeof(_Atomic uint32_t) * SL__STATS_SECONDS * SL__ST_N;
}

static void free_worker(const struct sl__stats *s, struct sl__stats_w *w)
{
    for (unsigned i = 0; w->series != NULL && i < s->cfg.max_series; i++) {
        free(w->series[i].ring);
        sl__stats_gen_free(&w->series[i].gen[0]);
        sl__stats_gen_free(&w->series[i].gen[1]);
    }
    free(w->series);
    free(w->index);
    free(w->lat);
    free(w->ring);
    if (w->cache_rules != NULL)
        sl_rules_unref(w->cache_rules);
}

static int init_worker(struct sl__stats *s, struct sl__stats_w *w)
{
    size_t slots = 2, keys = sl__stats_gen_bytes(s->cfg.top_keys);

    while (slots < 2 * (size_t)s->cfg.max_series)
        slots *= 2;
    w->index = calloc(slots, sizeof(*w->index));
    w->index_mask = slots - 1;
    w->series = calloc(s->cfg.max_series, sizeof(*w->series));
    w->lat = calloc((size_t)SL__STATS_SECONDS * SL__LAT_N, sizeof(*w->lat));
    w->ring = malloc(SL__STATS_RING);
    if (w->index == NULL || w->series == NULL || w->lat == NULL || w->ring == NULL)
        return SL_ENOMEM;
    for (unsigned i = 0; i < s->cfg.max_series; i++) {
        struct sl__stats_series *ser = &w->series[i];
        ser->ring = calloc(1, ring_bytes());
        if (ser->ring == NULL || sl__stats_gen_init(&ser->gen[0], s->cfg.top_keys) != SL_OK ||
            sl__stats_gen_init(&ser->gen[1], s->cfg.top_keys) != SL_OK)
            return SL_ENOMEM;
    }
    s->bytes += slots * sizeof(*w->index) +
                s->cfg.max_series * (sizeof(*w->series) + ring_bytes() + 2 * keys) +
                (size_t)SL__STATS_SECONDS * SL__LAT_N * sizeof(*w->lat) + SL__STATS_RING +
                sizeof(*w);
    return SL_OK;
}

int sl__stats_new(const struct sl__stats_config *c, unsigned workers, const uint8_t secret[16],
                  struct sl__stats **out)
{
    struct sl__stats *s;
    int r = SL_OK;

    *out = NULL;
    if (!c->enabled)
        return SL_OK;
    if (workers == 0 || c->max_series == 0 || c->top_keys == 0 || c->top_window_ms <= 0)
        return SL_EINVAL;
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return SL_ENOMEM;
    s->cfg = *c;
    s->workers = workers;
    memcpy(s->secret, secret, sizeof(s->secret));
    s->w = aligned_alloc(64, sizeof(*s->w) * workers);
    if (s->w == NULL) {
        free(s);
        return SL_ENOMEM;
    }
    memset(s->w, 0, sizeof(*s->w) * workers);
    s->bytes = sizeof(*s);
    for (unsigned i = 0; i < workers && r == SL_OK; i++)
        r = init_worker(s, &s->w[i]);
    if (r != SL_OK) {
        sl__stats_free(s);
        return r;
    }
    *out = s;
    return SL_OK;
}

void sl__stats_free(struct sl__stats *s)
{
    if (s == NULL)
        return;
    for (unsigned i = 0; i < s->workers; i++)
        free_worker(s, &s->w[i]);
    free(s->w);
    free(s);
}

size_t sl__stats_bytes(const struct sl__stats *s)
{
    return s != NULL ? s->bytes : 0;
}

/* ------------------------------------------------------------ seconds */

/* Move worker w to second `sec`: its ring slot is cleared under the
 * slot's seqlock (stamp 0 while clearing), for every pair in use. Once a
 * second per worker, at most. */
static __attribute__((noinline, cold)) void roll(struct sl__stats_w *w, int64_t sec)
{
    size_t slot = (size_t)(sec % SL__STATS_SECONDS);
    uint32_t n = atomic_load_explicit(&w->n_series, memory_order_relaxed);

    atomic_store_explicit(&w->stamp[slot], 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (uint32_t i = 0; i < n; i++)
        for (int o = 0; o < SL__ST_N; o++)
            atomic_store_explicit(&w->series[i].ring[slot * SL__ST_N + o], 0, memory_order_relaxed);
    for (int b = 0; b < SL__LAT_N; b++)
        atomic_store_explicit(&w->lat[slot * SL__LAT_N + b], 0, memory_order_relaxed);
    atomic_store_explicit(&w->fail[slot], 0, memory_order_relaxed);
    atomic_store_explicit(&w->stamp[slot], sec, memory_order_release);
    w->cur_sec = sec;
    w->cur_slot = slot;
}

/* The ring slot for a decision at now_ns: never behind the newest second
 * (a late answer counts in the second it arrives in). Inlined, like
 * count_result: each call is on every decision's path. */
static inline __attribute__((always_inline)) size_t slot_at(struct sl__stats_w *w, int64_t now_ns)
{
    int64_t sec = now_ns / SL_NS_PER_S;

    if (sec > w->cur_sec)
        roll(w, sec);
    return w->cur_slot;
}

/* ------------------------------------------------------------ pairs */

static uint32_t find_or_add(struct sl__stats *s, struct sl__stats_w *w, const char *d, size_t dl,
                            const char *l, size_t ll)
{
    char key[2 * 96 + 1];
    uint64_t h;

    dl = dl < 96 ? dl : 96;
    ll = ll < 96 ? ll : 96;
    memcpy(key, d, dl);
    key[dl] = '\0';
    memcpy(key + dl + 1, l, ll);
    h = sl_siphash(s->secret, key, dl + 1 + ll);
    for (size_t i = h & w->index_mask;; i = (i + 1) & w->index_mask) {
        uint32_t n = atomic_load_explicit(&w->n_series, memory_order_relaxed);
        struct sl__stats_series *ser;
        if (w->index[i] == 0) {
            if (n >= s->cfg.max_series)
                return UINT32_MAX;
            ser = &w->series[n];
            memcpy(ser->domain, d, dl);
            memcpy(ser->limit, l, ll);
            ser->domain_len = (uint16_t)dl;
            ser->limit_len = (uint16_t)ll;
            ser->hash = h;
            atomic_store_explicit(&ser->ready, 1, memory_order_relaxed);
            w->index[i] = n + 1;
            atomic_store_explicit(&w->n_series, n + 1, memory_order_release);
            return n;
        }
        ser = &w->series[w->index[i] - 1];
        if (ser->hash == h && ser->domain_len == dl && ser->limit_len == ll &&
            memcmp(ser->domain, d, dl) == 0 && memcmp(ser->limit, l, ll) == 0)
            return w->index[i] - 1;
    }
}

static size_t cache_slot(const struct sl_limit *lim)
{
    return (size_t)(((uintptr_t)lim >> 4) * UINT64_C(0x9e3779b97f4a7c15) >> 56) &
           (SL__STATS_CACHE - 1);
}

/* The cache is for the snapshot `rules`: a new one empties it. */
static void cache_for(struct sl__stats_w *w, const sl_rules *rules)
{
    if (w->cache_rules != NULL)
        sl_rules_unref(w->cache_rules);
    /* The snapshot is alive: the decision holds it while it is answered. */
    w->cache_rules = rules != NULL ? sl_rules_ref((sl_rules *)(uintptr_t)rules) : NULL;
    memset(w->cache, 0, sizeof(w->cache));
}

/* The pair of `lim` in `domain`: by the cache when the limit was seen in
 * this snapshot (an address there is a live snapshot's limit, so a limit
 * a request brought cannot be mistaken for it), else by name - not cached
 * for a limit the request brought itself (`own`: its address is the
 * request's). UINT32_MAX past max_series. */
static inline uint32_t pair_of(struct sl__stats *s, struct sl__stats_w *w, const char *domain,
                               size_t dl, const struct sl_limit *lim,
                               bool (*own)(const void *, size_t), const void *arg, size_t i)
{
    struct sl__stats_cached *c = &w->cache[cache_slot(lim)];
    const char *name;
    uint32_t p;

    if (c->lim == lim)
        return c->series;
    name = lim->name != NULL ? lim->name : "";
    p = find_or_add(s, w, domain, dl, name, strlen(name));
    if (p != UINT32_MAX && !own(arg, i)) {
        c->lim = lim;
        c->series = p;
    }
    return p;
}

/* ------------------------------------------------------------ counting */

/* What a status needs of its descriptor: from the request while its
 * store call runs, else from what the ring kept (decoded once, when first
 * needed: most answers need no key). */
struct keys_of {
    const struct sl__stats *s;
    const struct sl__stats_w *w;
    const struct sl__stats_op *so;
    bool decoded;
    struct sl__stats_kept kept;
};

static const struct sl__stats_kept *kept(struct keys_of *k)
{
    if (!k->decoded) {
        k->decoded = true;
        sl__stats_kept_read(k->w, k->so, &k->kept);
    }
    return &k->kept;
}

/* Did descriptor i bring its own limit (Envoy's override)? */
static bool own_limit(const void *arg, size_t i)
{
    struct keys_of *k = (struct keys_of *)(uintptr_t)arg;
    const struct sl__stats_kept *kp;

    if (k->so->req != NULL)
        return k->so->req->descriptors[i].limit != NULL;
    kp = kept(k);
    return i >= kp->n || (kp->flags[i] & SL__KEPT_OWN);
}

static void count_key(struct keys_of *k, struct sl__stats_series *ser, size_t i, int64_t now_ns)
{
    char buf[SL__STATS_KEY_MAX];
    const struct sl__stats_kept *kp;
    size_t len;
    bool partial;

    if (k->so->req != NULL) {
        len = sl__stats_key_text(k->s, &k->so->req->descriptors[i], buf, &partial);
        if (len > 0)
            sl__stats_top_add(k->s, ser, buf, len, partial, now_ns);
        return;
    }
    kp = kept(k);
    if (i < kp->n && kp->len[i] > 0)
        sl__stats_top_add(k->s, ser, kp->bytes + kp->off[i], kp->len[i],
                          kp->flags[i] & SL__KEPT_PARTIAL, now_ns);
}

static inline __attribute__((always_inline)) void
count_result(struct sl__stats *s, struct sl__stats_w *w, size_t slot, const char *domain,
             size_t dlen, const struct sl__stats_op *so, const struct sl_result *res,
             int64_t now_ns)
{
    struct keys_of keys;

    keys.s = s;
    keys.w = w;
    keys.so = so;
    keys.decoded = false;
    if (so->rules != w->cache_rules)
        cache_for(w, so->rules);
    for (size_t i = 0; i < res->n_statuses; i++) {
        const struct sl_status *st = &res->statuses[i];
        struct sl__stats_series *ser;
        uint32_t p;
        if (st->limit == NULL)
            continue;
        p = pair_of(s, w, domain, dlen, st->limit, own_limit, &keys, i);
        if (p == UINT32_MAX) {
            atomic_store_explicit(&w->dropped,
                                  atomic_load_explicit(&w->dropped, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            continue;
        }
        ser = &w->series[p];
        sl__stats_bump(&ser->ring[slot * SL__ST_N + (unsigned)st->d.verdict]);
        if (st->shadow_denied)
            sl__stats_bump(&ser->ring[slot * SL__ST_N + SL__ST_SHADOW]);
        if (st->d.verdict != SL_ALLOW || st->shadow_denied)
            count_key(&keys, ser, i, now_ns);
    }
}

void sl__stats_result(struct sl__stats *s, unsigned wi, const char *domain, size_t dlen,
                      const struct sl__stats_op *so, const struct sl_result *res, int64_t now_ns)
{
    struct sl__stats_w *w = &s->w[wi];

    count_result(s, w, slot_at(w, now_ns), domain, dlen, so, res, now_ns);
}

static inline unsigned lat_bucket(int64_t ns)
{
    unsigned lg, b;

    if (ns < (INT64_C(1) << SL__LAT_MIN_LOG))
        return 0;
    lg = 63u - (unsigned)__builtin_clzll((unsigned long long)ns);
    b = (lg - SL__LAT_MIN_LOG) * 2 + (unsigned)((ns >> (lg - 1)) & 1);
    return b < SL__LAT_N ? b : SL__LAT_N - 1;
}

static inline void count_call(struct sl__stats_w *w, size_t slot, int64_t rtt_ns, bool failed)
{
    sl__stats_bump(&w->lat[slot * SL__LAT_N + lat_bucket(rtt_ns)]);
    if (failed)
        sl__stats_bump(&w->fail[slot]);
}

void sl__stats_store_call(struct sl__stats *s, unsigned wi, int64_t now_ns, int64_t rtt_ns,
                          bool failed)
{
    struct sl__stats_w *w = &s->w[wi];

    count_call(w, slot_at(w, now_ns), rtt_ns, failed);
}

void sl__stats_decision(struct sl__stats *s, const struct sl__stats_answer *a)
{
    struct sl__stats_w *w = &s->w[a->worker];
    size_t slot = slot_at(w, a->now_ns);

    if (a->op->store_ns != 0)
        count_call(w, slot, a->mono_ns - a->op->store_ns, a->err != SL_OK);
    if (a->err == SL_OK)
        count_result(s, w, slot, a->domain, a->domain_len, a->op, a->res, a->now_ns);
}
