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
        free(w->series[i].gen[0].keys);
        free(w->series[i].gen[1].keys);
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
    size_t slots = 2, keys = s->cfg.top_keys * sizeof(struct sl__stats_key);

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
        ser->gen[0].keys = calloc(1, keys);
        ser->gen[1].keys = calloc(1, keys);
        if (ser->ring == NULL || ser->gen[0].keys == NULL || ser->gen[1].keys == NULL)
            return SL_ENOMEM;
        for (unsigned k = 0; k < s->cfg.top_keys; k++) {
            atomic_init(&ser->gen[0].keys[k].epoch, -1);
            atomic_init(&ser->gen[1].keys[k].epoch, -1);
        }
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
static void roll(struct sl__stats_w *w, int64_t sec)
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
}

/* The ring slot for a decision at now_ns: never behind the newest second
 * (a late answer counts in the second it arrives in). */
static size_t slot_at(struct sl__stats_w *w, int64_t now_ns)
{
    int64_t sec = now_ns / SL_NS_PER_S;

    if (sec > w->cur_sec)
        roll(w, sec);
    return (size_t)(w->cur_sec % SL__STATS_SECONDS);
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
    if (rules == w->cache_rules)
        return;
    if (w->cache_rules != NULL)
        sl_rules_unref(w->cache_rules);
    /* The snapshot is alive: the decision holds it while it is answered. */
    w->cache_rules = rules != NULL ? sl_rules_ref((sl_rules *)(uintptr_t)rules) : NULL;
    memset(w->cache, 0, sizeof(w->cache));
}

static uint32_t pair_of(struct sl__stats *s, struct sl__stats_w *w, const char *domain, size_t dl,
                        const struct sl_limit *lim, bool own)
{
    struct sl__stats_cached *c = &w->cache[cache_slot(lim)];
    const char *name = lim->name != NULL ? lim->name : "";
    uint32_t i;

    if (!own && c->lim == lim)
        return c->series;
    i = find_or_add(s, w, domain, dl, name, strlen(name));
    if (!own && i != UINT32_MAX) {
        c->lim = lim;
        c->series = i;
    }
    return i;
}

/* ------------------------------------------------------------ counting */

/* Descriptor i's key text: from the request while its store call runs,
 * else from what the ring kept (NULL when it was lost). */
static const char *key_of(const struct sl__stats *s, const struct sl__stats_op *so,
                          const struct sl__stats_kept *k, size_t i, char *buf, size_t *len,
                          bool *partial)
{
    if (so->req != NULL) {
        *len = sl__stats_key_text(s, &so->req->descriptors[i], buf, partial);
        return buf;
    }
    if (i >= k->n)
        return NULL;
    *len = k->len[i];
    *partial = k->flags[i] & SL__KEPT_PARTIAL;
    return k->bytes + k->off[i];
}

/* Did descriptor i bring its own limit (Envoy's override)? Its pair is
 * then found by name: its address is the request's, not the snapshot's. */
static bool own_limit(const struct sl__stats_op *so, const struct sl__stats_kept *k, size_t i)
{
    if (so->req != NULL)
        return so->req->descriptors[i].limit != NULL;
    return i >= k->n || (k->flags[i] & SL__KEPT_OWN);
}

static void count_key(const struct sl__stats *s, struct sl__stats_series *ser,
                      const struct sl__stats_op *so, const struct sl__stats_kept *k, size_t i,
                      int64_t now_ns)
{
    char buf[SL__STATS_KEY_MAX];
    size_t len = 0;
    bool partial = false;
    const char *text = key_of(s, so, k, i, buf, &len, &partial);

    if (text != NULL && len > 0)
        sl__stats_top_add(s, ser, text, len, partial, now_ns);
}

void sl__stats_result(struct sl__stats *s, unsigned wi, const char *domain, size_t dlen,
                      const struct sl__stats_op *so, const struct sl_result *res, int64_t now_ns)
{
    struct sl__stats_w *w = &s->w[wi];
    size_t slot = slot_at(w, now_ns);
    struct sl__stats_kept kept;

    kept.n = 0;
    if (so->req == NULL)
        sl__stats_kept_read(w, so, &kept); /* an answer that came after its start call */
    cache_for(w, so->rules);
    for (size_t i = 0; i < res->n_statuses; i++) {
        const struct sl_status *st = &res->statuses[i];
        struct sl__stats_series *ser;
        uint32_t p;
        if (st->limit == NULL)
            continue;
        p = pair_of(s, w, domain, dlen, st->limit, own_limit(so, &kept, i));
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
            count_key(s, ser, so, &kept, i, now_ns);
    }
}

static unsigned lat_bucket(int64_t ns)
{
    unsigned lg, b;

    if (ns < (INT64_C(1) << SL__LAT_MIN_LOG))
        return 0;
    lg = 63u - (unsigned)__builtin_clzll((unsigned long long)ns);
    b = (lg - SL__LAT_MIN_LOG) * 2 + (unsigned)((ns >> (lg - 1)) & 1);
    return b < SL__LAT_N ? b : SL__LAT_N - 1;
}

void sl__stats_store_call(struct sl__stats *s, unsigned wi, int64_t now_ns, int64_t rtt_ns,
                          bool failed)
{
    struct sl__stats_w *w = &s->w[wi];
    size_t slot = slot_at(w, now_ns);

    sl__stats_bump(&w->lat[slot * SL__LAT_N + lat_bucket(rtt_ns)]);
    if (failed)
        sl__stats_bump(&w->fail[slot]);
}
