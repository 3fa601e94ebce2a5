/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats_key.c - the top limited keys of each (domain, limit) pair: a key's
 * text as stats.keys says (the entries, a keyed hash of them, or each
 * value cut short), the ring that keeps key texts for answers that come
 * after their start call, and the Space-Saving counters a key is counted
 * in (Metwally, Agrawal and El Abbadi, "Efficient Computation of Frequent
 * and Top-k Elements in Data Streams", ICDT 2005).
 *
 * Space-Saving keeps k counters. A key already counted is incremented; a
 * new key takes over the counter with the smallest count c and starts at
 * c + 1, remembering c as its possible over-estimate (err). Any key seen
 * more than N/k times in a stream of N is guaranteed to hold a counter, and
 * no count is ever under the true one. The counts live in a min-heap (the
 * counter to take over is its root) and a hash index finds a key's
 * counter, so a key costs a hash, a probe and a sift: O(log k), never a
 * scan. Each pair has two sets of counters, for the current window and the
 * one before (stats.top_window); a set starts afresh when its window comes
 * round again.
 *
 * It runs on limited decisions only (denied, delayed or shadow-denied), on
 * the worker's thread. Readers see only `keys` (stats_int.h's seqlock).
 */
#include <stdlib.h>
#include <string.h>

#include "stats_int.h"

/* ------------------------------------------------------------ key texts */

/* Append s[0..n) to out[*o..SL__STATS_KEY_MAX); false when cut. */
static bool put(char *out, size_t *o, const char *s, size_t n)
{
    size_t room = SL__STATS_KEY_MAX - *o, k = n < room ? n : room;

    memcpy(out + *o, s, k);
    *o += k;
    return k == n;
}

/* Append one separator byte; false when there is no room. */
static bool put1(char *out, size_t *o, char c)
{
    if (*o >= SL__STATS_KEY_MAX)
        return false;
    out[(*o)++] = c;
    return true;
}

/* The n < 8 bytes at p as the first bytes of a zeroed word, without a
 * call to memcpy of a variable size (the decision path's budget). */
static uint64_t tail_word(const char *p, size_t n)
{
    unsigned char b[8] = {0};
    uint64_t w;

    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)p[i];
    memcpy(&w, b, sizeof(w));
    return w;
}

static const char hex[] = "0123456789abcdef";

size_t sl__stats_key_text(const struct sl__stats *s, const struct sl_descriptor *d, char *out,
                          bool *partial)
{
    char raw[SL__STATS_KEY_MAX];
    char *to = s->cfg.keys == SL__STATS_KEYS_HASH ? raw : out;
    size_t o = 0;
    bool whole = true;

    for (size_t e = 0; e < d->n_entries; e++) {
        const struct sl_entry *en = &d->entries[e];
        size_t vlen = en->value.len;
        if (s->cfg.keys == SL__STATS_KEYS_TRUNCATE && vlen > s->cfg.key_bytes) {
            vlen = s->cfg.key_bytes;
            whole = false;
        }
        if (e > 0)
            whole &= put1(to, &o, SL__STATS_RS);
        whole &= put(to, &o, en->key.p, en->key.len);
        whole &= put1(to, &o, SL__STATS_US);
        whole &= put(to, &o, en->value.p, vlen);
    }
    if (s->cfg.keys == SL__STATS_KEYS_HASH) {
        /* Only a keyed hash of the entries is kept: never the values. (A
         * key longer than the text is hashed on its first 96 bytes.) */
        uint64_t h = sl_siphash(s->secret, raw, o);
        for (int i = 0; i < 16; i++)
            out[i] = hex[(h >> (60 - 4 * i)) & 15];
        o = 16;
        whole = false;
    }
    *partial = !whole;
    return o;
}

/* A key's identity within its pair: a keyed multiply-xorshift hash of its
 * text (two keys that collide are counted as one; the key is random per
 * process, so a client cannot aim for that). SipHash would cost more than
 * the rest of a limited decision's statistics together. */
static uint64_t key_hash(const struct sl__stats *s, const char *p, size_t n)
{
    uint64_t seed, h, w;

    memcpy(&seed, s->secret, sizeof(seed));
    h = seed ^ (n * UINT64_C(0x9e3779b97f4a7c15));
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * UINT64_C(0xbf58476d1ce4e5b9);
        h ^= h >> 31;
    }
    w = tail_word(p, n);
    h = (h ^ w ^ seed) * UINT64_C(0x94d049bb133111eb);
    h ^= h >> 29;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    return h ^ (h >> 32);
}

/* ------------------------------------------------------------ the ring */

static void ring_put(struct sl__stats_w *w, const void *p, size_t n)
{
    size_t at = (size_t)(w->ring_head % SL__STATS_RING), first = SL__STATS_RING - at;

    if (first > n)
        first = n;
    memcpy(w->ring + at, p, first);
    memcpy(w->ring, (const char *)p + first, n - first);
    w->ring_head += n;
}

void sl__stats_op_keep(struct sl__stats *s, unsigned wi, struct sl__stats_op *so)
{
    struct sl__stats_w *w = &s->w[wi];
    const struct sl_request *req = so->req;

    so->req = NULL;
    so->ring_pos = w->ring_head;
    for (size_t i = 0; req != NULL && i < req->n_descriptors; i++) {
        char buf[SL__STATS_KEY_MAX];
        bool partial;
        uint8_t head[2];
        head[1] = (uint8_t)sl__stats_key_text(s, &req->descriptors[i], buf, &partial);
        head[0] = (uint8_t)((partial ? SL__KEPT_PARTIAL : 0) |
                            (req->descriptors[i].limit != NULL ? SL__KEPT_OWN : 0));
        ring_put(w, head, 2);
        ring_put(w, buf, head[1]);
    }
    so->ring_len = (uint32_t)(w->ring_head - so->ring_pos);
}

bool sl__stats_kept_read(const struct sl__stats_w *w, const struct sl__stats_op *so,
                         struct sl__stats_kept *k)
{
    size_t at = (size_t)(so->ring_pos % SL__STATS_RING), first = SL__STATS_RING - at, o = 0;

    k->n = 0;
    if (so->ring_len == 0 || so->ring_len > sizeof(k->bytes) ||
        w->ring_head - so->ring_pos > SL__STATS_RING)
        return false;
    if (first > so->ring_len)
        first = so->ring_len;
    memcpy(k->bytes, w->ring + at, first);
    memcpy(k->bytes + first, w->ring, so->ring_len - first);
    while (o + 2 <= so->ring_len && k->n < SL_MAX_DESCRIPTORS) {
        k->flags[k->n] = (uint8_t)k->bytes[o];
        k->len[k->n] = (uint8_t)k->bytes[o + 1];
        k->off[k->n] = (uint16_t)(o + 2);
        o += 2 + k->len[k->n];
        k->n++;
    }
    return true;
}

/* ------------------------------------------------------------ the counters */

static size_t index_slots(unsigned top_keys)
{
    size_t n = 4;

    while (n < 2 * (size_t)top_keys)
        n *= 2;
    return n;
}

size_t sl__stats_gen_bytes(unsigned top_keys)
{
    return top_keys * (sizeof(struct sl__stats_key) + 3 * sizeof(uint32_t) + sizeof(uint64_t)) +
           index_slots(top_keys) * sizeof(uint16_t);
}

int sl__stats_gen_init(struct sl__stats_gen *g, unsigned k)
{
    size_t slots = index_slots(k);
    char *m =
        calloc(1, (size_t)k * (3 * sizeof(uint32_t) + sizeof(uint64_t)) + slots * sizeof(uint16_t));

    g->keys = calloc(k, sizeof(*g->keys));
    g->mem = m;
    if (m == NULL || g->keys == NULL)
        return SL_ENOMEM;
    g->hash = (uint64_t *)(void *)m;
    g->heap = (uint32_t *)(void *)(m + k * sizeof(uint64_t));
    g->pos = g->heap + k;
    g->cnt = g->pos + k;
    g->index = (uint16_t *)(void *)(g->cnt + k);
    g->index_mask = (uint32_t)(slots - 1);
    g->epoch = -1;
    g->n = 0;
    for (unsigned i = 0; i < k; i++)
        atomic_init(&g->keys[i].epoch, -1);
    return SL_OK;
}

void sl__stats_gen_free(struct sl__stats_gen *g)
{
    free(g->keys);
    free(g->mem);
}

/* The index slot holding hash h, or the free slot where it would go. */
static uint32_t probe(const struct sl__stats_gen *g, uint64_t h)
{
    uint32_t i = (uint32_t)h & g->index_mask;

    while (g->index[i] != 0 && g->hash[g->index[i] - 1] != h)
        i = (i + 1) & g->index_mask;
    return i;
}

/* Remove index slot i (linear probing: later entries of the run that
 * could not sit in their home slot move back). */
static void unindex(struct sl__stats_gen *g, uint32_t i)
{
    for (uint32_t j = (i + 1) & g->index_mask; g->index[j] != 0; j = (j + 1) & g->index_mask) {
        uint32_t home = (uint32_t)g->hash[g->index[j] - 1] & g->index_mask;
        if (((j - home) & g->index_mask) >= ((j - i) & g->index_mask)) {
            g->index[i] = g->index[j];
            i = j;
        }
    }
    g->index[i] = 0;
}

static void heap_swap(struct sl__stats_gen *g, uint32_t a, uint32_t b)
{
    uint32_t x = g->heap[a];

    g->heap[a] = g->heap[b];
    g->heap[b] = x;
    g->pos[g->heap[a]] = a;
    g->pos[g->heap[b]] = b;
}

static void sift_down(struct sl__stats_gen *g, uint32_t p)
{
    for (;;) {
        uint32_t l = 2 * p + 1, m = p;
        if (l < g->n && g->cnt[g->heap[l]] < g->cnt[g->heap[m]])
            m = l;
        if (l + 1 < g->n && g->cnt[g->heap[l + 1]] < g->cnt[g->heap[m]])
            m = l + 1;
        if (m == p)
            return;
        heap_swap(g, p, m);
        p = m;
    }
}

static void sift_up(struct sl__stats_gen *g, uint32_t p)
{
    while (p > 0 && g->cnt[g->heap[(p - 1) / 2]] > g->cnt[g->heap[p]]) {
        heap_swap(g, p, (p - 1) / 2);
        p = (p - 1) / 2;
    }
}

/* Counter c, as readers see it, now holds a new key (under its seqlock).
 * The text goes as it is: the reader shows control bytes as '?'. */
static void publish(struct sl__stats_key *k, int64_t epoch, uint64_t h, const char *text,
                    size_t len, bool partial, uint32_t count, uint32_t err)
{
    uint32_t seq = atomic_load_explicit(&k->seq, memory_order_relaxed);

    atomic_store_explicit(&k->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&k->hash, h, memory_order_relaxed);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w;
        if (len - i >= 8)
            memcpy(&w, text + i, sizeof(w));
        else
            w = tail_word(text + i, len - i);
        atomic_store_explicit(&k->text[i / 8], w, memory_order_relaxed);
    }
    atomic_store_explicit(&k->len, (uint32_t)len | (partial ? SL__KEY_PARTIAL : 0),
                          memory_order_relaxed);
    atomic_store_explicit(&k->err, err, memory_order_relaxed);
    atomic_store_explicit(&k->count, count, memory_order_relaxed);
    atomic_store_explicit(&k->epoch, epoch, memory_order_relaxed);
    atomic_store_explicit(&k->seq, seq + 2, memory_order_release);
}

void sl__stats_top_add(const struct sl__stats *s, struct sl__stats_series *ser, const char *text,
                       size_t len, bool partial, int64_t now_ns)
{
    int64_t epoch = now_ns / SL_NS_PER_MS / s->cfg.top_window_ms;
    struct sl__stats_gen *g = &ser->gen[epoch & 1];
    uint64_t h = key_hash(s, text, len);
    uint32_t i, c, floor = 0;

    if (g->epoch != epoch) { /* its window came round again: start afresh */
        g->epoch = epoch;
        g->n = 0;
        memset(g->index, 0, (g->index_mask + 1) * sizeof(*g->index));
    }
    i = probe(g, h);
    if (g->index[i] != 0) { /* counted already: one more */
        c = g->index[i] - 1;
        if (g->cnt[c] < UINT32_MAX)
            g->cnt[c]++;
        atomic_store_explicit(&g->keys[c].count, g->cnt[c], memory_order_relaxed);
        sift_down(g, g->pos[c]);
        return;
    }
    if (g->n < s->cfg.top_keys) { /* a free counter */
        c = g->n++;
        g->pos[c] = c;
        g->heap[c] = c;
    } else { /* take over the smallest */
        c = g->heap[0];
        floor = g->cnt[c];
        unindex(g, probe(g, g->hash[c]));
        i = probe(g, h);
    }
    g->index[i] = (uint16_t)(c + 1);
    g->hash[c] = h;
    g->cnt[c] = floor + 1;
    if (floor == 0)
        sift_up(g, g->pos[c]);
    else
        sift_down(g, g->pos[c]);
    publish(&g->keys[c], epoch, h, text, len, partial, floor + 1, floor);
}
