/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * lease.c - sealing and parsing concurrency lease tokens (see lease.h).
 *
 * The permutation is a 4-round Feistel network over two 64-bit halves with
 * SipHash-2-4 as the round function (Luby-Rackoff: a pseudo-random
 * permutation when the round function is a PRF). Block: fingerprint words 0
 * and 1 (the shard and the home slot come from them) and the lease id.
 *
 * It does not look anything up, allocate, or read a clock.
 */
#include <string.h>

#include "lease.h"

#define ROUNDS 4

static uint64_t round_fn(const uint8_t key[16], uint64_t half, unsigned round)
{
    uint64_t in[2] = {half, round};
    return sl_siphash(key, in, sizeof(in));
}

static void seal(const uint8_t key[16], uint64_t *l, uint64_t *r)
{
    for (unsigned i = 0; i < ROUNDS; i++) {
        uint64_t t = *l ^ round_fn(key, *r, i);
        *l = *r;
        *r = t;
    }
}

static void open_block(const uint8_t key[16], uint64_t *l, uint64_t *r)
{
    for (unsigned i = ROUNDS; i-- > 0;) {
        uint64_t t = *r ^ round_fn(key, *l, i);
        *r = *l;
        *l = t;
    }
}

void sl__lease_key(const uint8_t secret[16], uint8_t key[16])
{
    static const char label[] = "sluice lease token key";
    uint64_t k[2];

    sl_siphash128(secret, label, sizeof(label) - 1, k);
    memcpy(key, k, 16);
}

static void put_hex(char *out, uint64_t v)
{
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = "0123456789abcdef"[v & 15];
}

static int get_hex(const char *p, uint64_t *out)
{
    uint64_t v = 0;

    for (int i = 0; i < 16; i++) {
        char c = p[i];
        int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (h < 0)
            return SL_EINVAL;
        v = v << 4 | (uint64_t)h;
    }
    *out = v;
    return SL_OK;
}

void sl__lease_seal(const uint8_t key[16], const struct sl__fp *fp, uint64_t lease, char *out)
{
    uint64_t l = (uint64_t)fp->w[0] | (uint64_t)fp->w[1] << 32, r = lease;

    seal(key, &l, &r);
    put_hex(out, l);
    put_hex(out + 16, r);
}

int sl__lease_parse(const uint8_t key[16], const char *token, size_t len, struct sl__fp *fps,
                    uint64_t *ids, size_t *n)
{
    *n = 0;
    if (token == NULL || len == 0 || len >= SL_LEASE_MAX)
        return SL_EINVAL;
    for (size_t off = 0;; off += SL__LEASE_HEX + 1) {
        uint64_t l, r;
        if (*n == SL_MAX_LEASES || len - off < SL__LEASE_HEX)
            return SL_EINVAL;
        if (get_hex(token + off, &l) != SL_OK || get_hex(token + off + 16, &r) != SL_OK)
            return SL_EINVAL;
        open_block(key, &l, &r);
        fps[*n].w[0] = (uint32_t)l;
        fps[*n].w[1] = (uint32_t)(l >> 32);
        fps[*n].w[2] = 0;
        ids[*n] = r;
        (*n)++;
        if (off + SL__LEASE_HEX == len)
            return SL_OK;
        if (token[off + SL__LEASE_HEX] != '.')
            return SL_EINVAL;
    }
}
