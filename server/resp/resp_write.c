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

/* ":<v>\r\n" with `type` instead of ':', written in place: the digits
 * counted first, then written from the last. */
static void w_num(struct sl__buf *b, char type, int64_t v)
{
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    size_t digits = 1, n;
    char *p;

    for (uint64_t t = u; t >= 10; t /= 10)
        digits++;
    n = 1 + (v < 0) + digits + 2;
    p = sl__buf_room(b, n) + n;
    *--p = '\n';
    *--p = '\r';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    *--p = type;
    b->len += n;
}

void sl__resp_w_ints(struct sl__buf *b, const int64_t *v, size_t n)
{
    w_num(b, '*', (int64_t)n);
    for (size_t i = 0; i < n; i++)
        w_num(b, ':', v[i]);
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
