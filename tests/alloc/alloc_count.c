/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * alloc_count.c - a counting allocator for tests, loaded with LD_PRELOAD:
 * every malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign
 * and valloc of the process (any thread) adds one to a counter that lives
 * in the file named by $SL_ALLOC_COUNTER (created and mapped at start-up),
 * so a test reads the count from outside while the server runs, sends
 * requests, and reads it again: the difference is the allocations those
 * requests cost. The calls go on to glibc's own allocator (its __libc_*
 * entry points), so nothing else changes. Without the variable it only
 * forwards.
 *
 * Layout of the file: one uint64_t, the allocation count (relaxed atomic
 * adds; exact once the process is quiet).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void __libc_free(void *);

static _Atomic uint64_t *counter;

__attribute__((constructor)) static void start(void)
{
    const char *path = getenv("SL_ALLOC_COUNTER");
    int fd;
    void *p;

    if (path == NULL || (fd = open(path, O_RDWR | O_CREAT, 0600)) < 0)
        return;
    if (ftruncate(fd, sizeof(uint64_t)) == 0) {
        p = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED)
            counter = p;
    }
    close(fd);
}

static void count(void)
{
    if (counter != NULL)
        atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

void *malloc(size_t n)
{
    count();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    count();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    count();
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p;

    count();
    p = __libc_memalign(align, n);
    if (p == NULL && n > 0)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

void *valloc(size_t n)
{
    count();
    return __libc_valloc(n);
}
