/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table_int.h - the state table's layout, shared by table.c (index, entries,
 * lookups) and table_room.c (expiry, eviction, the memory cap) (internal).
 *
 * Nothing outside lib/table*.c includes it: the limiter uses table.h.
 * Every function here expects the shard's lock to be held unless it is the
 * lock itself.
 */
#ifndef SL_TABLE_INT_H
#define SL_TABLE_INT_H

#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "table.h"

/* shards = 0: as many as fit with SHARD_SHARE_MIN bytes of the cap each,
 * between SHARDS_AUTO_MIN and SHARDS_AUTO_MAX. More shards let two threads
 * on different keys mostly miss each other's lock lines, but spread one
 * thread's keys over more headers, indexes and chunks (more cache lines).
 * `bench_table --ab-shards 64 1024 2048 4096`, gcra, 2026-11-21: hot 1k
 * keys one thread 20.7-20.9 / 19.4-19.7 / 18.4-18.7 / 17.9-18.6 M/s, two
 * threads over one 1.53-1.58 / 1.69-1.71 / 1.80-1.81 / 1.85-1.88x, 1M keys
 * one thread 2.8 / 2.6-2.8 / 2.5-2.6 / 2.4-2.7 M/s. 2048 keeps the
 * two-thread scaling and a margin under 64 bytes a key (4096: 63.5). */
#define SHARDS_AUTO_MIN 64u
#define SHARDS_AUTO_MAX 2048u
#define SHARD_SHARE_MIN ((size_t)32 << 10)
#define SHARDS_MAX      65536u
#define INDEX_MIN       16u
#define INDEX_MAX       (1u << 25)       /* slots per shard */
#define ENTRIES_MAX     ((1u << 24) - 1) /* entry numbers fit 24 bits */
#define CHUNK_SHIFT_LO  3u
#define CHUNK_SHIFT_HI  9u /* 512 entries = 20 KiB */
#define DIR_MIN         4u /* chunk directory slots a shard starts with */
/* Slots examined for a drained entry before evicting a live one: each costs
 * a likely cache miss on the entry, and a flood of new keys against a full
 * table pays it per key, so it stays small; the amortised step on every insert
 * keeps sweeping drained entries out meanwhile. */
#define EVICT_SCAN  16u
#define EXPIRE_STEP 2u /* slots examined per insert */
/* How long an entry stays drained before the step on inserts drops it (the
 * memory cap and sl_table_sweep do not wait). A drained state equals a
 * fresh one, so keeping it decides nothing differently; dropping it only
 * pays when its key does not come back soon: a key that does (a large key
 * space whose states drain between two of its requests, as a fast token
 * bucket's do) would be created again, with the removal's moves, the debt
 * summary's lookup and a new entry each time, and every removal would make
 * room that the hand then keeps emptying. */
#define EXPIRE_GRACE_NS (4 * SL_NS_PER_S)

/* Slot bits. */
#define S_IDX        UINT64_C(0xffffff) /* entry number + 1; 0 = empty slot */
#define S_REF        (UINT64_C(1) << 24)
#define S_PIN        (UINT64_C(1) << 25)
#define S_OOL        (UINT64_C(1) << 26)
#define S_ALGO_SHIFT 27
#define S_ALGO       (UINT64_C(7) << S_ALGO_SHIFT)
_Static_assert(SL_ALGO_COUNT <= 8, "the slot keeps the algorithm in 3 bits (S_ALGO)");
#define S_DENY       (UINT64_C(1) << 30) /* out of quota at its last decision */
#define S_HASH_SHIFT 31                  /* 33 hash bits: fp.w[0] and 1 bit of fp.w[2] */

/* fp[2] of an entry: the low half is the fingerprint's, the high half the
 * entry's limit tag (table_debt.c), so that an evicted entry's debt goes to
 * its own limit's part of the summary; lookups compare the low half only
 * (an 80-bit fingerprint: ~2^-80 per pair, under the secret). */
#define FP2_KEY       UINT32_C(0xffff)
#define FP2_TAG_SHIFT 16

struct sl__entry {
    uint32_t fp[3];
    uint32_t whole_at_s; /* Unix seconds (rounded up) from which drained */
    uint64_t st[3];      /* inline state, or st[0] = struct sl__ool * */
};

/* An out-of-line state: a copy of its limit (name dropped), so that a lease
 * can be released from its token alone and a changed limit is noticed. */
struct sl__ool {
    struct sl_limit lim;
    size_t bytes; /* whole allocation, counted in the cap */
    alignas(8) uint64_t state[];
};

/* What a check of an existing key touches comes first, in the line of the
 * lock (with thousands of shards, every line more is a cache miss more). */
struct sl__shard {
    alignas(64) atomic_int lock;
    uint32_t cap; /* index slots, power of two */
    uint64_t *index;
    struct sl__entry **chunks; /* directory of dir_cap chunk pointers */
    uint64_t probes;
    uint32_t count;   /* entries */
    uint32_t nchunks; /* entry chunks allocated */
    uint32_t clock_hand, expire_hand;
    uint32_t dir_cap; /* directory slots, doubled up to max_chunks */
    uint32_t denying; /* slots marked S_DENY (in the padding before `bytes`) */
    size_t bytes;     /* index + chunks + directory + out-of-line */
    uint64_t evictions, expired, full_denials;
    uint64_t evictions_denying;         /* of the evictions, entries marked S_DENY */
    void *scratch;                      /* a fresh state for peeks at absent keys */
    size_t scratch_bytes;               /* its size, counted in `bytes` */
    uint32_t now_s;                     /* the latest second a key was created at */
    uint64_t debt_folds, debt_restores; /* table_debt.c's counts for this shard */
};

/* The summary of what evicted entries owe (table_debt.c): a pool of 64-byte
 * lines of DEBT_CELLS_PER_LINE cells, each cell (until_s << 32 | amount),
 * carved into one array per limit tag; lines [0, overflow) are shared by
 * the limits that get none. */
#define DEBT_CELLS_PER_LINE 8u
#define DEBT_SHARE_DIV      16u /* the pool: 1/16 of the cap */
#define DEBT_ARRAY_DIV      8u  /* a limit's array, and the shared one: 1/8 of the pool */
/* The limit tags: slots for limit ids (a tag is 16 bits; 0 = none: shared),
 * 16 bytes each, 1/TAGS_SHARE_DIV of the cap. */
#define TAGS_MAX       32768u
#define TAGS_MIN       64u
#define TAGS_SHARE_DIV 256u
#define TAGS_PROBES    32u

struct sl__tag {
    _Atomic uint64_t id;    /* the limit's id ^ its name's hash (0 = free; 0 is kept as 1) */
    _Atomic uint64_t where; /* its array: first line << 32 | lines; 0 = none yet */
};

/* Per shard, copies of its `index` and `cap - 1`, written under the shard's
 * lock whenever the index moves, read WITHOUT the lock only to compute an
 * address to prefetch (table_prefetch): atomics so that this read is no
 * data race. A stale pair only makes a useless prefetch (prefetches never
 * fault); nothing is ever loaded through them. Kept apart from the shard
 * headers, in a small dense array, so that the slot's address does not wait
 * for the header's cache miss (with thousands of shards, over a large table,
 * the header misses too). */
struct sl__pf {
    atomic_uintptr_t index;
    atomic_uint mask;
};

/* The region the table's arrays are carved from (table_mem.c). */
#define SL__ARENA_CLASSES 40u
struct sl__arena {
    char *base; /* NULL: none, the C allocator serves */
    size_t size;
    _Atomic size_t used;                      /* bump offset */
    _Atomic uint64_t head[SL__ARENA_CLASSES]; /* free lists: tag << 32 | granule + 1 */
    _Atomic uint32_t *link;                   /* per granule: the next free one + 1 */
    uint32_t chunk_granules;                  /* class 0's size */
    bool huge;                                /* madvise(MADV_HUGEPAGE) accepted */
};

struct sl_table {
    struct sl__shard *shards;
    struct sl__pf *pf; /* nshards */
    unsigned nshards;
    unsigned chunk_shift;
    uint32_t max_chunks;
    size_t shard_budget; /* bytes per shard */
    size_t fixed_bytes;  /* the shard array itself */
    enum sl_on_full on_full;
    uint8_t secret[16];
    /* The limit tags and the summary (table_debt.c), shared by all shards,
     * read and claimed with atomics, without a lock; counted in
     * fixed_bytes. A tag is its slot + 1. */
    struct sl__tag *tags;
    uint32_t tags_mask;
    _Atomic uint64_t *debt; /* debt_lines * DEBT_CELLS_PER_LINE cells, 64-byte aligned */
    void *debt_block;       /* what holds them (freed) */
    uint32_t debt_lines;
    uint32_t debt_shared;       /* lines of the shared array, from line 0 */
    _Atomic uint32_t debt_next; /* the first line not yet carved */
    struct sl__arena arena;
};

/* ---------------------------------------------------------------- locks */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Test-and-test-and-set: uncontended it is one atomic exchange; contended it
 * spins on a read, then yields so a preempted holder can run. */
static inline void shard_lock(struct sl__shard *s)
{
    for (unsigned n = 0;; n++) {
        if (!atomic_load_explicit(&s->lock, memory_order_relaxed) &&
            !atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
            return;
        if (n < 64)
            cpu_relax();
        else
            sched_yield();
    }
}

static inline void shard_unlock(struct sl__shard *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

/* ------------------------------------------------------------- helpers */

static inline uint64_t fp_hash33(const uint32_t fp[3])
{
    return (uint64_t)fp[0] | ((uint64_t)(fp[2] & 1) << 32);
}

static inline uint32_t slot_home(uint64_t slot, uint32_t mask)
{
    return (uint32_t)(slot >> S_HASH_SHIFT) & mask;
}

static inline struct sl__entry *entry_at(const sl_table *t, const struct sl__shard *s, uint32_t idx)
{
    return &s->chunks[idx >> t->chunk_shift][idx & ((1u << t->chunk_shift) - 1)];
}

static inline size_t chunk_bytes(const sl_table *t)
{
    return sizeof(struct sl__entry) << t->chunk_shift;
}

/* Unix seconds, rounded up, from which the state is drained. */
static inline uint32_t whole_at_seconds(int64_t whole_at_ns)
{
    if (whole_at_ns <= 0)
        return 0;
    int64_t s = whole_at_ns / SL_NS_PER_S + (whole_at_ns % SL_NS_PER_S != 0);
    return s >= (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

static inline bool drained(const struct sl__entry *e, int64_t now_ns)
{
    if (e->whole_at_s == UINT32_MAX)
        return false;
    return now_ns >= (int64_t)e->whole_at_s * SL_NS_PER_S;
}

/* Mark the entry in slot `pos` as denying or not (its state out of quota
 * at its last decision: what eviction spares), keeping the shard's count.
 * No store when the mark is unchanged, which is nearly always. */
static inline void mark_denying(struct sl__shard *s, uint32_t pos, bool deny)
{
    uint64_t slot = s->index[pos];

    if (!!(slot & S_DENY) == deny)
        return;
    s->index[pos] = slot ^ S_DENY;
    if (deny)
        s->denying++;
    else
        s->denying--;
}

static inline void *entry_state(struct sl__entry *e, uint64_t slot)
{
    if (slot & S_OOL) {
        struct sl__ool *o = (struct sl__ool *)(uintptr_t)e->st[0];
        return o->state;
    }
    return e->st;
}

/* Publish shard `s`'s index address for lock-free prefetching (its lock
 * held, or the table being built). */
static inline void shard_publish_index(sl_table *t, const struct sl__shard *s)
{
    struct sl__pf *p = &t->pf[s - t->shards];

    atomic_store_explicit(&p->index, (uintptr_t)s->index, memory_order_relaxed);
    atomic_store_explicit(&p->mask, s->cap - 1, memory_order_relaxed);
}

/* Start loading shard `si`'s header (its lock is taken next) and the home
 * slot of `fp` in its index, without taking the lock, so that both misses
 * overlap each other and whatever the caller does meanwhile. Returns the
 * shard's index size in slots (as published: possibly stale). */
static inline uint32_t table_prefetch(const sl_table *t, unsigned si, const uint32_t fp[3])
{
    const struct sl__pf *p = &t->pf[si];
    uintptr_t ix = atomic_load_explicit(&p->index, memory_order_relaxed);
    unsigned mask = atomic_load_explicit(&p->mask, memory_order_relaxed);

    __builtin_prefetch(&t->shards[si], 1);
    __builtin_prefetch((const void *)(ix + (uintptr_t)(fp[0] & mask) * sizeof(uint64_t)));
    return mask + 1;
}

/* ------------------------------------------------------------- memory */

/* table_mem.c: reserve the region (none when it cannot be: then alloc and
 * free are malloc/calloc and free); a block of `bytes` (zeroed when
 * `zero`), NULL when out of memory; give back a block of `bytes` (as asked
 * for). Any thread, no lock. */
void sl__arena_init(struct sl__arena *a, size_t max_bytes, size_t chunk_bytes);
void sl__arena_fini(struct sl__arena *a);
void *sl__arena_alloc(struct sl__arena *a, size_t bytes, bool zero);
void sl__arena_free(struct sl__arena *a, void *p, size_t bytes);

/* --------------------------------------------------------- index basics */

/* table.c: close the slot `pos` and free its entry; double the index. */
void sl__shard_remove_at(sl_table *t, struct sl__shard *s, uint32_t pos);
int sl__shard_grow_index(sl_table *t, struct sl__shard *s);
/* table_room.c: drop drained entries among `n` slots from the expiry hand
 * (returns how many); make room for one more entry of `extra` bytes out of
 * line (SL_OK, SL_EFULL, SL_ETOOBIG, SL_ENOMEM). */
uint32_t sl__shard_expire(sl_table *t, struct sl__shard *s, int64_t now_ns, uint32_t n);
int sl__shard_make_room(sl_table *t, struct sl__shard *s, size_t extra, int64_t now_ns);

/* table_debt.c: the summary of what evicted entries owe.
 * - debt_bytes: the tags' and the summary's size for a cap of `max_bytes`
 *   (part of the table's fixed bytes); debt_init allocates them;
 * - tag_of: the tag of limit `l` (by id and name; 0: no slot left,
 *   shared), no lock;
 * - fold: before evicting the entry in `slot` (its shard locked, not yet
 *   drained: a drained one owes nothing), put what it owes into its limit's
 *   cells; false when it cannot go (a lease held);
 * - restore: make the fresh state `st` of a new key `fp` of `l` (tag `tag`)
 *   at least as restrictive as its cells say it owes; true if they did;
 * - used: cells holding a debt not yet whole at `now_s`. */
size_t sl__debt_bytes(size_t max_bytes);
int sl__debt_init(sl_table *t, size_t max_bytes);
void sl__debt_free(sl_table *t);
uint16_t sl__tag_of(sl_table *t, const struct sl_limit *l);
bool sl__debt_fold(sl_table *t, uint64_t slot, const struct sl__entry *e, int64_t now_ns);
bool sl__debt_restore(sl_table *t, const uint32_t fp[3], uint16_t tag, const struct sl_limit *l,
                      void *st, int64_t now_ns);
uint64_t sl__debt_used(const sl_table *t, uint32_t now_s);

#endif /* SL_TABLE_INT_H */
