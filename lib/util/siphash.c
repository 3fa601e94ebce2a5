/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * siphash.c - SipHash (Aumasson and Bernstein), 64- and 128-bit outputs, in
 * its two common strengths: SipHash-2-4, the conservative PRF, and
 * SipHash-1-3, the variant CPython (3.11+) and Rust's HashMap use against
 * hash flooding because it is about a third cheaper.
 *
 * Written here rather than taken from a package: Debian ships no C library
 * for it, and it is 100 lines. Checked against the reference test vectors in
 * tests/unit/test_siphash.c. The state table keys SipHash-1-3-128 with a
 * per-process secret so that crafted keys cannot be made to collide; lease
 * tokens and limit identities use SipHash-2-4.
 */
#include <string.h>

#include "sluice.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* c compression and d finalisation rounds; inlined with constants, so the
 * loops unroll. */
static inline __attribute__((always_inline)) void
siphash(const uint8_t k[16], const void *data, size_t len, uint64_t *out, int words, int c, int d)
{
    const uint8_t *in = data;
    uint64_t k0 = load64(k), k1 = load64(k + 8);
    uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ k0;
    uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ k1;
    uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ k0;
    uint64_t v3 = UINT64_C(0x7465646279746573) ^ k1;
    uint64_t b = (uint64_t)len << 56, m;
    const uint8_t *end = in + (len & ~(size_t)7);
    uint8_t tail[8] = {0};

    if (words == 2)
        v1 ^= 0xee;
    for (; in != end; in += 8) {
        m = load64(in);
        v3 ^= m;
        for (int i = 0; i < c; i++)
            SIPROUND;
        v0 ^= m;
    }
    memcpy(tail, in, len & 7);
    b |= load64(tail);
    v3 ^= b;
    for (int i = 0; i < c; i++)
        SIPROUND;
    v0 ^= b;
    v2 ^= words == 2 ? 0xee : 0xff;
    for (int i = 0; i < d; i++)
        SIPROUND;
    out[0] = v0 ^ v1 ^ v2 ^ v3;
    if (words == 1)
        return;
    v1 ^= 0xdd;
    for (int i = 0; i < d; i++)
        SIPROUND;
    out[1] = v0 ^ v1 ^ v2 ^ v3;
}

uint64_t sl_siphash(const uint8_t k[16], const void *data, size_t len)
{
    uint64_t out;
    siphash(k, data, len, &out, 1, 2, 4);
    return out;
}

void sl_siphash128(const uint8_t k[16], const void *data, size_t len, uint64_t out[2])
{
    siphash(k, data, len, out, 2, 2, 4);
}

void sl_siphash13_128(const uint8_t k[16], const void *data, size_t len, uint64_t out[2])
{
    siphash(k, data, len, out, 2, 1, 3);
}
