/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * table_count.c - a fixed number of sl_table_check calls, for counting the
 * instructions one check costs under valgrind (bench/ab_table_count.sh):
 * a cost that the machine's load does not move, for an A/B of two builds
 * of the library. Only the public API, so that the same file builds against
 * any build's libsluice.a.
 *
 * Usage: table_count hot|keys_1m|flood CHECKS
 *   hot      gcra, 1,000 keys checked in random order (in cache)
 *   keys_1m  gcra, 1,000,000 keys checked in random order
 *   flood    gcra 1 per hour, a full 16 MiB table, every check a new key
 *            (created, and another evicted for it)
 * The checks run in counted_checks(), which the script asks valgrind to
 * count alone (--toggle-collect): the warm-up is not counted.
 *
 * It does not time anything (bench_table does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"

#define T0      (INT64_C(1700000000) * SL_NS_PER_S)
#define KEY_LEN 16

static void key_of(uint32_t k, char out[KEY_LEN])
{
    static const char hex[] = "0123456789abcdef";

    memcpy(out, "key:0000", 8);
    for (int i = 0; i < 8; i++)
        out[8 + i] = hex[(k >> (28 - 4 * i)) & 15];
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* `n` checks: keys drawn from [0, keys) at random, or (keys = 0) new keys
 * from `next` on. Returns a value that depends on every decision, so the
 * compiler keeps them all. */
__attribute__((noinline)) uint64_t counted_checks(sl_table *t, const struct sl_limit *l,
                                                  uint32_t keys, uint32_t next, uint64_t n)
{
    struct sl_decision d;
    uint64_t rng = 0x9e3779b97f4a7c15ull, sum = 0;
    char key[KEY_LEN];
    int64_t now = T0;

    for (uint64_t i = 0; i < n; i++) {
        key_of(keys ? (uint32_t)(xorshift(&rng) % keys) : next++, key);
        if (keys)
            now += 1000;
        sl_table_check(t, key, KEY_LEN, l, now, 1, &d);
        sum += (uint64_t)d.remaining;
    }
    return sum;
}

int main(int argc, char **argv)
{
    struct sl_table_config c;
    struct sl_limit l;
    struct sl_decision d;
    sl_table *t;
    uint32_t keys = 0, k = 0;
    char key[KEY_LEN];

    if (argc != 3) {
        fprintf(stderr, "usage: table_count hot|keys_1m|flood CHECKS\n");
        return 2;
    }
    sl_limit_init(&l);
    l.algo = SL_ALGO_GCRA;
    l.requests = 1000;
    l.period_ns = SL_NS_PER_S;
    sl_table_config_init(&c);
    for (int i = 0; i < 16; i++)
        c.secret[i] = (uint8_t)(i * 37 + 11);
    if (strcmp(argv[1], "hot") == 0) {
        keys = 1000;
    } else if (strcmp(argv[1], "keys_1m") == 0) {
        keys = 1000000;
        c.max_bytes = (size_t)192 << 20;
    } else if (strcmp(argv[1], "flood") == 0) {
        l.requests = 1;
        l.period_ns = 3600 * SL_NS_PER_S; /* nothing drains */
        c.max_bytes = (size_t)16 << 20;
    } else {
        fprintf(stderr, "table_count: unknown workload %s\n", argv[1]);
        return 2;
    }
    sl_limit_finish(&l);
    if (sl_table_new(&c, &t) != SL_OK)
        return 1;
    if (keys) { /* every key tracked before the count */
        for (k = 0; k < keys; k++) {
            key_of(k, key);
            sl_table_check(t, key, KEY_LEN, &l, T0, 1, &d);
        }
    } else { /* full: until evictions run */
        struct sl_table_stats st = {0};
        while (st.evictions < 100000) {
            for (uint32_t i = 0; i < 4096; i++, k++) {
                key_of(k, key);
                sl_table_check(t, key, KEY_LEN, &l, T0, 1, &d);
                sl_table_check(t, key, KEY_LEN, &l, T0, 1, &d); /* out of quota */
            }
            sl_table_stats(t, &st);
        }
    }
    uint64_t sum = counted_checks(t, &l, keys, k, strtoull(argv[2], NULL, 10));
    printf("%llu\n", (unsigned long long)sum);
    sl_table_free(t);
    return 0;
}
