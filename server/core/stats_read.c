/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats_read.c - the reading side of the statistics (stats.h): every
 * worker's block merged into one view - pairs by their labels, seconds by
 * their stamps, top keys by their hash (counts and over-estimates added,
 * which keeps Space-Saving's bounds: a merged count is never under the
 * true one and over it by at most the merged err).
 *
 * It runs on an admin request's thread while the workers write: every
 * multi-field read is checked against its seqlock and dropped when a
 * writer moved under it (a second being cleared, a counter being taken
 * over), so a view never mixes two seconds or two keys. It allocates (the
 * view), which is why it is never on the decision path.
 */
#include <stdlib.h>
#include <string.h>

#include "stats_int.h"
#include "xalloc.h"

#define RECENT 10 /* seconds of the "recent" rates */

static uint64_t ld(_Atomic uint32_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* The merged pair that worker pair `ser` adds to, made if new. */
static size_t merged_index(struct sl__stats_view *v, const struct sl__stats_series *ser,
                           uint64_t *hashes)
{
    struct sl__stats_series_view *m;

    for (size_t i = 0; i < v->n_series; i++) {
        m = &v->series[i];
        if (hashes[i] == ser->hash && m->domain_len == ser->domain_len &&
            m->limit_len == ser->limit_len && memcmp(m->domain, ser->domain, m->domain_len) == 0 &&
            memcmp(m->limit, ser->limit, m->limit_len) == 0)
            return i;
    }
    m = &v->series[v->n_series];
    memcpy(m->domain, ser->domain, ser->domain_len);
    memcpy(m->limit, ser->limit, ser->limit_len);
    m->domain_len = ser->domain_len;
    m->limit_len = ser->limit_len;
    m->n = sl__xzalloc((size_t)v->seconds * SL__ST_N * sizeof(uint64_t));
    hashes[v->n_series] = ser->hash;
    return v->n_series++;
}

/* What merging one worker's seconds into a view needs: the worker, its
 * n series and where each lands in the view (map[i]: the merged series of
 * w's series i), and two scratch arrays the caller owns (tmp: n *
 * SL__ST_N counts; lat: the view's seconds * SL__LAT_N buckets). */
struct merge {
    struct sl__stats_w *w;
    uint32_t n;
    const size_t *map;
    struct sl__stats_view *v;
    uint64_t *tmp;
    uint64_t *lat;
};

/* Second `sec` of m->w into the view at position t, if its slot still
 * holds that second once read. */
static void read_second(const struct merge *m, int64_t sec, unsigned t)
{
    size_t slot = (size_t)(sec % SL__STATS_SECONDS);
    struct sl__stats_w *w = m->w;
    uint64_t fail, h[SL__LAT_N];

    if (atomic_load_explicit(&w->stamp[slot], memory_order_acquire) != sec)
        return;
    for (uint32_t i = 0; i < m->n; i++)
        for (int o = 0; o < SL__ST_N; o++)
            m->tmp[i * SL__ST_N + o] = ld(&w->series[i].ring[slot * SL__ST_N + o]);
    for (int b = 0; b < SL__LAT_N; b++)
        h[b] = ld(&w->lat[slot * SL__LAT_N + b]);
    fail = ld(&w->fail[slot]);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&w->stamp[slot], memory_order_relaxed) != sec)
        return;
    for (uint32_t i = 0; i < m->n; i++)
        for (int o = 0; o < SL__ST_N; o++)
            m->v->series[m->map[i]].n[(size_t)t * SL__ST_N + o] += m->tmp[i * SL__ST_N + o];
    for (int b = 0; b < SL__LAT_N; b++)
        m->lat[(size_t)t * SL__LAT_N + b] += h[b];
    m->v->store_failures[t] += fail;
}

/* ------------------------------------------------------------ top keys */

static void add_key(struct sl__stats_series_view *m, size_t cap, uint64_t *hashes, uint64_t h,
                    const struct sl__stats_key_view *k)
{
    for (size_t i = 0; i < m->n_top; i++) {
        if (hashes[i] == h) {
            m->top[i].count += k->count;
            m->top[i].err += k->err;
            return;
        }
    }
    if (m->n_top < cap) {
        hashes[m->n_top] = h;
        m->top[m->n_top++] = *k;
    }
}

/* Counter k, if it is of window e or e-1 and no writer moved under it. */
static bool read_key(struct sl__stats_key *k, int64_t e, struct sl__stats_key_view *out,
                     uint64_t *h)
{
    uint64_t words[SL__STATS_KEY_MAX / 8];
    uint32_t seq = atomic_load_explicit(&k->seq, memory_order_acquire), len;
    int64_t ep;

    if (seq & 1)
        return false;
    ep = atomic_load_explicit(&k->epoch, memory_order_relaxed);
    *h = atomic_load_explicit(&k->hash, memory_order_relaxed);
    len = atomic_load_explicit(&k->len, memory_order_relaxed);
    out->count = atomic_load_explicit(&k->count, memory_order_relaxed);
    out->err = atomic_load_explicit(&k->err, memory_order_relaxed);
    for (size_t i = 0; i < SL__STATS_KEY_MAX / 8; i++)
        words[i] = atomic_load_explicit(&k->text[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&k->seq, memory_order_relaxed) != seq || (ep != e && ep != e - 1))
        return false;
    out->len = (uint16_t)(len & ~SL__KEY_PARTIAL);
    if (out->len > SL__STATS_KEY_MAX)
        return false;
    out->partial = (len & SL__KEY_PARTIAL) != 0;
    memcpy(out->text, words, out->len);
    for (size_t i = 0; i < out->len; i++) { /* control bytes but the separators: '?' */
        unsigned char ch = (unsigned char)out->text[i];
        if ((ch < 0x20 && ch != SL__STATS_US && ch != SL__STATS_RS) || ch == 0x7f) {
            out->text[i] = '?';
            out->partial = true;
        }
    }
    return out->count > 0;
}

static int by_count(const void *a, const void *b)
{
    const struct sl__stats_key_view *x = a, *y = b;

    return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static void read_top(const struct sl__stats *s, struct sl__stats_series_view *m,
                     struct sl__stats_series *const *mine, int64_t e, unsigned top_n)
{
    size_t cap = (size_t)s->workers * 2 * s->cfg.top_keys;
    uint64_t *hashes = sl__xzalloc(cap * sizeof(*hashes));

    m->top = sl__xzalloc(cap * sizeof(*m->top));
    for (unsigned wi = 0; wi < s->workers; wi++) {
        if (mine[wi] == NULL)
            continue;
        for (int g = 0; g < 2; g++) {
            for (unsigned i = 0; i < s->cfg.top_keys; i++) {
                struct sl__stats_key_view k;
                uint64_t h;
                if (read_key(&mine[wi]->gen[g].keys[i], e, &k, &h))
                    add_key(m, cap, hashes, h, &k);
            }
        }
    }
    qsort(m->top, m->n_top, sizeof(*m->top), by_count);
    if (m->n_top > top_n)
        m->n_top = top_n;
    free(hashes);
}

/* ------------------------------------------------------------ latency */

static uint64_t bucket_top_ns(unsigned b)
{
    unsigned lg = SL__LAT_MIN_LOG + b / 2;

    return b & 1 ? (UINT64_C(2) << lg) : (UINT64_C(3) << lg) / 2;
}

static uint64_t quantile(const uint64_t *h, uint64_t total, double q)
{
    uint64_t want = (uint64_t)((double)total * q + 0.999999), seen = 0;

    for (unsigned b = 0; total > 0 && b < SL__LAT_N; b++) {
        seen += h[b];
        if (seen >= want)
            return bucket_top_ns(b);
    }
    return 0;
}

static void latency(struct sl__stats_view *v, const uint64_t *lat)
{
    uint64_t recent[SL__LAT_N] = {0}, n_recent = 0;

    for (unsigned t = 0; t < v->seconds; t++) {
        const uint64_t *h = &lat[(size_t)t * SL__LAT_N];
        uint64_t n = 0;
        for (unsigned b = 0; b < SL__LAT_N; b++) {
            n += h[b];
            if (t + RECENT >= v->seconds)
                recent[b] += h[b];
        }
        if (t + RECENT >= v->seconds)
            n_recent += n;
        v->store_calls[t] = n;
        v->store_p50_ns[t] = quantile(h, n, 0.50);
        v->store_p99_ns[t] = quantile(h, n, 0.99);
    }
    v->store_p50_ns_recent = quantile(recent, n_recent, 0.50);
    v->store_p99_ns_recent = quantile(recent, n_recent, 0.99);
}

/* ------------------------------------------------------------ the view */

static void totals(struct sl__stats_view *v)
{
    for (size_t i = 0; i < v->n_series; i++) {
        struct sl__stats_series_view *m = &v->series[i];
        for (unsigned t = 0; t < v->seconds; t++)
            for (int o = 0; o < SL__ST_N; o++) {
                m->total[o] += m->n[(size_t)t * SL__ST_N + o];
                if (t + RECENT >= v->seconds)
                    m->recent[o] += m->n[(size_t)t * SL__ST_N + o];
            }
    }
}

int sl__stats_read(struct sl__stats *s, int64_t now_ns, unsigned seconds, unsigned top_n,
                   struct sl__stats_view *v)
{
    size_t most = (size_t)s->workers * s->cfg.max_series;
    uint64_t *hashes = sl__xzalloc((most + 1) * sizeof(*hashes));
    size_t *map = sl__xzalloc((s->cfg.max_series + 1) * sizeof(*map));
    uint64_t *tmp = sl__xzalloc(((size_t)s->cfg.max_series + 1) * SL__ST_N * sizeof(*tmp));
    struct sl__stats_series **mine = sl__xzalloc((most + 1) * s->workers * sizeof(*mine));
    uint64_t *lat;
    int64_t e = now_ns / SL_NS_PER_MS / s->cfg.top_window_ms;

    memset(v, 0, sizeof(*v));
    v->seconds = seconds < 1 ? 1 : seconds > SL__STATS_SECONDS ? SL__STATS_SECONDS : seconds;
    v->now_s = now_ns / SL_NS_PER_S;
    v->keys = s->cfg.keys;
    v->window_ms = s->cfg.top_window_ms;
    v->series = sl__xzalloc((most + 1) * sizeof(*v->series));
    v->store_calls = sl__xzalloc(v->seconds * sizeof(uint64_t));
    v->store_failures = sl__xzalloc(v->seconds * sizeof(uint64_t));
    v->store_p50_ns = sl__xzalloc(v->seconds * sizeof(uint64_t));
    v->store_p99_ns = sl__xzalloc(v->seconds * sizeof(uint64_t));
    lat = sl__xzalloc((size_t)v->seconds * SL__LAT_N * sizeof(uint64_t));
    for (unsigned wi = 0; wi < s->workers; wi++) {
        struct sl__stats_w *w = &s->w[wi];
        uint32_t n = atomic_load_explicit(&w->n_series, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++) {
            map[i] = merged_index(v, &w->series[i], hashes);
            mine[map[i] * s->workers + wi] = &w->series[i];
        }
        const struct merge m = {w, n, map, v, tmp, lat};
        for (unsigned t = 0; t < v->seconds; t++)
            read_second(&m, v->now_s - (int64_t)(v->seconds - 1 - t), t);
        v->dropped += atomic_load_explicit(&w->dropped, memory_order_relaxed);
    }
    totals(v);
    latency(v, lat);
    for (size_t i = 0; i < v->n_series; i++)
        read_top(s, &v->series[i], &mine[i * s->workers], e, top_n);
    free(lat);
    free(mine);
    free(tmp);
    free(map);
    free(hashes);
    return SL_OK;
}

void sl__stats_view_free(struct sl__stats_view *v)
{
    for (size_t i = 0; i < v->n_series; i++) {
        free(v->series[i].n);
        free(v->series[i].top);
    }
    free(v->series);
    free(v->store_calls);
    free(v->store_failures);
    free(v->store_p50_ns);
    free(v->store_p99_ns);
    memset(v, 0, sizeof(*v));
}
