/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * buf.c - the bounded text writer of buf.h.
 *
 * Deliberately minimal: raw bytes, integers and JSON string literals. No
 * formatting language (no printf) so that the hot path needs no locale and
 * no varargs, and no growth: a full buffer is the caller's decision.
 */
#include <string.h>

#include "sluice.h"
#include "buf.h"

void sl__wr_init(struct sl__wr *b, char *p, size_t cap)
{
    b->p = p;
    b->cap = cap;
    b->len = 0;
    b->overflow = false;
}

void sl__wr_put(struct sl__wr *b, const char *s, size_t n)
{
    if (b->overflow || n > b->cap - b->len) {
        b->overflow = true;
        return;
    }
    if (n > 0)
        memcpy(b->p + b->len, s, n);
    b->len += n;
}

void sl__wr_puts(struct sl__wr *b, const char *s)
{
    sl__wr_put(b, s, strlen(s));
}

void sl__wr_u64(struct sl__wr *b, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof(tmp);

    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    sl__wr_put(b, tmp + i, sizeof(tmp) - i);
}

void sl__wr_i64(struct sl__wr *b, int64_t v)
{
    if (v < 0) {
        sl__wr_put(b, "-", 1);
        /* -(v + 1) + 1 avoids negating INT64_MIN. */
        sl__wr_u64(b, (uint64_t)(-(v + 1)) + 1);
        return;
    }
    sl__wr_u64(b, (uint64_t)v);
}

void sl__wr_json_str(struct sl__wr *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0; /* start of the pending run of plain bytes */

    sl__wr_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        size_t elen = 6;

        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
            continue;
        sl__wr_put(b, s + run, i - run);
        run = i + 1;
        if (c == '"' || c == '\\') {
            esc[1] = (char)c;
            elen = 2;
        } else if (c == '\n') {
            esc[1] = 'n';
            elen = 2;
        } else if (c == '\t') {
            esc[1] = 't';
            elen = 2;
        } else if (c == '\r') {
            esc[1] = 'r';
            elen = 2;
        }
        sl__wr_put(b, esc, elen);
    }
    sl__wr_put(b, s + run, n - run);
    sl__wr_put(b, "\"", 1);
}

int sl__wr_finish(struct sl__wr *b, size_t *len)
{
    if (b->overflow)
        return SL_ETOOBIG;
    if (b->len < b->cap)
        b->p[b->len] = '\0';
    if (len != NULL)
        *len = b->len;
    return SL_OK;
}
