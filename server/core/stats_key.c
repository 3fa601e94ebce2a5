/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats_key.c - the top limited keys of each (domain, limit) pair: a key's
 * text as stats.keys says (the entries, a keyed hash of them, or each
 * value cut short), and the Space-Saving counters it is counted in
 * (Metwally, Agrawal and El Abbadi, "Efficient Computation of Frequent and
 * Top-k Elements in Data Streams", ICDT 2005).
 *
 * Space-Saving keeps k counters. A key already counted is incremented; a
 * new key takes over the counter with the smallest count c and starts at
 * c + 1, remembering c as its possible over-estimate (err). Any key seen
 * more than N/k times in a stream of N is guaranteed to hold a counter, and
 * no count is ever under the true one. Each pair has two sets of counters,
 * for the current window and the one before, so what is shown is the last
 * one to two windows (stats.top_window); a set is reused, not cleared,
 * when its window comes round again (a counter of another window is free).
 *
 * It runs on limited decisions only (denied, delayed or shadow-denied), on
 * the worker's thread; k is small, so a linear scan beats an index.
 */
#include <string.h>

#include "stats_int.h"

/* Append s[0..n) to out[*o..SL__STATS_KEY_MAX), control bytes as '?'
 * (so the separators stay unambiguous). Returns false when the text is
 * not exact (cut or changed). */
static bool put(char *out, size_t *o, const char *s, size_t n)
{
    size_t room = SL__STATS_KEY_MAX - *o, k = n < room ? n : room;
    bool exact = k == n;

    for (size_t i = 0; i < k; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool ctl = ch < 0x20 || ch == 0x7f;
        out[*o + i] = ctl ? '?' : (char)ch;
        exact &= !ctl;
    }
    *o += k;
    return exact;
}

static bool sep(char *out, size_t *o, char c)
{
    if (*o >= SL__STATS_KEY_MAX)
        return false;
    out[(*o)++] = c;
    return true;
}

static const char hex[] = "0123456789abcdef";

size_t sl__stats_key_text(const struct sl__stats *s, const struct sl_descriptor *d, char *out,
                          bool *partial)
{
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
            whole &= sep(out, &o, SL__STATS_RS);
        whole &= put(out, &o, en->key.p, en->key.len);
        whole &= sep(out, &o, SL__STATS_US);
        whole &= put(out, &o, en->value.p, vlen);
    }
    if (s->cfg.keys == SL__STATS_KEYS_HASH) {
        /* The whole entries, never kept: a keyed hash stands for them. */
        uint64_t h = 0;
        for (size_t e = 0; e < d->n_entries; e++) {
            const struct sl_entry *en = &d->entries[e];
            uint64_t part[2] = {sl_siphash(s->secret, en->key.p, en->key.len),
                                sl_siphash(s->secret, en->value.p, en->value.len)};
            h = sl_siphash(s->secret, part, sizeof(part)) ^ (h * 31);
        }
        for (int i = 0; i < 16; i++)
            out[i] = hex[(h >> (60 - 4 * i)) & 15];
        o = 16;
        whole = false;
    }
    *partial = !whole;
    return o;
}

void sl__stats_op_begin(struct sl__stats_op *so, const struct sl_request *req,
                        const sl_rules *rules)
{
    so->req = req;
    so->rules = rules;
    so->ring_len = 0;
}

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

/* ------------------------------------------------------------ Space-Saving */

static void write_text(struct sl__stats_key *k, const char *text, size_t len)
{
    uint64_t words[SL__STATS_KEY_MAX / 8] = {0};

    memcpy(words, text, len);
    for (size_t i = 0; i < (len + 7) / 8; i++)
        atomic_store_explicit(&k->text[i], words[i], memory_order_relaxed);
}

/* Replace counter k by a new key (under its seqlock). */
static void take_over(struct sl__stats_key *k, int64_t epoch, uint64_t h, const char *text,
                      size_t len, bool partial)
{
    uint32_t seq = atomic_load_explicit(&k->seq, memory_order_relaxed);
    bool same_window = atomic_load_explicit(&k->epoch, memory_order_relaxed) == epoch;
    uint32_t floor = same_window ? atomic_load_explicit(&k->count, memory_order_relaxed) : 0;

    atomic_store_explicit(&k->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&k->hash, h, memory_order_relaxed);
    write_text(k, text, len);
    atomic_store_explicit(&k->len, (uint32_t)len | (partial ? SL__KEY_PARTIAL : 0),
                          memory_order_relaxed);
    atomic_store_explicit(&k->err, floor, memory_order_relaxed);
    atomic_store_explicit(&k->count, floor + 1, memory_order_relaxed);
    atomic_store_explicit(&k->epoch, epoch, memory_order_relaxed);
    atomic_store_explicit(&k->seq, seq + 2, memory_order_release);
}

void sl__stats_top_add(const struct sl__stats *s, struct sl__stats_series *ser, const char *text,
                       size_t len, bool partial, int64_t now_ns)
{
    int64_t epoch = now_ns / SL_NS_PER_MS / s->cfg.top_window_ms;
    struct sl__stats_gen *g = &ser->gen[epoch & 1];
    uint64_t h = sl_siphash(s->secret, text, len);
    struct sl__stats_key *victim = NULL;
    uint32_t least = UINT32_MAX;

    for (unsigned i = 0; i < s->cfg.top_keys; i++) {
        struct sl__stats_key *k = &g->keys[i];
        uint32_t c;
        if (atomic_load_explicit(&k->epoch, memory_order_relaxed) != epoch) {
            if (victim == NULL || least > 0)
                victim = k, least = 0; /* free: the first one will do */
            continue;
        }
        if (atomic_load_explicit(&k->hash, memory_order_relaxed) == h) {
            c = atomic_load_explicit(&k->count, memory_order_relaxed);
            if (c < UINT32_MAX)
                atomic_store_explicit(&k->count, c + 1, memory_order_relaxed);
            return;
        }
        c = atomic_load_explicit(&k->count, memory_order_relaxed);
        if (c < least)
            victim = k, least = c;
    }
    take_over(victim, epoch, h, text, len, partial);
}
