/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * xalloc.c - allocation that aborts on failure, for the daemon only: a
 * daemon that cannot allocate a connection buffer has no better option, and
 * checking at every call site would hide the real error paths.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

static void oom(size_t n)
{
    sl__err("server.out_of_memory", "out of memory allocating %zu bytes; aborting", n);
    abort();
}

void *sl__xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL)
        oom(n);
    return q;
}

void *sl__xzalloc(size_t n)
{
    void *q = calloc(1, n);
    if (q == NULL)
        oom(n);
    return q;
}

char *sl__xstrndup(const char *s, size_t n)
{
    char *p = sl__xrealloc(NULL, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}
