/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table_room.c - keeping the state table under its memory cap: amortised
 * expiry of drained entries, the sweep, CLOCK eviction of live ones (those
 * out of quota last; what an evicted entry owes goes to the summary of
 * table_debt.c first, so its return is never forgiven), and the on_full
 * policy (evict, or deny new keys).
 *
 * It does not look keys up or create entries (table.c does), nor decide
 * whether a state is out of quota (the algorithms do; table.c marks the
 * slot). Bounded work: a few slots per insert, at most EVICT_SCAN slots for
 * a drained entry and two turns of the CLOCK hand per eviction (reached
 * only when nearly every entry is out of quota or recently used); the sweep
 * is the only full scan.
 */
#include <stdlib.h>
#include <string.h>

#include "table_int.h"

/* Examine up to `n` slots from the expiry hand; drop drained, unpinned
 * entries. Returns how many were dropped. */
uint32_t sl__shard_expire(sl_table *t, struct sl__shard *s, int64_t now_ns, uint32_t n)
{
    uint32_t mask = s->cap - 1, dropped = 0;

    /* Only advancing counts: a removal shifts the next candidate into p. */
    for (uint32_t k = 0; k < n && s->count > 0;) {
        uint32_t p = s->expire_hand & mask;
        uint64_t slot = s->index[p];
        if (slot != 0 && !(slot & S_PIN) &&
            drained(entry_at(t, s, (uint32_t)(slot & S_IDX) - 1), now_ns)) {
            sl__shard_remove_at(t, s, p); /* p now holds the next candidate */
            dropped++;
            continue;
        }
        s->expire_hand = (p + 1) & mask;
        k++;
    }
    s->expired += dropped;
    return dropped;
}

/*
 * CLOCK over the entries eviction may take: an unpinned one whose reference
 * bit is clear (a set bit is cleared: a second chance) and whose debt the
 * summary takes (table_debt.c: never a held lease). With `spare`, the
 * entries marked denying are passed over untouched, so that a client being
 * denied keeps its state while any other entry can go (a flood of new keys
 * must not unblock it); a marked entry found drained on the way is dropped
 * as expired instead. At most two turns of the hand; false when nothing
 * could go.
 */
static bool clock_evict(sl_table *t, struct sl__shard *s, int64_t now_ns, bool spare)
{
    uint32_t mask = s->cap - 1;

    for (uint64_t k = 0; k < 2 * (uint64_t)s->cap + 1; k++) {
        uint32_t p = s->clock_hand;
        uint64_t slot = s->index[p];
        s->clock_hand = (p + 1) & mask;
        if (slot == 0 || (slot & S_PIN))
            continue;
        if ((slot & S_DENY) && spare) {
            if (!drained(entry_at(t, s, (uint32_t)(slot & S_IDX) - 1), now_ns))
                continue;
            sl__shard_remove_at(t, s, p);
            s->expired++;
            return true;
        }
        if (slot & S_REF) {
            s->index[p] = slot & ~S_REF;
            continue;
        }
        struct sl__entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
        bool owes = !drained(e, now_ns);
        if (owes && !sl__debt_fold(t, slot, e, now_ns))
            continue; /* a lease held */
        sl__shard_remove_at(t, s, p);
        s->debt_folds += owes;
        s->evictions++;
        s->evictions_denying += (slot & S_DENY) != 0;
        return true;
    }
    return false;
}

/* Evict one entry: one that is not out of quota if there is any (those
 * may all be pinned: then look again without sparing), else a denying one,
 * counted apart. */
static bool evict_one(sl_table *t, struct sl__shard *s, int64_t now_ns)
{
    if (s->denying < s->count && clock_evict(t, s, now_ns, true))
        return true;
    return clock_evict(t, s, now_ns, false);
}

/* The directory's next size: doubled, at most max_chunks. */
static uint32_t dir_next(const sl_table *t, const struct sl__shard *s)
{
    return s->dir_cap * 2 < t->max_chunks ? s->dir_cap * 2 : t->max_chunks;
}

/* Bytes the shard would hold with one more entry (plus `extra`), and
 * whether the index would have to double for it. */
static size_t bytes_with_one_more(const sl_table *t, const struct sl__shard *s, size_t extra,
                                  bool *grow)
{
    size_t b = s->bytes + extra;
    uint32_t n = s->count + 1;

    *grow = (uint64_t)n * 4 > (uint64_t)s->cap * 3;
    if (*grow)
        b += (size_t)s->cap * sizeof(uint64_t);
    if (n > (s->nchunks << t->chunk_shift)) {
        b += chunk_bytes(t);
        if (s->nchunks == s->dir_cap) /* the directory doubles too */
            b += (size_t)(dir_next(t, s) - s->dir_cap) * sizeof(void *);
    }
    return b;
}

/* Add one chunk, doubling the directory first if it is full. */
static int add_chunk(sl_table *t, struct sl__shard *s)
{
    if (s->nchunks == s->dir_cap) {
        uint32_t n = dir_next(t, s);
        if (n == s->dir_cap)
            return SL_EFULL; /* not reached: the budget stops first */
        struct sl__entry **d = sl__arena_alloc(&t->arena, n * sizeof(*d), false);
        if (d == NULL)
            return SL_ENOMEM;
        memcpy(d, s->chunks, s->dir_cap * sizeof(*d));
        memset(d + s->dir_cap, 0, (n - s->dir_cap) * sizeof(*d));
        sl__arena_free(&t->arena, s->chunks, s->dir_cap * sizeof(*d));
        s->chunks = d;
        s->bytes += (size_t)(n - s->dir_cap) * sizeof(*d);
        s->dir_cap = n;
    }
    struct sl__entry *c = sl__arena_alloc(&t->arena, chunk_bytes(t), false);
    if (c == NULL)
        return SL_ENOMEM;
    s->chunks[s->nchunks++] = c;
    s->bytes += chunk_bytes(t);
    return SL_OK;
}

/* Give back the chunks no entry needs any more (the entries are dense, so
 * the last ones): what an out-of-line state needs beside them. */
static void free_spare_chunks(sl_table *t, struct sl__shard *s)
{
    uint32_t need = (s->count + (1u << t->chunk_shift) - 1) >> t->chunk_shift;

    while (s->nchunks > need) {
        sl__arena_free(&t->arena, s->chunks[--s->nchunks], chunk_bytes(t));
        s->chunks[s->nchunks] = NULL;
        s->bytes -= chunk_bytes(t);
    }
}

/* Make room for one more entry with `extra` out-of-line bytes: drop drained
 * entries, then (policy permitting) evict; then grow the index or add a
 * chunk as needed. Evicting inline entries frees no bytes until a whole
 * chunk is empty: the chunks no entry needs are given back on the way. */
int sl__shard_make_room(sl_table *t, struct sl__shard *s, size_t extra, int64_t now_ns)
{
    for (;;) {
        bool grow;
        size_t need = bytes_with_one_more(t, s, extra, &grow);
        bool index_ok = !grow || s->cap < INDEX_MAX;

        if (need <= t->shard_budget && index_ok && s->count < ENTRIES_MAX)
            break;
        if (extra > 0 && s->nchunks > 1 && s->count + 1 <= ((s->nchunks - 1) << t->chunk_shift)) {
            free_spare_chunks(t, s);
            continue;
        }
        if (!grow && s->count == 0)
            return SL_ETOOBIG;
        if (sl__shard_expire(t, s, now_ns, s->count < EVICT_SCAN ? s->cap : EVICT_SCAN) > 0)
            continue;
        if (t->on_full == SL_ON_FULL_DENY) {
            s->full_denials++;
            return SL_EFULL;
        }
        if (!evict_one(t, s, now_ns)) { /* every entry pinned or holding a lease */
            s->full_denials++;
            return SL_EFULL;
        }
    }
    bool grow;
    bytes_with_one_more(t, s, extra, &grow);
    if (grow) {
        int rc = sl__shard_grow_index(t, s);
        if (rc != SL_OK)
            return rc;
    }
    if (s->count + 1 > (s->nchunks << t->chunk_shift))
        return add_chunk(t, s);
    return SL_OK;
}

size_t sl_table_sweep(sl_table *t, int64_t now_ns)
{
    size_t total = 0;

    for (unsigned i = 0; i < t->nshards; i++) {
        struct sl__shard *s = &t->shards[i];
        shard_lock(s);
        s->expire_hand = 0;
        total += sl__shard_expire(t, s, now_ns, s->cap);
        free_spare_chunks(t, s);
        shard_unlock(s);
    }
    return total;
}
