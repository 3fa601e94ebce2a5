/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table.h - the state table's internal interface, for the limiter (internal).
 *
 * The public sl_table_* calls lock one shard per call. The limiter needs more:
 * it checks several limits, on several shards, all-or-nothing, so it hashes
 * keys itself, locks the shards involved in ascending order, and works on
 * entries with the shards held. That is what this header offers; it does not
 * offer any way to iterate keys (there are none stored: only fingerprints).
 *
 * Ownership: a struct sl__ref points into a shard and is valid only while
 * that shard stays locked and no entry is created or removed in it.
 */
#ifndef SL_TABLE_H
#define SL_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

/* A key's 96-bit keyed fingerprint (SipHash-2-4-128 under the table's
 * secret, truncated). Entries are identified by it alone: the key bytes are
 * never stored. It also picks the shard and the home slot, so an entry can be
 * found again from a fingerprint printed in a lease token. */
struct sl__fp {
    uint32_t w[3];
};

/* A found entry, valid while its shard is locked and unchanged. */
struct sl__ref {
    void *state; /* the algorithm's state blob */
    void *entry; /* internal */
    unsigned shard;
    bool created; /* sl__table_get made the entry (others may have moved) */
    uint32_t pos; /* index slot */
};

/* Flags of sl__table_get(). */
#define SL__GET_CREATE 1u /* create a fresh state when absent */
#define SL__GET_PIN    2u /* protect the entry from eviction until put */

void sl__table_hash(const sl_table *t, const void *key, size_t len, struct sl__fp *fp);
unsigned sl__table_shard(const sl_table *t, const struct sl__fp *fp);
void sl__table_lock(sl_table *t, unsigned shard);
void sl__table_unlock(sl_table *t, unsigned shard);

/*
 * With fp's shard locked: find the entry of `fp` for limit `l`, creating a
 * fresh one (init at now_ns) with SL__GET_CREATE. An entry that belongs to a
 * different algorithm (or, out of line, a different limit id) is replaced
 * when creating and reported absent otherwise.
 * Returns 0 (ref filled), SL_ENOENT (absent, not created), SL_EFULL (no room
 * under the cap and nothing evictable, or on_full deny), SL_ETOOBIG (the
 * state alone exceeds a shard's share of the cap), SL_ENOMEM.
 * Creating may evict or move other entries of the shard: refs taken before
 * are stale afterwards (pinned entries are never evicted, but may move).
 */
int sl__table_get(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l, int64_t now_ns,
                  unsigned flags, struct sl__ref *ref);
/* After using ref's state at `now_ns`: record when it becomes drained (for
 * expiry) and whether it is out of quota (eviction spares it) and, with
 * unpin, make it evictable again. Shard still locked. */
void sl__table_put(sl_table *t, const struct sl__ref *ref, const struct sl_limit *l, int64_t now_ns,
                   bool unpin);
/* With the shard locked: find `fp` whatever its limit (SL_ENOENT if
 * absent), and remove the entry a ref names. */
int sl__table_find(sl_table *t, const struct sl__fp *fp, struct sl__ref *ref);
void sl__table_remove(sl_table *t, const struct sl__ref *ref);
/* Lock, release `lease` on the concurrency entry whose fingerprint begins
 * with fp->w[0], fp->w[1] (w[2] is ignored: lease tokens carry 64 bits),
 * using the limit copy stored with it, unlock. SL_ENOENT when the entry or
 * the lease is gone. */
int sl__table_release_fp(sl_table *t, const struct sl__fp *fp, int64_t now_ns, uint64_t lease,
                         int64_t latency_ns);
/* The batch path (table_batch.c): start loading fp's home index slot
 * without the lock (harmless if the index moves meanwhile), returning
 * whether the table looks larger than the caches (then prefetching entries
 * pays); with the shard locked briefly, start loading the entry its slot
 * names; and the check of sl_table_check() for a hashed key (cost > 0,
 * arguments valid). */
bool sl__table_prefetch_slot(const sl_table *t, const struct sl__fp *fp);
void sl__table_prefetch_entry(sl_table *t, const struct sl__fp *fp);
/* Does the table look larger than the caches (as sl__table_prefetch_slot
 * says, judged by the first shard's index, without a key)? */
bool sl__table_large(const sl_table *t);
int sl__table_check_fp(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l,
                       int64_t now_ns, uint64_t cost, struct sl_decision *d);
/* Are the table's arrays in a region the kernel accepted for transparent
 * huge pages (madvise(MADV_HUGEPAGE), table_mem.c)? Whether it has backed
 * it with them yet is the kernel's (AnonHugePages in /proc/PID/smaps). */
bool sl__table_huge_pages(const sl_table *t);
/* Index slots examined by lookups so far (for the hash-flooding test). */
uint64_t sl__table_probes(const sl_table *t);
/* With `shard` locked: a buffer of `size` bytes owned by the shard (kept
 * for reuse, counted in the cap), or NULL if it does not fit. */
void *sl__table_scratch(sl_table *t, unsigned shard, size_t size);
/* With fp's shard locked: decide `cost` against the state an absent key
 * `fp` of `l` would start with (fresh, or restored from what the key owed
 * when it was evicted) without storing anything (a peek at an absent key).
 * The state is built on the stack, or for a large one in the shard's
 * scratch buffer, so nothing is allocated per request once the buffer
 * exists; only a state that does not fit under the cap is built on the
 * heap. SL_ENOMEM if that fails. */
int sl__fresh_check(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l, int64_t now_ns,
                    uint64_t cost, struct sl_decision *d);
/* With fp's shard locked: make the fresh state `st` of `l` what a new key
 * `fp` would start with: restored from the summary of evicted debts if it
 * holds one for it (table_debt.c). */
void sl__table_restore_fresh(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l,
                             void *st, int64_t now_ns);

#endif /* SL_TABLE_H */
