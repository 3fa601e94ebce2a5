/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * metrics.c - the counting side of the metrics registry: one block of
 * counters per worker, written by that worker alone.
 *
 * A counter is bumped with a relaxed load and store (one writer, so no
 * read-modify-write atomic is needed; the atomics only make the scraper's
 * concurrent reads well-defined). New series are published with a release
 * store of `ready`. It does not format anything (metrics_render.c).
 */
#include <stdlib.h>
#include <string.h>

#include "metrics_int.h"

const int64_t sl__lat_bounds_ns[SL__LAT_BUCKETS] = {
    10000,   25000,   50000,    100000,   250000,   500000,    1000000,
    2500000, 5000000, 10000000, 25000000, 50000000, 100000000,
};
const char *const sl__lat_bounds_text[SL__LAT_BUCKETS] = {
    "1e-05",  "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001",
    "0.0025", "0.005",   "0.01",  "0.025",  "0.05",    "0.1",
};

static inline void bump(_Atomic uint64_t *c, uint64_t d)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d,
                          memory_order_relaxed);
}

int sl__metrics_new(const struct sl__metrics_config *c, struct sl__metrics **out)
{
    struct sl__metrics *m;
    size_t slots = 2;

    *out = NULL;
    if (c->workers == 0 || c->series_cap == 0 || c->series_cap > (1u << 24))
        return SL_EINVAL;
    while (slots < 2 * (size_t)c->series_cap)
        slots *= 2;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return SL_ENOMEM;
    m->workers = c->workers;
    m->series_cap = c->series_cap;
    memcpy(m->secret, c->secret, sizeof(m->secret));
    m->w = aligned_alloc(64, sizeof(*m->w) * c->workers);
    if (m->w == NULL)
        goto fail;
    memset(m->w, 0, sizeof(*m->w) * c->workers);
    for (unsigned i = 0; i < c->workers; i++) {
        m->w[i].slots = calloc(slots, sizeof(struct sl__series));
        if (m->w[i].slots == NULL)
            goto fail;
        m->w[i].mask = slots - 1;
        memcpy(m->w[i].overflow.domain, SL__METRIC_OVERFLOW, strlen(SL__METRIC_OVERFLOW));
        memcpy(m->w[i].overflow.limit, SL__METRIC_OVERFLOW, strlen(SL__METRIC_OVERFLOW));
        m->w[i].overflow.domain_len = m->w[i].overflow.limit_len = strlen(SL__METRIC_OVERFLOW);
    }
    *out = m;
    return SL_OK;
fail:
    sl__metrics_free(m);
    return SL_ENOMEM;
}

void sl__metrics_free(struct sl__metrics *m)
{
    if (m == NULL)
        return;
    for (unsigned i = 0; m->w != NULL && i < m->workers; i++)
        free(m->w[i].slots);
    free(m->w);
    free(m);
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

    if (s[0] > 0xf4 || len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    }
    return len;
}

/* Copy a label value, truncated on a character boundary, with control
 * bytes and invalid UTF-8 replaced by '?'. Returns the bytes written. */
static uint16_t clean_label(char *dst, struct sl_str src)
{
    const unsigned char *s = (const unsigned char *)src.p;
    size_t i = 0, o = 0;

    while (i < src.len) {
        size_t n = s[i] < 0x80 ? 1 : utf8_len(s + i, src.len - i);
        if (o + (n ? n : 1) > SL__METRIC_LABEL_MAX)
            break;
        if (n == 0 || (n == 1 && (s[i] < 0x20 || s[i] == 0x7f))) {
            dst[o++] = '?';
            i++;
            continue;
        }
        memcpy(dst + o, s + i, n);
        o += n;
        i += n;
    }
    return (uint16_t)o;
}

static bool same(const struct sl__series *s, const char *d, size_t dl, const char *l, size_t ll)
{
    return s->domain_len == dl && s->limit_len == ll && memcmp(s->domain, d, dl) == 0 &&
           memcmp(s->limit, l, ll) == 0;
}

/* The series of the cleaned labels (domain, limit), claimed when new; the
 * overflow series once the cap is reached. */
static struct sl__series *find_series_slow(struct sl__metrics *m, struct sl__wmetrics *w,
                                           struct sl_str domain, struct sl_str limit)
{
    char d[SL__METRIC_LABEL_MAX], l[SL__METRIC_LABEL_MAX], key[2 * SL__METRIC_LABEL_MAX + 1];
    uint16_t dl = clean_label(d, domain), ll = clean_label(l, limit);
    uint64_t h;

    memcpy(key, d, dl);
    key[dl] = '\0'; /* NUL never appears in a clean label */
    memcpy(key + dl + 1, l, ll);
    h = sl_siphash(m->secret, key, (size_t)dl + 1 + ll);
    for (size_t i = h & w->mask;; i = (i + 1) & w->mask) {
        struct sl__series *s = &w->slots[i];
        if (atomic_load_explicit(&s->ready, memory_order_relaxed) == 0) {
            if (w->n_series >= m->series_cap)
                return &w->overflow;
            memcpy(s->domain, d, dl);
            memcpy(s->limit, l, ll);
            s->domain_len = dl;
            s->limit_len = ll;
            s->hash = h;
            w->n_series++;
            atomic_store_explicit(&s->ready, 1, memory_order_release);
            return s;
        }
        if (s->hash == h && same(s, d, dl, l, ll))
            return s;
    }
}

/* s[0..n) equals p[0..n) (either may be NULL when n is 0). */
static bool same_bytes(const char *s, const char *p, size_t n)
{
    return n == 0 || memcmp(s, p, n) == 0;
}

/* The series of (domain, limit): the one found last when the raw labels
 * are those again (a series never moves: the slots are allocated once and
 * never freed), else looked up and remembered. The overflow series is not
 * remembered, nor labels longer than a label's limit. */
static struct sl__series *find_series(struct sl__metrics *m, struct sl__wmetrics *w,
                                      struct sl_str domain, struct sl_str limit)
{
    struct sl__series *s;

    if (w->last != NULL && domain.len == w->last_dl && limit.len == w->last_ll &&
        same_bytes(domain.p, w->last_raw, domain.len) &&
        same_bytes(limit.p, w->last_raw + domain.len, limit.len))
        return w->last;
    s = find_series_slow(m, w, domain, limit);
    if (s != &w->overflow && domain.len <= SL__METRIC_LABEL_MAX &&
        limit.len <= SL__METRIC_LABEL_MAX) {
        if (domain.len > 0)
            memcpy(w->last_raw, domain.p, domain.len);
        if (limit.len > 0)
            memcpy(w->last_raw + domain.len, limit.p, limit.len);
        w->last_dl = (uint16_t)domain.len;
        w->last_ll = (uint16_t)limit.len;
        w->last = s;
    }
    return s;
}

void sl__metrics_decision(struct sl__metrics *m, unsigned w, struct sl_str domain,
                          struct sl_str limit, enum sl__metric_outcome outcome)
{
    if (w >= m->workers || (unsigned)outcome >= SL__OUTCOME_COUNT)
        return;
    bump(&find_series(m, &m->w[w], domain, limit)->n[outcome], 1);
}

void sl__metrics_result(struct sl__metrics *m, unsigned w, struct sl_str domain,
                        const struct sl_result *res, const struct sl_str *labels)
{
    for (size_t i = 0; i < res->n_statuses; i++) {
        const struct sl_status *s = &res->statuses[i];
        struct sl_str limit;
        if (s->limit == NULL && !s->unmatched)
            continue;
        if (s->unmatched) /* on_unmatched: deny; counted under a limit of its own */
            limit = (struct sl_str){"__unmatched__", 13};
        else if (labels != NULL && labels[i].len > 0)
            limit = labels[i];
        else
            limit = (struct sl_str){s->limit->name ? s->limit->name : "",
                                    s->limit->name ? strlen(s->limit->name) : 0};
        sl__metrics_decision(m, w, domain, limit, (enum sl__metric_outcome)s->d.verdict);
        if (s->shadow_denied)
            sl__metrics_decision(m, w, domain, limit, SL__OUTCOME_SHADOW_DENY);
    }
}

void sl__metrics_unknown_domain(struct sl__metrics *m, unsigned w)
{
    if (w < m->workers)
        bump(&m->w[w].unknown_domains, 1);
}

void sl__metrics_killswitch_off(struct sl__metrics *m, unsigned w)
{
    if (w < m->workers)
        bump(&m->w[w].killswitch_off, 1);
}

void sl__metrics_batch(struct sl__metrics *m, unsigned w, size_t n)
{
    if (w < m->workers) {
        bump(&m->w[w].batches, 1);
        bump(&m->w[w].batched, n);
    }
}

void sl__metrics_latency(struct sl__metrics *m, unsigned w, int64_t ns)
{
    size_t b = 0;

    if (w >= m->workers)
        return;
    if (ns < 0)
        ns = 0;
    while (b < SL__LAT_BUCKETS && ns > sl__lat_bounds_ns[b])
        b++;
    bump(&m->w[w].lat_buckets[b], 1);
    bump(&m->w[w].lat_sum_ns, (uint64_t)ns);
}

void sl__metrics_conn_event(struct sl__metrics *m, unsigned w, enum sl__conn_event e, uint64_t n)
{
    if (m != NULL && w < m->workers && e < SL__CONN_EV_COUNT)
        bump(&m->w[w].conn_events[e], n);
}

void sl__metrics_connection(struct sl__metrics *m, unsigned w, int delta)
{
    _Atomic int64_t *c;

    if (w >= m->workers)
        return;
    c = &m->w[w].connections;
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + delta,
                          memory_order_relaxed);
    if (delta > 0)
        bump(&m->w[w].connections_total, (uint64_t)delta);
}
