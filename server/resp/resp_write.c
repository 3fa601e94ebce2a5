/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp_write.c - RESP2 reply encoding. Integers are formatted by hand (the
 * hot path writes five of them per CL.THROTTLE); error lines are cleaned of
 * CR/LF so a message quoting client bytes cannot forge a second reply.
 * It does not know commands or connections.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "resp_write.h"

/* The longest number line: a type byte, a sign, 20 digits, CRLF. */
#define NUM_MAX 24

/* "00" .. "99" */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

/* ":<v>\r\n" with `type` instead of ':' at p, which has NUM_MAX bytes of
 * room: the digits counted first, then written from the last. Returns the
 * end. */
static inline char *put_num(char *p, char type, int64_t v)
{
    /* -9..99 first: nearly every CL.THROTTLE field (the flag, -1, small
     * limits, remaining counts and seconds), without a division. */
    if (v >= -9 && v < 100) {
        unsigned d = (unsigned)(v < 0 ? -v : v);
        *p++ = type;
        if (v < 0)
            *p++ = '-';
        if (d >= 10) {
            memcpy(p, &digit_pairs[2 * d], 2);
            p += 2;
        } else {
            *p++ = (char)('0' + d);
        }
        p[0] = '\r';
        p[1] = '\n';
        return p + 2;
    }
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    size_t digits = 4;
    char *end, *q;

    /* Digits counted four at a time, written two at a time: the limits'
     * quotas and remaining counts (10^9 and the like) that SL.CHECK
     * reports take a few steps instead of one per digit. */
    for (uint64_t t = u;; t /= 10000, digits += 4) {
        if (t < 10) {
            digits -= 3;
            break;
        }
        if (t < 100) {
            digits -= 2;
            break;
        }
        if (t < 1000) {
            digits -= 1;
            break;
        }
        if (t < 10000)
            break;
    }
    *p++ = type;
    if (v < 0)
        *p++ = '-';
    end = q = p + digits;
    while (u >= 100) {
        q -= 2;
        memcpy(q, &digit_pairs[2 * (u % 100)], 2);
        u /= 100;
    }
    if (u >= 10) {
        q -= 2;
        memcpy(q, &digit_pairs[2 * u], 2);
    } else {
        *--q = (char)('0' + u);
    }
    end[0] = '\r';
    end[1] = '\n';
    return end + 2;
}

static void w_num(struct sl__buf *b, char type, int64_t v)
{
    char *p = sl__buf_room(b, NUM_MAX);

    b->len += (size_t)(put_num(p, type, v) - p);
}

/* The room made once, the pointer kept in a register across the numbers. */
void sl__resp_w_ints(struct sl__buf *b, const int64_t *v, size_t n)
{
    char *at = sl__buf_room(b, NUM_MAX * (n + 1)), *p;

    p = put_num(at, '*', (int64_t)n);
    for (size_t i = 0; i < n; i++)
        p = put_num(p, ':', v[i]);
    b->len += (size_t)(p - at);
}

void sl__resp_w_int_run(struct sl__buf *b, const int64_t *v, size_t n)
{
    char *at = sl__buf_room(b, NUM_MAX * n), *p = at;

    for (size_t i = 0; i < n; i++)
        p = put_num(p, ':', v[i]);
    b->len += (size_t)(p - at);
}

void sl__resp_w_ints5(struct sl__buf *b, const int64_t v[5])
{
    char *at = sl__buf_room(b, NUM_MAX * 6), *p = at;

    memcpy(p, "*5\r\n", 4);
    p = put_num(p + 4, ':', v[0]);
    p = put_num(p, ':', v[1]);
    p = put_num(p, ':', v[2]);
    p = put_num(p, ':', v[3]);
    p = put_num(p, ':', v[4]);
    b->len += (size_t)(p - at);
}

/* "$<n>\r\n<s>\r\n" at p (room for NUM_MAX + n + 2). */
static inline char *put_bulk(char *p, struct sl_str s)
{
    p = put_num(p, '$', (int64_t)s.len);
    memcpy(p, s.p, s.len);
    p[s.len] = '\r';
    p[s.len + 1] = '\n';
    return p + s.len + 2;
}

void sl__resp_w_decision1(struct sl__buf *b, struct sl_str verdict, int64_t delay_ms,
                          struct sl_str status_verdict, struct sl_str name, bool has_name,
                          const int64_t v[5])
{
    /* the fixed parts, the three bulk strings' bytes, nine numbers */
    char *at = sl__buf_room(b, verdict.len + status_verdict.len + name.len + 12 * NUM_MAX);
    char *p = at;

    memcpy(p, "*3\r\n", 4);
    p = put_bulk(p + 4, verdict);
    p = put_num(p, ':', delay_ms);
    memcpy(p, "*1\r\n*7\r\n", 8);
    p = put_bulk(p + 8, status_verdict);
    if (has_name) {
        p = put_bulk(p, name);
    } else {
        memcpy(p, "$-1\r\n", 5);
        p += 5;
    }
    p = put_num(p, ':', v[0]);
    p = put_num(p, ':', v[1]);
    p = put_num(p, ':', v[2]);
    p = put_num(p, ':', v[3]);
    p = put_num(p, ':', v[4]);
    b->len += (size_t)(p - at);
}

void sl__resp_w_simple(struct sl__buf *b, const char *s)
{
    sl__buf_append(b, "+", 1);
    sl__buf_append(b, s, strlen(s));
    sl__buf_append(b, "\r\n", 2);
}

void sl__resp_w_error(struct sl__buf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(line))
        n = sizeof(line) - 1;
    for (int i = 0; i < n; i++)
        if (line[i] == '\r' || line[i] == '\n')
            line[i] = ' ';
    sl__buf_append(b, "-", 1);
    sl__buf_append(b, line, (size_t)n);
    sl__buf_append(b, "\r\n", 2);
}

void sl__resp_w_int(struct sl__buf *b, int64_t v)
{
    w_num(b, ':', v);
}

void sl__resp_w_bulk(struct sl__buf *b, const void *p, size_t n)
{
    w_num(b, '$', (int64_t)n);
    sl__buf_append(b, p, n);
    sl__buf_append(b, "\r\n", 2);
}

void sl__resp_w_cstr(struct sl__buf *b, const char *s)
{
    sl__resp_w_bulk(b, s, strlen(s));
}

void sl__resp_w_nil(struct sl__buf *b)
{
    sl__buf_append(b, "$-1\r\n", 5);
}

void sl__resp_w_array(struct sl__buf *b, size_t n)
{
    w_num(b, '*', (int64_t)n);
}
