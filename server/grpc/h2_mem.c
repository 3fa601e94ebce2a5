/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2_mem.c - size-class free lists for one session's HPACK inflater (h2_mem.h).
 *
 * Each block carries a 16-byte header with its class (or, for a block
 * above the largest class, its size), so free() and realloc() need no
 * size from nghttp2. It does not pool across connections: a connection's
 * blocks die with it, so nothing outlives the session that used it.
 */
#include <stdlib.h>
#include <string.h>

#include "h2_mem.h"

#define HDR       16u
#define MIN_SHIFT 5u /* the smallest class: 32 bytes with its header */
#define BIG       UINT32_MAX

struct hdr {
    uint32_t cls; /* index, or BIG */
    uint32_t pad;
    size_t size; /* BIG: bytes after the header */
};

static size_t class_bytes(unsigned cls)
{
    return (size_t)1 << (cls + MIN_SHIFT);
}

/* The smallest class whose blocks hold `n` bytes and the header, or BIG. */
static unsigned class_of(size_t n)
{
    for (unsigned c = 0; c < SL__H2_MEM_CLASSES; c++)
        if (n <= class_bytes(c) - HDR)
            return c;
    return BIG;
}

static void *pool_malloc(size_t n, void *ud)
{
    struct sl__h2_mem *pool = ud;
    unsigned cls = class_of(n);
    struct hdr *h;

    if (cls != BIG && pool->free[cls] != NULL) {
        h = pool->free[cls];
        memcpy(&pool->free[cls], h, sizeof(void *));
        pool->kept -= class_bytes(cls);
    } else {
        h = malloc(cls == BIG ? n + HDR : class_bytes(cls));
        if (h == NULL)
            return NULL;
        pool->heap_allocs++;
    }
    h->cls = cls;
    h->size = n;
    return (char *)h + HDR;
}

static void pool_free(void *p, void *ud)
{
    struct sl__h2_mem *pool = ud;
    struct hdr *h;
    uint32_t cls;

    if (p == NULL)
        return;
    h = (struct hdr *)(void *)((char *)p - HDR);
    cls = h->cls; /* the link below overwrites it */
    if (cls == BIG || pool->kept + class_bytes(cls) > SL__H2_MEM_KEEP) {
        free(h);
        return;
    }
    memcpy(h, &pool->free[cls], sizeof(void *));
    pool->free[cls] = h;
    pool->kept += class_bytes(cls);
}

static void *pool_calloc(size_t n, size_t size, void *ud)
{
    size_t bytes;
    void *p;

    if (__builtin_mul_overflow(n, size, &bytes))
        return NULL;
    p = pool_malloc(bytes, ud);
    if (p != NULL)
        memset(p, 0, bytes);
    return p;
}

static void *pool_realloc(void *p, size_t n, void *ud)
{
    struct hdr *h;
    size_t room;
    void *q;

    if (p == NULL)
        return pool_malloc(n, ud);
    h = (struct hdr *)(void *)((char *)p - HDR);
    room = h->cls == BIG ? h->size : class_bytes(h->cls) - HDR;
    if (n <= room && h->cls != BIG) {
        h->size = n;
        return p;
    }
    q = pool_malloc(n, ud);
    if (q == NULL)
        return NULL;
    memcpy(q, p, n < h->size ? n : h->size);
    pool_free(p, ud);
    return q;
}

void sl__h2_mem_init(struct sl__h2_mem *pool, nghttp2_mem *out)
{
    out->mem_user_data = pool;
    out->malloc = pool_malloc;
    out->free = pool_free;
    out->calloc = pool_calloc;
    out->realloc = pool_realloc;
}

void sl__h2_mem_destroy(struct sl__h2_mem *pool)
{
    for (unsigned c = 0; c < SL__H2_MEM_CLASSES; c++) {
        while (pool->free[c] != NULL) {
            void *h = pool->free[c];
            memcpy(&pool->free[c], h, sizeof(void *));
            free(h);
        }
    }
    pool->kept = 0;
}
