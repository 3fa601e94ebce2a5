/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * mpack.c - MessagePack arrays of integers and strings, as cmsgpack writes
 * them (see mpack.h). Big-endian on the wire; no allocation.
 */
#include <string.h>

#include "mpack.h"

static bool fail(struct sl__mp_reader *r)
{
    r->bad = true;
    return false;
}

/* n bytes, big-endian, as an unsigned number. */
static bool take(struct sl__mp_reader *r, size_t n, uint64_t *v)
{
    if ((size_t)(r->end - r->p) < n)
        return fail(r);
    *v = 0;
    for (size_t i = 0; i < n; i++)
        *v = *v << 8 | r->p[i];
    r->p += n;
    return true;
}

bool sl__mp_array(struct sl__mp_reader *r, uint64_t *n)
{
    uint8_t b;

    if (r->p >= r->end)
        return fail(r);
    b = *r->p++;
    if ((b & 0xf0) == 0x90) {
        *n = b & 0x0f;
        return true;
    }
    if (b == 0xdc)
        return take(r, 2, n);
    if (b == 0xdd)
        return take(r, 4, n);
    return fail(r);
}

/* A float of `n` bytes (4 or 8) that is a whole number within int64. */
static bool whole_float(struct sl__mp_reader *r, size_t n, int64_t *v)
{
    uint64_t bits;
    double d;

    if (!take(r, n, &bits))
        return false;
    if (n == 4) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof(f));
        d = f;
    } else {
        memcpy(&d, &bits, sizeof(d));
    }
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
        return fail(r);
    *v = (int64_t)d;
    return true;
}

bool sl__mp_int(struct sl__mp_reader *r, int64_t *v)
{
    static const uint8_t size[4] = {1, 2, 4, 8};
    uint64_t u;
    uint8_t b;

    if (r->p >= r->end)
        return fail(r);
    b = *r->p++;
    if (b <= 0x7f || b >= 0xe0) { /* positive or negative fixint */
        *v = (int8_t)b;
        return true;
    }
    if (b >= 0xcc && b <= 0xcf) { /* uint 8..64 */
        if (!take(r, size[b - 0xcc], &u) || u > (uint64_t)INT64_MAX)
            return fail(r);
        *v = (int64_t)u;
        return true;
    }
    if (b >= 0xd0 && b <= 0xd3) { /* int 8..64, sign-extended */
        unsigned bits = 8u * size[b - 0xd0];
        if (!take(r, size[b - 0xd0], &u))
            return false;
        if (bits < 64 && (u >> (bits - 1)) != 0)
            u |= ~UINT64_C(0) << bits;
        memcpy(v, &u, sizeof(*v));
        return true;
    }
    if (b == 0xca || b == 0xcb)
        return whole_float(r, b == 0xca ? 4 : 8, v);
    return fail(r);
}

bool sl__mp_str(struct sl__mp_reader *r, const char **s, size_t *len)
{
    uint64_t n;
    uint8_t b;

    if (r->p >= r->end)
        return fail(r);
    b = *r->p++;
    if ((b & 0xe0) == 0xa0)
        n = b & 0x1f;
    else if (b < 0xd9 || b > 0xdb || !take(r, (size_t)1 << (b - 0xd9), &n))
        return fail(r);
    if ((uint64_t)(r->end - r->p) < n)
        return fail(r);
    *s = (const char *)r->p;
    *len = (size_t)n;
    r->p += n;
    return true;
}

static void put(struct sl__mp_writer *w, const void *p, size_t n)
{
    if (w->full || w->cap - w->len < n) {
        w->full = true;
        return;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

/* A type byte and `n` bytes of v, big-endian. */
static void put_be(struct sl__mp_writer *w, uint8_t type, uint64_t v, size_t n)
{
    uint8_t b[9];

    b[0] = type;
    for (size_t i = 0; i < n; i++)
        b[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    put(w, b, 1 + n);
}

void sl__mp_put_array(struct sl__mp_writer *w, uint64_t n)
{
    if (n <= 15)
        put_be(w, (uint8_t)(0x90 | n), 0, 0);
    else if (n <= 0xffff)
        put_be(w, 0xdc, n, 2);
    else
        put_be(w, 0xdd, n, 4);
}

void sl__mp_put_int(struct sl__mp_writer *w, int64_t v)
{
    uint64_t u;

    memcpy(&u, &v, sizeof(u));
    if (v >= 0) {
        if (v <= 0x7f)
            put_be(w, (uint8_t)v, 0, 0);
        else if (v <= 0xff)
            put_be(w, 0xcc, u, 1);
        else if (v <= 0xffff)
            put_be(w, 0xcd, u, 2);
        else if (v <= 0xffffffffLL)
            put_be(w, 0xce, u, 4);
        else
            put_be(w, 0xcf, u, 8);
    } else {
        if (v >= -32)
            put_be(w, (uint8_t)(int8_t)v, 0, 0);
        else if (v >= -128)
            put_be(w, 0xd0, u, 1);
        else if (v >= -32768)
            put_be(w, 0xd1, u, 2);
        else if (v >= -2147483648LL)
            put_be(w, 0xd2, u, 4);
        else
            put_be(w, 0xd3, u, 8);
    }
}

void sl__mp_put_str(struct sl__mp_writer *w, const char *s, size_t len)
{
    if (len < 32)
        put_be(w, (uint8_t)(0xa0 | len), 0, 0);
    else if (len <= 0xff)
        put_be(w, 0xd9, len, 1);
    else if (len <= 0xffff)
        put_be(w, 0xda, len, 2);
    else
        put_be(w, 0xdb, len, 4);
    put(w, s, len);
}
