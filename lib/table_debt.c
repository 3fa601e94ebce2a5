/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table_debt.c - what evicted entries owe: a bounded summary that a new
 * key's state is restored from, so that eviction never forgives.
 *
 * A full table must evict live entries, and an entry that is not fresh
 * carries information: a client out of quota whose entry went would start
 * fresh and be allowed again. So before an entry goes, its debt (the second
 * its state is whole again, and one amount from its algorithm's fold()) is
 * folded into two cells of its limit's array, picked by its fingerprint; a
 * cell keeps the maximum of each, until that second. When a key is created,
 * the least of its two cells is restored into its fresh state (the
 * algorithm's restore()). Every cell a debt went into holds at least that
 * debt until it is whole, so a returning client starts at least as
 * restricted as it left: the error is one-sided. A new key whose two cells
 * both hold other keys' debts starts restricted by them: the price, which
 * the array's size bounds (docs/security.md gives the formula).
 *
 * One array per limit (by tag: the registry of limit ids below), so a flood
 * in one limit never touches another limit's new clients. The arrays are
 * carved from one pool reserved with the table (a fixed share of its cap),
 * 1/DEBT_ARRAY_DIV of it each, on a limit's first eviction; the limits that
 * find the pool or the registry used up share one array set aside first
 * (still one-sided, no longer apart from each other). Arrays are never
 * given back: limit ids are stable across reloads unless the limit changes.
 *
 * A cell is one 64-bit word, (until_s << 32 | amount), updated by
 * compare-and-swap: shards share the arrays, so no shard lock covers them.
 * Both cells of a key are in one 64-byte line: one cache miss per fold or
 * restore. It does not evict (table_room.c does) nor know what an amount
 * means (the algorithms do).
 */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "table_int.h"

#define LINE_BYTES (DEBT_CELLS_PER_LINE * sizeof(uint64_t))
#define AMOUNT_MAX UINT32_MAX /* saturated: restored as "more than any limit" */

static size_t tags_for(size_t max_bytes)
{
    size_t n = TAGS_MIN;

    while (n < TAGS_MAX && 2 * n * sizeof(struct sl__tag) <= max_bytes / TAGS_SHARE_DIV)
        n *= 2;
    return n;
}

static size_t lines_for(size_t max_bytes)
{
    size_t n = max_bytes / DEBT_SHARE_DIV / LINE_BYTES;

    return n >= DEBT_ARRAY_DIV ? n : DEBT_ARRAY_DIV;
}

size_t sl__debt_bytes(size_t max_bytes)
{
    return tags_for(max_bytes) * sizeof(struct sl__tag) + (lines_for(max_bytes) + 1) * LINE_BYTES;
}

int sl__debt_init(sl_table *t, size_t max_bytes)
{
    size_t ntags = tags_for(max_bytes), lines = lines_for(max_bytes);

    /* calloc, never written here: a large block comes as untouched zero
     * pages, so the summary costs resident memory only where debts land
     * (zero bytes are the atomics' 0 on every platform this builds on).
     * One line more, to start the lines on a cache line. */
    t->tags = calloc(ntags, sizeof(*t->tags));
    t->debt_block = calloc(lines + 1, LINE_BYTES);
    if (t->tags == NULL || t->debt_block == NULL)
        return SL_ENOMEM;
    t->debt = (_Atomic uint64_t *)(((uintptr_t)t->debt_block + LINE_BYTES - 1) &
                                   ~(uintptr_t)(LINE_BYTES - 1));
    t->tags_mask = (uint32_t)ntags - 1;
    t->debt_lines = (uint32_t)lines;
    t->debt_shared = (uint32_t)(lines / DEBT_ARRAY_DIV);
    atomic_init(&t->debt_next, t->debt_shared);
    return SL_OK;
}

void sl__debt_free(sl_table *t)
{
    free(t->tags);
    free(t->debt_block);
}

/* A limit as the summary tells limits apart: its id (algorithm and
 * parameters) and its name, so that two rules with the same parameters
 * (their keys apart, as the limiter keeps them) keep their debts apart
 * too. FNV-1a: names come from the rules, not from clients. */
static uint64_t limit_key(const struct sl_limit *l)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (const char *p = l->name; p != NULL && *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
    return l->id ^ h;
}

/* Linear probing from the key's hash; an empty slot is claimed with a
 * compare-and-swap, so two threads that meet agree on one slot. */
uint16_t sl__tag_of(sl_table *t, const struct sl_limit *l)
{
    uint64_t key;

    if (l->ad_hoc) /* a request's limit: shared, so requests cannot fill the registry */
        return 0;
    key = limit_key(l);
    if (key == 0)
        key = 1; /* 0 marks a free slot */
    uint32_t i = (uint32_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & t->tags_mask;

    for (unsigned k = 0; k < TAGS_PROBES; k++, i = (i + 1) & t->tags_mask) {
        uint64_t v = atomic_load_explicit(&t->tags[i].id, memory_order_relaxed);
        if (v == 0 && atomic_compare_exchange_strong_explicit(
                          &t->tags[i].id, &v, key, memory_order_relaxed, memory_order_relaxed))
            return (uint16_t)(i + 1);
        if (v == key)
            return (uint16_t)(i + 1);
    }
    return 0;
}

/* The array of `tag` (first line << 32 | lines), carving it on first use
 * when `carve`, or 0 when it has none and nothing of it was folded yet; the
 * shared array when the tag has none and none can be carved (the pool never
 * grows again, so a tag that found it used up keeps sharing: its debts and
 * its restores both use the shared array). `where` is set once, by
 * compare-and-swap: a carving that loses the race leaves its lines unused. */
static uint64_t array_of(sl_table *t, uint16_t tag, bool carve)
{
    uint64_t shared = t->debt_shared, w;
    uint32_t n = t->debt_lines / DEBT_ARRAY_DIV, first;
    struct sl__tag *g;

    if (tag == 0)
        return shared;
    g = &t->tags[tag - 1];
    w = atomic_load_explicit(&g->where, memory_order_acquire);
    if (w != 0)
        return w;
    first = atomic_load_explicit(&t->debt_next, memory_order_relaxed);
    if (!carve)
        return first + n > t->debt_lines ? shared : 0;
    do {
        if (first + n > t->debt_lines)
            return shared;
    } while (!atomic_compare_exchange_weak_explicit(&t->debt_next, &first, first + n,
                                                    memory_order_relaxed, memory_order_relaxed));
    uint64_t mine = (uint64_t)first << 32 | n;
    if (atomic_compare_exchange_strong_explicit(&g->where, &w, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    return w;
}

/* The two cells of a key in array `w`, from fingerprint bits that neither
 * pick its shard (fp[1]'s low bits) nor its home slot (fp[0]'s low bits):
 * a line, then two different cells in it. */
static void cells_of(sl_table *t, uint64_t w, const uint32_t fp[3], _Atomic uint64_t *c[2])
{
    uint32_t h = (fp[1] >> 16) | ((fp[2] & FP2_KEY) << 16);
    uint64_t line = (w >> 32) + (((uint64_t)h * (uint32_t)w) >> 32);
    unsigned a = fp[0] >> 29, b = (a + 1 + ((fp[0] >> 20) % 7)) & 7;

    c[0] = &t->debt[line * DEBT_CELLS_PER_LINE + a];
    c[1] = &t->debt[line * DEBT_CELLS_PER_LINE + b];
}

static bool live(uint64_t cell, int64_t now_ns)
{
    return (int64_t)(cell >> 32) * SL_NS_PER_S > now_ns;
}

/* Merge (until_s, amount) into a cell: the larger of each while the cell
 * is live, else the new debt alone (a whole debt says nothing). */
static void merge(_Atomic uint64_t *c, uint32_t until_s, uint32_t amount, int64_t now_ns)
{
    uint64_t old = atomic_load_explicit(c, memory_order_relaxed), next;

    do {
        uint32_t u = until_s, a = amount;
        if (live(old, now_ns)) {
            if ((uint32_t)(old >> 32) > u)
                u = (uint32_t)(old >> 32);
            if ((uint32_t)old > a)
                a = (uint32_t)old;
        }
        next = (uint64_t)u << 32 | a;
        if (next == old)
            return;
    } while (!atomic_compare_exchange_weak_explicit(c, &old, next, memory_order_relaxed,
                                                    memory_order_relaxed));
}

bool sl__debt_fold(sl_table *t, uint64_t slot, const struct sl__entry *e, int64_t now_ns)
{
    const struct sl__algo_ops *ops = sl__algo_ops((enum sl_algo)((slot & S_ALGO) >> S_ALGO_SHIFT));
    const void *st = e->st;
    size_t bytes = SL__STATE_INLINE;
    _Atomic uint64_t *c[2];
    uint64_t amount;

    if (slot & S_OOL) {
        const struct sl__ool *o = (const struct sl__ool *)(uintptr_t)e->st[0];
        st = o->state;
        bytes = o->bytes - sizeof(*o);
    }
    if (!ops->fold(st, bytes, &amount))
        return false;
    if (ops->restore == NULL)
        return true; /* owes nothing that a summary could keep */
    cells_of(t, array_of(t, (uint16_t)(e->fp[2] >> FP2_TAG_SHIFT), true), e->fp, c);
    for (int i = 0; i < 2; i++)
        merge(c[i], e->whole_at_s, amount > AMOUNT_MAX ? AMOUNT_MAX : (uint32_t)amount, now_ns);
    return true;
}

bool sl__debt_restore(sl_table *t, const uint32_t fp[3], uint16_t tag, const struct sl_limit *l,
                      void *st, int64_t now_ns)
{
    _Atomic uint64_t *c[2];
    uint64_t v0, v1, until_s, amount, w = array_of(t, tag, false);

    if (w == 0 || sl__algo_ops(l->algo)->restore == NULL)
        return false; /* nothing of this limit was ever evicted, or kept */
    cells_of(t, w, fp, c);
    v0 = atomic_load_explicit(c[0], memory_order_relaxed);
    v1 = atomic_load_explicit(c[1], memory_order_relaxed);
    if (!live(v0, now_ns) || !live(v1, now_ns))
        return false;
    /* Each cell holds at least every debt folded into it: so does their
     * least, part by part. */
    until_s = (v0 < v1 ? v0 : v1) >> 32;
    amount = (uint32_t)v0 < (uint32_t)v1 ? (uint32_t)v0 : (uint32_t)v1;
    if (amount == AMOUNT_MAX)
        amount = UINT64_MAX;
    sl__algo_ops(l->algo)->restore(st, l, now_ns, (int64_t)until_s * SL_NS_PER_S, amount);
    return true;
}

uint64_t sl__debt_used(const sl_table *t, uint32_t now_s)
{
    uint64_t n = 0;

    for (size_t i = 0; i < (size_t)t->debt_lines * DEBT_CELLS_PER_LINE; i++)
        n += (atomic_load_explicit(&t->debt[i], memory_order_relaxed) >> 32) > now_s;
    return n;
}
