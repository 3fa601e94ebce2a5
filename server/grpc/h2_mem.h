/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2_mem.h - the allocator one HTTP/2 session's HPACK inflater (nghttp2)
 * uses (internal): blocks in power-of-two size classes, kept on per-class
 * free lists when nghttp2 frees them and handed back on its next
 * allocation, so that a warm connection's calls take nothing from the
 * general heap (the inflater allocates header buffers and table entries
 * as it decodes).
 *
 * It is one connection's: no locks, no sharing between threads. Blocks
 * above the largest class go to malloc and back to free. The free lists
 * keep at most SL__H2_MEM_KEEP bytes; beyond that a freed block is
 * returned to the heap. Everything is returned by sl__h2_mem_destroy(),
 * which may be called only once nghttp2 has freed every block (after
 * nghttp2_hd_inflate_del).
 */
#ifndef SL_SERVER_H2_MEM_H
#define SL_SERVER_H2_MEM_H

#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#define SL__H2_MEM_CLASSES 11           /* 32 bytes .. 32 KiB */
#define SL__H2_MEM_KEEP    (256u << 10) /* bytes kept on the free lists at most */

struct sl__h2_mem {
    void *free[SL__H2_MEM_CLASSES]; /* singly linked through the block's first word */
    size_t kept;                    /* bytes on the free lists */
    uint64_t heap_allocs;           /* blocks taken from the heap, for tests and metrics */
};

/* An nghttp2_mem over `pool` (zeroed by the caller). */
void sl__h2_mem_init(struct sl__h2_mem *pool, nghttp2_mem *out);
/* Return every kept block to the heap. */
void sl__h2_mem_destroy(struct sl__h2_mem *pool);

#endif /* SL_SERVER_H2_MEM_H */
