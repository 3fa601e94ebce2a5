/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table.c - the keyed state table: sharded open-addressing index over dense
 * entry arrays, a hard memory cap, expiry of drained entries and CLOCK
 * eviction.
 *
 * Layout, per shard (one spinlock each, nothing shared between shards):
 * - an index of 8-byte slots, linear probing, backward-shift deletion (no
 *   tombstones), doubled while it fits under the shard's share of the cap;
 *   a slot holds the entry number, 33 hash bits (home position and a filter),
 *   a CLOCK reference bit, a pin bit, the out-of-line bit, the algorithm and
 *   a denying bit (out of quota at its last decision: evicted last);
 * - dense 40-byte entries in fixed-size chunks: 96-bit fingerprint, the
 *   second from which the state is drained, 24 bytes of state (inline) or a
 *   pointer to an out-of-line block holding a copy of the limit and the
 *   state (sliding_log, concurrency).
 * Keys are not stored: the 96-bit SipHash fingerprint under the embedder's
 * secret stands for them (accidental collision ~2^-96 per pair; crafted ones
 * need the secret).
 *
 * It does not decide anything (lib/algo does) and never reads a clock: every
 * time comes from the caller. Making room (expiry, eviction, the cap) is in
 * table_room.c; peek, reset and release in table_api.c.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "table_int.h"

void sl_table_config_init(struct sl_table_config *c)
{
    memset(c, 0, sizeof(*c));
    c->max_bytes = (size_t)64 << 20;
    c->shards = 0; /* chosen from max_bytes (shards_for) */
    c->on_full = SL_ON_FULL_EVICT;
}

/* Position of `fp` in the index, or -1; *free_pos gets the first empty slot
 * on its probe path (where it would be inserted). */
static int64_t lookup(const sl_table *t, struct sl__shard *s, const uint32_t fp[3],
                      uint32_t *free_pos)
{
    uint32_t mask = s->cap - 1, i = fp[0] & mask, n = 1;
    uint64_t h = fp_hash33(fp);

    /* Probes are counted once per lookup, not per slot: one write less in
     * the loop. */
    for (;; n++) {
        uint64_t slot = s->index[i];
        if (slot == 0) {
            if (free_pos)
                *free_pos = i;
            s->probes += n;
            return -1;
        }
        if ((slot >> S_HASH_SHIFT) == h) {
            const struct sl__entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
            if (e->fp[1] == fp[1] && ((e->fp[2] ^ fp[2]) & FP2_KEY) == 0 && e->fp[0] == fp[0]) {
                s->probes += n;
                return i;
            }
        }
        i = (i + 1) & mask;
    }
}

/* What `n` shards cost before they hold anything, besides their indexes,
 * directories and chunks (counted in their `bytes`): the headers and the
 * prefetch copies (rounded up for aligned_alloc, which wants a multiple of
 * the alignment). */
static size_t fixed_bytes_for(unsigned n)
{
    return n * sizeof(struct sl__shard) + ((n * sizeof(struct sl__pf) + 63) & ~(size_t)63);
}

/* Double the index (caller checked the budget). */
int sl__shard_grow_index(sl_table *t, struct sl__shard *s)
{
    uint32_t ncap = s->cap * 2, mask = ncap - 1;
    uint64_t *n = sl__arena_alloc(&t->arena, (size_t)ncap * sizeof(*n), true);

    if (n == NULL)
        return SL_ENOMEM;
    for (uint32_t i = 0; i < s->cap; i++) {
        uint64_t slot = s->index[i];
        if (slot == 0)
            continue;
        uint32_t j = slot_home(slot, mask);
        while (n[j] != 0)
            j = (j + 1) & mask;
        n[j] = slot;
    }
    sl__arena_free(&t->arena, s->index, (size_t)s->cap * sizeof(*n));
    s->index = n;
    s->bytes += (size_t)s->cap * sizeof(uint64_t);
    s->cap = ncap;
    shard_publish_index(t, s);
    s->clock_hand &= mask;
    s->expire_hand &= mask;
    return SL_OK;
}

/* Remove the entry in slot `pos`: free its out-of-line state, close the gap
 * in the index by shifting back, and move the last entry into its place so
 * the entry array stays dense. */
void sl__shard_remove_at(sl_table *t, struct sl__shard *s, uint32_t pos)
{
    uint32_t mask = s->cap - 1, i = pos, j = pos;
    uint64_t slot = s->index[pos];
    uint32_t idx = (uint32_t)(slot & S_IDX) - 1, last = s->count - 1;
    struct sl__entry *e = entry_at(t, s, idx);

    if (slot & S_DENY)
        s->denying--;
    if (slot & S_OOL) {
        struct sl__ool *o = (struct sl__ool *)(uintptr_t)e->st[0];
        s->bytes -= o->bytes;
        free(o);
    }
    for (;;) {
        j = (j + 1) & mask;
        uint64_t sj = s->index[j];
        if (sj == 0)
            break;
        uint32_t k = slot_home(sj, mask);
        /* The slot at j stays if its home lies cyclically in (i, j]. */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        s->index[i] = sj;
        i = j;
    }
    s->index[i] = 0;
    if (idx != last) {
        struct sl__entry *le = entry_at(t, s, last);
        *e = *le;
        uint32_t p = e->fp[0] & mask;
        while ((s->index[p] & S_IDX) != (uint64_t)last + 1)
            p = (p + 1) & mask;
        s->index[p] = (s->index[p] & ~S_IDX) | ((uint64_t)idx + 1);
    }
    s->count--;
}

/* --------------------------------------------------- expiry and eviction */

/* ------------------------------------------------------------ the table */

static int shard_init(sl_table *t, struct sl__shard *s)
{
    atomic_init(&s->lock, 0);
    s->cap = INDEX_MIN;
    s->index = sl__arena_alloc(&t->arena, s->cap * sizeof(uint64_t), true);
    s->dir_cap = DIR_MIN < t->max_chunks ? DIR_MIN : t->max_chunks;
    s->chunks = sl__arena_alloc(&t->arena, s->dir_cap * sizeof(*s->chunks), true);
    if (s->index == NULL || s->chunks == NULL)
        return SL_ENOMEM;
    s->bytes = s->cap * sizeof(uint64_t) + s->dir_cap * sizeof(*s->chunks);
    atomic_init(&t->pf[s - t->shards].index, 0);
    atomic_init(&t->pf[s - t->shards].mask, 0);
    shard_publish_index(t, s);
    return SL_OK;
}

static void shard_fini(sl_table *t, struct sl__shard *s)
{
    while (s->count > 0)
        sl__shard_remove_at(t, s, (uint32_t)(lookup(t, s, entry_at(t, s, 0)->fp, NULL)));
    for (uint32_t i = 0; i < s->nchunks; i++)
        sl__arena_free(&t->arena, s->chunks[i], chunk_bytes(t));
    sl__arena_free(&t->arena, s->chunks, s->dir_cap * sizeof(*s->chunks));
    sl__arena_free(&t->arena, s->index, s->cap * sizeof(uint64_t));
    free(s->scratch);
}

/* The shard count for `shards = 0`: the most (a power of two, at most
 * SHARDS_AUTO_MAX) that leave each at least SHARD_SHARE_MIN of the cap, but
 * never fewer than SHARDS_AUTO_MIN. */
static unsigned shards_for(size_t max_bytes)
{
    unsigned n = SHARDS_AUTO_MAX;

    while (n > SHARDS_AUTO_MIN && max_bytes / n < SHARD_SHARE_MIN)
        n /= 2;
    return n;
}

int sl_table_new(const struct sl_table_config *c, sl_table **out)
{
    unsigned n = c->shards ? c->shards : shards_for(c->max_bytes);
    sl_table *t;
    size_t budget, fixed;

    *out = NULL;
    if (n > SHARDS_MAX || (n & (n - 1)) != 0)
        return SL_EINVAL;
    if (c->on_full != SL_ON_FULL_EVICT && c->on_full != SL_ON_FULL_DENY)
        return SL_EINVAL;
    fixed = fixed_bytes_for(n) + sl__debt_bytes(c->max_bytes);
    if (c->max_bytes < fixed)
        return SL_EINVAL;
    budget = (c->max_bytes - fixed) / n;
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return SL_ENOMEM;
    /* Chunks small enough that at least 64 fit in a shard's share: each
     * shard's last chunk is partly empty, so with many shards (which two
     * threads want: fewer shared lock lines) big chunks would waste up to
     * a chunk per shard; this bounds that waste to ~1/64 of the cap. */
    t->chunk_shift = CHUNK_SHIFT_HI;
    while (t->chunk_shift > CHUNK_SHIFT_LO &&
           (sizeof(struct sl__entry) << t->chunk_shift) * 64 > budget)
        t->chunk_shift--;
    t->max_chunks = (uint32_t)(budget / chunk_bytes(t) + 1);
    t->nshards = n;
    t->shard_budget = budget;
    t->fixed_bytes = fixed;
    t->on_full = c->on_full;
    memcpy(t->secret, c->secret, sizeof(t->secret));
    /* The smallest shard: its index, its directory and one chunk. */
    if (INDEX_MIN * sizeof(uint64_t) + DIR_MIN * sizeof(void *) + chunk_bytes(t) > budget) {
        free(t);
        return SL_EINVAL;
    }
    /* The headers first: the region's first bytes (table_mem.c). */
    sl__arena_init(&t->arena, c->max_bytes, chunk_bytes(t));
    t->shards = sl__arena_alloc(&t->arena, n * sizeof(struct sl__shard), false);
    t->pf = sl__arena_alloc(&t->arena, fixed_bytes_for(n) - n * sizeof(struct sl__shard), false);
    if (t->shards == NULL || t->pf == NULL || sl__debt_init(t, c->max_bytes) != SL_OK) {
        sl__arena_free(&t->arena, t->shards, n * sizeof(struct sl__shard));
        sl__arena_free(&t->arena, t->pf, fixed_bytes_for(n) - n * sizeof(struct sl__shard));
        sl__debt_free(t);
        sl__arena_fini(&t->arena);
        free(t);
        return SL_ENOMEM;
    }
    memset(t->shards, 0, n * sizeof(struct sl__shard));
    for (unsigned i = 0; i < n; i++) {
        if (shard_init(t, &t->shards[i]) != SL_OK) {
            t->nshards = i + 1;
            sl_table_free(t);
            return SL_ENOMEM;
        }
    }
    *out = t;
    return SL_OK;
}

void sl_table_free(sl_table *t)
{
    if (t == NULL)
        return;
    for (unsigned i = 0; i < t->nshards; i++)
        shard_fini(t, &t->shards[i]);
    sl__arena_free(&t->arena, t->shards, t->nshards * sizeof(struct sl__shard));
    sl__arena_free(&t->arena, t->pf,
                   fixed_bytes_for(t->nshards) - t->nshards * sizeof(struct sl__shard));
    sl__debt_free(t);
    sl__arena_fini(&t->arena);
    free(t);
}

void sl_table_stats(const sl_table *t, struct sl_table_stats *out)
{
    uint32_t now_s = 0;

    memset(out, 0, sizeof(*out));
    out->bytes = t->fixed_bytes;
    for (unsigned i = 0; i < t->nshards; i++) {
        /* The lock is the table's own mutable part, even for a reader. */
        struct sl__shard *s = (struct sl__shard *)&t->shards[i];
        shard_lock(s);
        out->entries += s->count;
        out->bytes += s->bytes;
        out->evictions += s->evictions;
        out->expired += s->expired;
        out->full_denials += s->full_denials;
        out->evictions_denying += s->evictions_denying;
        out->summary_folds += s->debt_folds;
        out->summary_restores += s->debt_restores;
        if (s->now_s > now_s)
            now_s = s->now_s;
        shard_unlock(s);
    }
    out->summary_cells = (uint64_t)t->debt_lines * DEBT_CELLS_PER_LINE;
    out->summary_used = sl__debt_used(t, now_s);
}

/* ------------------------------------------------- internal (table.h) */

void sl__table_hash(const sl_table *t, const void *key, size_t len, struct sl__fp *fp)
{
    uint64_t h[2];

    sl_siphash13_128(t->secret, key, len, h); /* why 1-3: docs/architecture.md */
    fp->w[0] = (uint32_t)h[0];
    fp->w[1] = (uint32_t)(h[0] >> 32);
    fp->w[2] = (uint32_t)h[1];
}

unsigned sl__table_shard(const sl_table *t, const struct sl__fp *fp)
{
    /* Not the bits that pick the home slot: those would cluster per shard. */
    return fp->w[1] & (t->nshards - 1);
}

void sl__table_lock(sl_table *t, unsigned shard)
{
    shard_lock(&t->shards[shard]);
}

void sl__table_unlock(sl_table *t, unsigned shard)
{
    shard_unlock(&t->shards[shard]);
}

void *sl__table_scratch(sl_table *t, unsigned shard, size_t size)
{
    struct sl__shard *s = &t->shards[shard];

    if (size <= s->scratch_bytes)
        return s->scratch;
    if (s->bytes - s->scratch_bytes + size > t->shard_budget)
        return NULL;
    void *p = realloc(s->scratch, size);
    if (p == NULL)
        return NULL;
    s->bytes = s->bytes - s->scratch_bytes + size;
    s->scratch = p;
    s->scratch_bytes = size;
    return p;
}

uint64_t sl__table_probes(const sl_table *t)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < t->nshards; i++) {
        struct sl__shard *s = (struct sl__shard *)&t->shards[i];
        shard_lock(s);
        n += s->probes;
        shard_unlock(s);
    }
    return n;
}

/* Does the entry in `slot` hold a state for `l`, whose state is `size`
 * bytes? */
static bool entry_matches(struct sl__entry *e, uint64_t slot, const struct sl_limit *l, size_t size)
{
    bool ool = size > SL__STATE_INLINE;

    if (((slot & S_ALGO) >> S_ALGO_SHIFT) != (uint64_t)l->algo || !!(slot & S_OOL) != ool)
        return false;
    if (ool) {
        const struct sl__ool *o = (const struct sl__ool *)(uintptr_t)e->st[0];
        return o->lim.id == l->id && o->bytes == sizeof(struct sl__ool) + size;
    }
    return true;
}

/* Create the entry of `fp` for `l` (absent, shard locked). */
static int create(sl_table *t, struct sl__shard *s, const uint32_t fp[3], const struct sl_limit *l,
                  int64_t now_ns, unsigned flags, struct sl__ref *ref)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);
    size_t size = ops->state_size(l);
    bool ool = size > SL__STATE_INLINE;
    size_t extra = ool ? sizeof(struct sl__ool) + size : 0;
    struct sl__ool *o = NULL;
    uint32_t pos = 0; /* set by lookup(): the key is absent */
    int rc;

    if (extra > t->shard_budget)
        return SL_ETOOBIG;
    if (s->count > 0) /* drained for EXPIRE_GRACE_NS: as of that long ago */
        sl__shard_expire(t, s, now_ns - EXPIRE_GRACE_NS, EXPIRE_STEP);
    rc = sl__shard_make_room(t, s, extra, now_ns);
    if (rc != SL_OK)
        return rc;
    if (ool) {
        o = malloc(extra);
        if (o == NULL)
            return SL_ENOMEM;
        o->lim = *l;
        o->lim.name = NULL;      /* borrowed from a snapshot that may go away */
        o->lim.adaptive = false; /* its configuration did not come along (in the state) */
        o->bytes = extra;
        s->bytes += extra;
    }
    int64_t found = lookup(t, s, fp, &pos);
    assert(found < 0); /* absent, or removed above as another limit's */
    (void)found;
    uint16_t tag = sl__tag_of(t, l);
    uint32_t idx = s->count++;
    struct sl__entry *e = entry_at(t, s, idx);
    e->fp[0] = fp[0];
    e->fp[1] = fp[1];
    e->fp[2] = (fp[2] & FP2_KEY) | ((uint32_t)tag << FP2_TAG_SHIFT);
    memset(e->st, 0, sizeof(e->st));
    if (ool)
        e->st[0] = (uint64_t)(uintptr_t)o;
    /* Born unreferenced: a key seen once (a scan, a flood of one-off keys)
     * is the first CLOCK candidate; a second use earns the reference bit. */
    uint64_t slot = ((uint64_t)idx + 1) | (ool ? S_OOL : 0) | ((uint64_t)l->algo << S_ALGO_SHIFT) |
                    (fp_hash33(fp) << S_HASH_SHIFT);
    if (flags & SL__GET_PIN)
        slot |= S_PIN;
    s->index[pos] = slot;
    ref->state = ool ? (void *)o->state : (void *)e->st;
    ref->entry = e;
    ref->pos = pos;
    if (ops->init_seeded != NULL) /* the key's keyed hash: reproducible under one secret */
        ops->init_seeded(ref->state, l, now_ns,
                         ((uint64_t)fp[1] << 32 | fp[0]) ^ ((uint64_t)fp[2] << 16));
    else
        ops->init(ref->state, l, now_ns);
    if (sl__debt_restore(t, e->fp, tag, l, ref->state, now_ns))
        s->debt_restores++;
    e->whole_at_s = whole_at_seconds(ops->whole_at(ref->state, l));
    if (now_ns / SL_NS_PER_S > (int64_t)s->now_s && now_ns / SL_NS_PER_S <= UINT32_MAX)
        s->now_s = (uint32_t)(now_ns / SL_NS_PER_S);
    return SL_OK;
}

/* sl__table_get() for a limit whose state is `size` bytes (the caller has
 * the ops at hand: one indirect call less on the hot path). */
static int get_sized(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l, size_t size,
                     int64_t now_ns, unsigned flags, struct sl__ref *ref)
{
    unsigned si = sl__table_shard(t, fp);
    struct sl__shard *s = &t->shards[si];
    int64_t pos = lookup(t, s, fp->w, NULL);

    ref->shard = si;
    ref->created = false;
    if (pos >= 0) {
        uint64_t slot = s->index[pos];
        struct sl__entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
        if (entry_matches(e, slot, l, size)) {
            uint64_t marked = slot | S_REF | ((flags & SL__GET_PIN) ? S_PIN : 0);
            if (marked != slot) /* no store when set: keeps lines clean */
                s->index[pos] = marked;
            ref->state = entry_state(e, slot);
            ref->entry = e;
            ref->pos = (uint32_t)pos;
            return SL_OK;
        }
        /* A state of another algorithm or limit under this key: start over. */
        if (!(flags & SL__GET_CREATE))
            return SL_ENOENT;
        if (slot & S_PIN)
            return SL_EINVAL;
        sl__shard_remove_at(t, s, (uint32_t)pos);
    } else if (!(flags & SL__GET_CREATE)) {
        return SL_ENOENT;
    }
    ref->created = true;
    return create(t, s, fp->w, l, now_ns, flags, ref);
}

int sl__table_get(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l, int64_t now_ns,
                  unsigned flags, struct sl__ref *ref)
{
    return get_sized(t, fp, l, sl_algo_state_size(l), now_ns, flags, ref);
}

void sl__table_put(sl_table *t, const struct sl__ref *ref, const struct sl_limit *l, int64_t now_ns,
                   bool unpin)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);
    struct sl__shard *s = &t->shards[ref->shard];
    struct sl__entry *e = ref->entry;

    e->whole_at_s = whole_at_seconds(ops->whole_at(ref->state, l));
    mark_denying(s, ref->pos, ops->denying(ref->state, l, now_ns));
    if (unpin)
        s->index[ref->pos] &= ~S_PIN;
}

/* Remove the entry `ref` names (shard locked). */
void sl__table_remove(sl_table *t, const struct sl__ref *ref)
{
    sl__shard_remove_at(t, &t->shards[ref->shard], ref->pos);
}

/* Find `fp` with its shard locked, whatever its limit. */
int sl__table_find(sl_table *t, const struct sl__fp *fp, struct sl__ref *ref)
{
    unsigned si = sl__table_shard(t, fp);
    struct sl__shard *s = &t->shards[si];
    int64_t pos = lookup(t, s, fp->w, NULL);

    if (pos < 0)
        return SL_ENOENT;
    uint64_t slot = s->index[pos];
    struct sl__entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
    ref->shard = si;
    ref->pos = (uint32_t)pos;
    ref->entry = e;
    ref->state = entry_state(e, slot);
    return SL_OK;
}

/* The out-of-line entry whose fingerprint starts with fp[0], fp[1] (a lease
 * token carries only those 64 bits), or -1. */
static int64_t lookup64(const sl_table *t, struct sl__shard *s, const uint32_t fp[3])
{
    uint32_t mask = s->cap - 1, i = fp[0] & mask;

    for (uint64_t slot; (slot = s->index[i]) != 0; i = (i + 1) & mask) {
        if ((uint32_t)(slot >> S_HASH_SHIFT) != fp[0] || !(slot & S_OOL))
            continue;
        const struct sl__entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
        if (e->fp[1] == fp[1])
            return i;
    }
    return -1;
}

int sl__table_release_fp(sl_table *t, const struct sl__fp *fp, int64_t now_ns, uint64_t lease,
                         int64_t latency_ns)
{
    unsigned si = sl__table_shard(t, fp);
    struct sl__shard *s = &t->shards[si];
    int rc = SL_ENOENT;

    shard_lock(s);
    int64_t pos = lookup64(t, s, fp->w);
    if (pos >= 0) {
        struct sl__entry *e = entry_at(t, s, (uint32_t)(s->index[pos] & S_IDX) - 1);
        struct sl__ool *o = (struct sl__ool *)(uintptr_t)e->st[0];
        const struct sl__algo_ops *ops = sl__algo_ops(o->lim.algo);
        if (ops->release != NULL) {
            rc = ops->release(o->state, &o->lim, now_ns, lease, latency_ns);
            e->whole_at_s = whole_at_seconds(ops->whole_at(o->state, &o->lim));
            mark_denying(s, (uint32_t)pos, ops->denying(o->state, &o->lim, now_ns));
        }
    }
    shard_unlock(s);
    return rc;
}

void sl__table_restore_fresh(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l,
                             void *st, int64_t now_ns)
{
    sl__debt_restore(t, fp->w, sl__tag_of(t, l), l, st, now_ns);
}

bool sl__table_prefetch_slot(const sl_table *t, const struct sl__fp *fp)
{
    uint64_t slots = table_prefetch(t, sl__table_shard(t, fp), fp->w);

    /* The table's index, estimated from this shard's: past 2^17 slots
     * (1 MiB of index, 2-4 MiB of entries) it outgrows the core's caches. */
    return slots * t->nshards >= (UINT64_C(1) << 17);
}

bool sl__table_large(const sl_table *t)
{
    unsigned mask = atomic_load_explicit(&t->pf[0].mask, memory_order_relaxed);

    return ((uint64_t)mask + 1) * t->nshards >= (UINT64_C(1) << 17);
}

void sl__table_prefetch_entry(sl_table *t, const struct sl__fp *fp)
{
    struct sl__shard *s = &t->shards[sl__table_shard(t, fp)];
    uint64_t h = fp_hash33(fp->w);

    shard_lock(s);
    uint32_t mask = s->cap - 1, i = fp->w[0] & mask;
    for (uint64_t slot; (slot = s->index[i]) != 0; i = (i + 1) & mask) {
        if ((slot >> S_HASH_SHIFT) == h) {
            /* 40-byte entries may straddle two lines. */
            const char *e = (const char *)entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
            __builtin_prefetch(e);
            __builtin_prefetch(e + sizeof(struct sl__entry) - 1);
            break;
        }
    }
    shard_unlock(s);
}

/* sl_table_check() once the key is hashed and the arguments checked (cost
 * above 0): lock one shard, find or create, check and commit, note when the
 * state drains, unlock. */
static inline int check_fp(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l,
                           const struct sl__algo_ops *ops, int64_t now_ns, uint64_t cost,
                           struct sl_decision *d)
{
    struct sl__shard *s = &t->shards[sl__table_shard(t, fp)];
    struct sl__ref ref;
    int rc;

    shard_lock(s);
    rc = get_sized(t, fp, l, ops->state_size(l), now_ns, SL__GET_CREATE, &ref);
    if (rc == SL_OK) {
        ops->check(ref.state, l, now_ns, cost, d);
        if (d->verdict != SL_DENY || l->count_rejected)
            ops->commit(ref.state, l, now_ns, cost, d);
        ((struct sl__entry *)ref.entry)->whole_at_s = whole_at_seconds(ops->whole_at(ref.state, l));
        /* remaining 0 is ops->denying() at this instant (the decision's
         * contract), without another call on the hot path. */
        mark_denying(s, ref.pos, d->remaining == 0);
    }
    shard_unlock(s);
    return rc;
}

int sl__table_check_fp(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l,
                       int64_t now_ns, uint64_t cost, struct sl_decision *d)
{
    return check_fp(t, fp, l, sl__algo_ops(l->algo), now_ns, cost, d);
}

/*
 * The hot path, here beside the layout so that hashing aside it is one
 * function (check_fp). `l` must be validated (sl_limit_validate).
 * The state is found by key alone: callers that mix limits on one key should
 * put the limit's id into the key, as the limiter does (docs/contracts.md §Rules); an
 * entry of another algorithm, or an out-of-line one of another limit id,
 * starts fresh.
 */
int sl_table_check(sl_table *t, const void *key, size_t key_len, const struct sl_limit *l,
                   int64_t now_ns, uint64_t cost, struct sl_decision *d)
{
    const struct sl__algo_ops *ops;
    struct sl__fp fp;

    if (t == NULL || (key == NULL && key_len > 0) || l == NULL)
        return SL_EINVAL;
    if (key_len > SL_KEY_MAX)
        return SL_ETOOBIG;
    ops = sl__algo_ops(l->algo);
    if (ops == NULL)
        return SL_EINVAL;
    if (cost == 0)
        return sl_table_peek(t, key, key_len, l, now_ns, d);
    sl__table_hash(t, key, key_len, &fp);
    /* Before the lock: the atomic exchange is a full barrier, a prefetch
     * issued before it still overlaps it. */
    table_prefetch(t, sl__table_shard(t, &fp), fp.w);
    return check_fp(t, &fp, l, ops, now_ns, cost, d);
}
