/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table_mem.c - where the table's arrays live: one region of address space
 * per table, reserved at creation (max_bytes, untouched pages cost
 * nothing), 2 MiB-aligned and offered to transparent huge pages
 * (madvise(MADV_HUGEPAGE)), from which the shard headers, the indexes, the
 * chunk directories and the entry chunks are carved.
 *
 * Only regions of at least HUGE_MIN are offered: a smaller table is within
 * the TLB's reach anyway, and a huge page would multiply what it holds.
 *
 * Why: over a table larger than the caches every decision misses on the
 * shard header, the index slot and the entry, and with 4 KiB pages each of
 * those lines is also a TLB miss (expensive under nested paging); with the
 * arrays packed in a few 2 MiB pages the translations stay cached. Packing
 * alone (blocks carved one after another, not scattered over the C heap)
 * helps even where huge pages are refused.
 *
 * How: a bump offset (atomic) hands out fresh blocks, whole 64-byte
 * granules; a freed block goes to a lock-free list of its size class (a
 * power of two of granules, or the table's chunk size), from which a later
 * request of that class takes it first. The lists' links live in a side
 * array of the region's granules, read and written only atomically; their
 * heads carry a tag against ABA. When the region is used up, cannot be
 * reserved, or the build is under the address sanitizer (it watches the C
 * heap), the C allocator serves: correctness never depends on the region. Nothing
 * here is on a decision's path: blocks come and go when a shard's index
 * doubles or it gains or gives back a chunk.
 *
 * It does not count bytes against the cap: the shards do, in their own
 * `bytes`, with the sizes they asked for.
 */
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "table_int.h"

/* Off where a sanitizer watches the C heap for overflows and leaks (the
 * thread sanitizer keeps it: it checks the lists' atomics). */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define ARENA_OFF 1
#endif
#endif

#define GRANULE     64u
#define HUGE_BYTES  ((size_t)2 << 20)
#define ARENA_LIMIT ((size_t)64 << 30) /* granule numbers fit 32 bits with room */
/* Below this a table's arrays are within the TLB's reach with small pages,
 * and a huge page would make a 1 MiB table (the admin guard's) hold 2 MiB. */
#define HUGE_MIN ((size_t)16 << 20)

#if defined(__linux__) && defined(MAP_NORESERVE) && !defined(ARENA_OFF)
/* Reserve `bytes` (a multiple of HUGE_BYTES) at a 2 MiB-aligned address. */
static void *reserve(size_t bytes)
{
    size_t over = bytes + HUGE_BYTES;
    char *p = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
    size_t head = a - (uintptr_t)p, tail = over - head - bytes;
    if (head > 0)
        munmap(p, head);
    if (tail > 0)
        munmap((char *)a + bytes, tail);
    return (void *)a;
}

void sl__arena_init(struct sl__arena *a, size_t max_bytes, size_t chunk_bytes)
{
    size_t bytes = (max_bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);

    memset(a, 0, sizeof(*a));
    if (bytes > ARENA_LIMIT)
        return;
    a->base = reserve(bytes);
    if (a->base == NULL)
        return;
    a->link = mmap(NULL, bytes / GRANULE * sizeof(*a->link), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a->link == MAP_FAILED) {
        munmap(a->base, bytes);
        a->base = NULL;
        a->link = NULL;
        return;
    }
    a->size = bytes;
    a->chunk_granules = (uint32_t)((chunk_bytes + GRANULE - 1) / GRANULE);
#ifdef MADV_HUGEPAGE
    /* Refused (THP off or absent): the region serves with small pages. */
    a->huge = bytes >= HUGE_MIN && madvise(a->base, bytes, MADV_HUGEPAGE) == 0;
#endif
    atomic_init(&a->used, 0);
    for (unsigned i = 0; i < SL__ARENA_CLASSES; i++)
        atomic_init(&a->head[i], 0);
}

void sl__arena_fini(struct sl__arena *a)
{
    if (a->base == NULL)
        return;
    munmap(a->base, a->size);
    munmap((void *)a->link, a->size / GRANULE * sizeof(*a->link));
    a->base = NULL;
}
#else
void sl__arena_init(struct sl__arena *a, size_t max_bytes, size_t chunk_bytes)
{
    (void)max_bytes;
    (void)chunk_bytes;
    memset(a, 0, sizeof(*a));
}

void sl__arena_fini(struct sl__arena *a)
{
    a->base = NULL;
}
#endif

/* The size class of `granules`, and the granules it hands out: class 0 is
 * the chunk size, class k >= 1 holds 2^(k-1) granules. */
static unsigned class_of(const struct sl__arena *a, uint32_t *granules)
{
    unsigned k = 1;

    if (*granules == a->chunk_granules)
        return 0;
    while ((UINT32_C(1) << (k - 1)) < *granules)
        k++;
    *granules = UINT32_C(1) << (k - 1);
    return k;
}

static bool in_arena(const struct sl__arena *a, const void *p)
{
    return a->base != NULL && (const char *)p >= a->base && (const char *)p < a->base + a->size;
}

void *sl__arena_alloc(struct sl__arena *a, size_t bytes, bool zero)
{
    if (a->base != NULL && bytes > 0 && bytes <= a->size) {
        uint32_t g = (uint32_t)((bytes + GRANULE - 1) / GRANULE);
        unsigned k = class_of(a, &g);
        if (k < SL__ARENA_CLASSES) {
            uint64_t h = atomic_load_explicit(&a->head[k], memory_order_acquire);
            while ((uint32_t)h != 0) {
                uint32_t at = (uint32_t)h - 1;
                uint32_t next = atomic_load_explicit(&a->link[at], memory_order_relaxed);
                uint64_t nh = (((h >> 32) + 1) << 32) | next;
                if (atomic_compare_exchange_weak_explicit(&a->head[k], &h, nh, memory_order_acquire,
                                                          memory_order_acquire)) {
                    char *p = a->base + (size_t)at * GRANULE;
                    if (zero)
                        memset(p, 0, bytes);
                    return p;
                }
            }
            size_t want = (size_t)g * GRANULE;
            size_t off = atomic_fetch_add_explicit(&a->used, want, memory_order_relaxed);
            if (off <= a->size && want <= a->size - off)
                return a->base + off; /* never handed out: still zero */
            /* Used up: the C allocator from now on (`used` stays past the end). */
        }
    }
    /* 64-byte aligned as the region's blocks are (the shard headers want
     * it); aligned_alloc wants a multiple of the alignment. */
    void *p = aligned_alloc(GRANULE, (bytes + GRANULE - 1) & ~(size_t)(GRANULE - 1));
    if (p != NULL && zero)
        memset(p, 0, bytes);
    return p;
}

void sl__arena_free(struct sl__arena *a, void *p, size_t bytes)
{
    if (p == NULL)
        return;
    if (!in_arena(a, p)) {
        free(p);
        return;
    }
    uint32_t g = (uint32_t)((bytes + GRANULE - 1) / GRANULE);
    unsigned k = class_of(a, &g);
    uint32_t at = (uint32_t)(((char *)p - a->base) / GRANULE);
    uint64_t h = atomic_load_explicit(&a->head[k], memory_order_relaxed), nh;

    do {
        atomic_store_explicit(&a->link[at], (uint32_t)h, memory_order_relaxed);
        nh = (((h >> 32) + 1) << 32) | (at + 1);
    } while (!atomic_compare_exchange_weak_explicit(&a->head[k], &h, nh, memory_order_release,
                                                    memory_order_relaxed));
}

bool sl__table_huge_pages(const sl_table *t)
{
    return t->arena.base != NULL && t->arena.huge;
}
