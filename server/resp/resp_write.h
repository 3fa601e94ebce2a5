/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp_write.h - RESP2 reply encoding into a growable buffer (internal).
 * Each function appends one complete value (or an array header); none can
 * fail (the buffer grows through the daemon's allocation wrapper).
 */
#ifndef SL_SERVER_RESP_WRITE_H
#define SL_SERVER_RESP_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn-t.h"
#include "sluice.h"

void sl__resp_w_simple(struct sl__buf *b, const char *s);      /* +s */
void sl__resp_w_error(struct sl__buf *b, const char *fmt, ...) /* -ERR-like line */
    __attribute__((format(printf, 2, 3)));
void sl__resp_w_int(struct sl__buf *b, int64_t v);                /* :v */
void sl__resp_w_bulk(struct sl__buf *b, const void *p, size_t n); /* $n p */
void sl__resp_w_cstr(struct sl__buf *b, const char *s);           /* bulk of a C string */
void sl__resp_w_nil(struct sl__buf *b);                           /* $-1 */
void sl__resp_w_array(struct sl__buf *b, size_t n);               /* *n, then n values */
/* An array of n integers, room made once (CL.THROTTLE's five). */
void sl__resp_w_ints(struct sl__buf *b, const int64_t *v, size_t n);
/* The same for exactly five, unrolled. */
void sl__resp_w_ints5(struct sl__buf *b, const int64_t v[5]);
/* n integers one after the other, no array header, room made once (the
 * last five elements of an SL.* status). */
void sl__resp_w_int_run(struct sl__buf *b, const int64_t *v, size_t n);

/* A whole SL.CHECK-style decision of one status, no lease and no policy,
 * in one pass: [verdict, delay_ms, [[status verdict, name or nil, v0..v4]]], the
 * same bytes as the general writer's (resp_sl.c). */
void sl__resp_w_decision1(struct sl__buf *b, struct sl_str verdict, int64_t delay_ms,
                          struct sl_str status_verdict, struct sl_str name, bool has_name,
                          const int64_t v[5]);

#endif /* SL_SERVER_RESP_WRITE_H */
