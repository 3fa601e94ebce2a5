/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * buf.h - an append-only text writer into a caller-supplied buffer
 * (internal), used to build HTTP headers and JSON bodies without allocating.
 *
 * It never allocates and never writes past `cap`: once an append does not
 * fit, the writer is marked overflowed, later appends are ignored, and the
 * caller sees SL_ETOOBIG from sl__wr_finish(). It does not grow buffers;
 * a caller that wants that retries with a bigger one.
 *
 * Ownership: the bytes belong to the caller; the writer only borrows them.
 */
#ifndef SL_SERVER_BUF_H
#define SL_SERVER_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl__wr {
    char *p;       /* caller's storage */
    size_t cap;    /* bytes of storage */
    size_t len;    /* bytes written so far */
    bool overflow; /* an append did not fit */
};

/* Start writing at p[0]; cap may be 0 (every append then overflows). */
void sl__wr_init(struct sl__wr *b, char *p, size_t cap);
/* Append n raw bytes. */
void sl__wr_put(struct sl__wr *b, const char *s, size_t n);
/* Append a NUL-terminated string. */
void sl__wr_puts(struct sl__wr *b, const char *s);
/* Append the decimal form of v (no allocation, no locale). */
void sl__wr_i64(struct sl__wr *b, int64_t v);
void sl__wr_u64(struct sl__wr *b, uint64_t v);
/* Append s[0..n) as a JSON string literal, quotes included; control bytes
 * escaped, other bytes copied as they are (the caller's input is UTF-8 or
 * it is echoed as given). */
void sl__wr_json_str(struct sl__wr *b, const char *s, size_t n);
/* SL_OK with *len the bytes written (and a NUL after them when room is
 * left), or SL_ETOOBIG when anything did not fit. len may be NULL. */
int sl__wr_finish(struct sl__wr *b, size_t *len);

#endif /* SL_SERVER_BUF_H */
