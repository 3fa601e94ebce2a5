/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sluice_sat.h - saturating integer arithmetic (internal to libsluice and
 * the layers built on it: the Redis store and the HTTP headers use it too).
 *
 * Every quantity in the algorithms is bounded by these helpers instead of
 * wrapping: a huge cost, a huge period or a time near INT64_MAX saturates at
 * the type's limit and the decision stays meaningful (a deny, a -1 retry).
 */
#ifndef SL_SAT_H
#define SL_SAT_H

#include <stdint.h>

static inline int64_t sl__sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t sl__sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t sl__sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
    return r;
}

static inline uint64_t sl__sat_addu(uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return UINT64_MAX;
    return r;
}

static inline uint64_t sl__sat_mulu(uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return UINT64_MAX;
    return r;
}

/* An unsigned quantity as int64, saturated. */
static inline int64_t sl__sat_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* a * b / c without intermediate overflow (128-bit), saturated; c > 0. */
static inline int64_t sl__muldiv(int64_t a, int64_t b, int64_t c)
{
    __int128 r = (__int128)a * b / c;
    if (r > INT64_MAX)
        return INT64_MAX;
    if (r < INT64_MIN)
        return INT64_MIN;
    return (int64_t)r;
}

/* Same, rounded up (towards +infinity); c > 0. */
static inline int64_t sl__muldiv_ceil(int64_t a, int64_t b, int64_t c)
{
    __int128 n = (__int128)a * b;
    __int128 r = n / c;
    if (n % c != 0 && n > 0)
        r++;
    if (r > INT64_MAX)
        return INT64_MAX;
    if (r < INT64_MIN)
        return INT64_MIN;
    return (int64_t)r;
}

static inline int64_t sl__max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static inline int64_t sl__min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

#endif /* SL_SAT_H */
