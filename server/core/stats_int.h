/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats_int.h - the statistics registry's layout, shared by stats.c (the
 * writers), stats_key.c (key texts) and stats_read.c (the reader).
 * Callers use stats.h.
 *
 * Every field a reader may load while its worker writes it is atomic and
 * written with relaxed stores by that one worker. Two seqlocks make the
 * multi-field updates readable: a ring slot's `stamp` (0 while the slot is
 * being cleared for a new second) and a key counter's `seq` (odd while it
 * is being replaced).
 */
#ifndef SL_SERVER_STATS_INT_H
#define SL_SERVER_STATS_INT_H

#include <stdatomic.h>

#include "stats.h"

/* Store round-trip histogram: bucket 2k covers [2^k, 1.5 x 2^k) ns and
 * 2k+1 covers [1.5 x 2^k, 2^(k+1)) ns; below 256 ns and above 2^36 ns
 * (68 s) clamp into the first and last. */
#define SL__LAT_MIN_LOG 8
#define SL__LAT_N       ((36 - SL__LAT_MIN_LOG) * 2)

/* One Space-Saving counter. */
struct sl__stats_key {
    _Atomic uint32_t seq;   /* odd while being replaced */
    _Atomic uint32_t count; /* limited decisions, over-estimated by at most err */
    _Atomic uint32_t err;   /* the count it took over from the key it replaced */
    _Atomic uint32_t len;   /* bytes of text; SL__KEY_PARTIAL set when cut */
    _Atomic int64_t epoch;  /* the window it counts in; another: free */
    _Atomic uint64_t hash;
    _Atomic uint64_t text[SL__STATS_KEY_MAX / 8];
};
#define SL__KEY_PARTIAL 0x8000u

/*
 * The counters of one window (windows alternate: epoch & 1). `keys` is
 * what readers see (a counter whose epoch is not a window they show is
 * ignored); the rest is the writer's own: Space-Saving's counts in a
 * min-heap (the counter to take over is the root) and a hash index from a
 * key's hash to its counter, so that counting a key costs a probe and a
 * sift, not a scan.
 */
struct sl__stats_gen {
    struct sl__stats_key *keys; /* [top_keys] */
    int64_t epoch;              /* the window counted; -1: none yet */
    uint32_t n;                 /* counters in use */
    uint32_t index_mask;
    uint32_t *heap;  /* [top_keys] counters, smallest count first */
    uint32_t *pos;   /* [top_keys] a counter's place in heap */
    uint32_t *cnt;   /* [top_keys] */
    uint64_t *hash;  /* [top_keys] */
    uint16_t *index; /* [index_mask + 1] counter + 1 by hash; 0 free */
    void *mem;       /* the block heap..index live in */
};

/* One (domain, limit) pair of one worker. */
struct sl__stats_series {
    _Atomic uint32_t ready; /* labels written (release) */
    uint16_t domain_len, limit_len;
    uint64_t hash; /* of the labels */
    char domain[96];
    char limit[96];
    _Atomic uint32_t *ring; /* [SL__STATS_SECONDS][SL__ST_N] */
    struct sl__stats_gen gen[2];
};

/* A limit seen before, for the current snapshot: its pair. */
struct sl__stats_cached {
    const struct sl_limit *lim;
    uint32_t series;
};
#define SL__STATS_CACHE 256

/* One worker's block; only that worker writes it. */
struct sl__stats_w {
    _Alignas(64) int64_t cur_sec; /* the newest second written (writer only) */
    size_t cur_slot;              /* its ring slot */
    sl_rules *cache_rules;        /* the snapshot `cache` is for (a reference) */
    struct sl__stats_cached cache[SL__STATS_CACHE];
    uint32_t *index; /* pair by labels: series + 1, 0 free; index_mask + 1 slots */
    size_t index_mask;
    _Atomic uint32_t n_series;                /* pairs in use (release: readers see them ready) */
    struct sl__stats_series *series;          /* [max_series] */
    _Atomic uint64_t dropped;                 /* decisions of pairs past max_series */
    _Atomic int64_t stamp[SL__STATS_SECONDS]; /* the second each slot holds; 0 clearing */
    _Atomic uint32_t *lat;                    /* [SL__STATS_SECONDS][SL__LAT_N] */
    _Atomic uint32_t fail[SL__STATS_SECONDS];
    char *ring;         /* [SL__STATS_RING] key texts of answers to come (writer only) */
    uint64_t ring_head; /* bytes ever written to it */
};

/* A ring record per descriptor: flags, length, text. */
#define SL__KEPT_PARTIAL 1u
#define SL__KEPT_OWN     2u

/* The key texts of a decision kept in the ring, decoded on its worker. */
struct sl__stats_kept {
    size_t n;
    uint16_t off[SL_MAX_DESCRIPTORS], len[SL_MAX_DESCRIPTORS];
    uint8_t flags[SL_MAX_DESCRIPTORS];
    char bytes[SL_MAX_DESCRIPTORS * (SL__STATS_KEY_MAX + 2)];
};
/* Decode so's record from w's ring into k; false when the ring has since
 * wrapped over it (or nothing was kept). */
bool sl__stats_kept_read(const struct sl__stats_w *w, const struct sl__stats_op *so,
                         struct sl__stats_kept *k);

struct sl__stats {
    struct sl__stats_config cfg;
    unsigned workers;
    uint8_t secret[16];
    size_t bytes;
    struct sl__stats_w *w; /* [workers] */
};

/* Relaxed bump of a single-writer counter. */
static inline void sl__stats_bump(_Atomic uint32_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* The raw text of descriptor d as stats.keys says (stats_key.c): KEY US
 * VALUE RS ... as sent (values cut with truncate), or 16 hex digits of a
 * keyed hash (hash). At most SL__STATS_KEY_MAX bytes into out; returns
 * the length; *partial when cut or hashed. */
size_t sl__stats_key_text(const struct sl__stats *s, const struct sl_descriptor *d, char *out,
                          bool *partial);
/* Count one limited decision of key text[0..len) in pair `ser` at now_ns. */
void sl__stats_top_add(const struct sl__stats *s, struct sl__stats_series *ser, const char *text,
                       size_t len, bool partial, int64_t now_ns);
/* A pair's two windows of top_keys counters: SL_OK or SL_ENOMEM (then
 * sl__stats_gen_free cleans up). */
int sl__stats_gen_init(struct sl__stats_gen *g, unsigned top_keys);
void sl__stats_gen_free(struct sl__stats_gen *g);
size_t sl__stats_gen_bytes(unsigned top_keys);

#endif /* SL_SERVER_STATS_INT_H */
