/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * xalloc.h - the daemon's one allocation wrapper (internal): out of memory
 * is logged and aborts, as docs/style.md allows for the daemon only. The library
 * never calls these.
 */
#ifndef SL_SERVER_XALLOC_H
#define SL_SERVER_XALLOC_H

#include <stddef.h>

/* realloc(p, n) that never returns NULL (n > 0). */
void *sl__xrealloc(void *p, size_t n);
/* calloc(1, n) that never returns NULL. */
void *sl__xzalloc(size_t n);
/* A NUL-terminated copy of s[0..n). */
char *sl__xstrndup(const char *s, size_t n);

#endif /* SL_SERVER_XALLOC_H */
