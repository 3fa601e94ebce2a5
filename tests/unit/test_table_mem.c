/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_table_mem.c - the region the state table's arrays are carved from
 * (lib/table_mem.c): blocks 64-byte aligned, inside the region, zeroed
 * when asked, a freed block handed out again to its own size class only,
 * the C allocator once the region is used up; the region offered to
 * transparent huge pages, and a 100,000-key table deciding from it with
 * huge pages behind it (AnonHugePages in /proc/self/smaps) when the
 * kernel has them to give; threads taking and giving back blocks at once
 * never share one (each block keeps its owner's pattern until freed).
 *
 * Under the address sanitizer the region is off (it watches the C heap):
 * every block then comes from the C allocator, which is checked too.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"
#include "table_int.h"

#define T0  (INT64_C(1700000000) * SL_NS_PER_S)
#define MIB ((size_t)1 << 20)

static bool inside(const struct sl__arena *a, const void *p)
{
    return a->base != NULL && (const char *)p >= a->base && (const char *)p < a->base + a->size;
}

/* "[madvise]" or "[always]": the kernel may back a madvised region. */
static bool thp_enabled(void)
{
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

    if (f == NULL)
        return false;
    if (fgets(line, sizeof(line), f) == NULL)
        line[0] = '\0';
    fclose(f);
    return strstr(line, "[never]") == NULL && line[0] != '\0';
}

/* AnonHugePages (kB) of the mapping of this process that holds p. */
static long huge_kb_at(const void *p)
{
    char line[256];
    FILE *f = fopen("/proc/self/smaps", "r");
    bool in = false;
    long kb = -1;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

static void test_blocks_and_classes(void **st)
{
    struct sl__arena a;
    const size_t chunk = 40 * 32; /* 20 granules: a class of its own */

    (void)st;
    sl__arena_init(&a, 4 * MIB, chunk);
    char *c1 = sl__arena_alloc(&a, chunk, false);
    char *i1 = sl__arena_alloc(&a, 128, true);
    char *i2 = sl__arena_alloc(&a, 1000, true); /* rounded up to 1024 */
    assert_non_null(c1);
    assert_non_null(i1);
    assert_non_null(i2);
    for (char *p = i1; p < i1 + 128; p++)
        assert_int_equal(*p, 0);
    assert_int_equal((uintptr_t)c1 % 64, 0);
    assert_int_equal((uintptr_t)i1 % 64, 0);
    assert_int_equal((uintptr_t)i2 % 64, 0);
    if (a.base == NULL) { /* address sanitizer: the C allocator serves */
        sl__arena_free(&a, c1, chunk);
        sl__arena_free(&a, i1, 128);
        sl__arena_free(&a, i2, 1000);
        sl__arena_fini(&a);
        skip();
    }
    assert_true(inside(&a, c1) && inside(&a, i1) && inside(&a, i2));
    assert_true(i1 + 128 <= i2 || i2 + 1024 <= i1); /* no overlap */
    memset(i1, 0xab, 128);
    sl__arena_free(&a, i1, 128);
    /* the same class takes it back, zeroed when asked; another does not */
    assert_ptr_not_equal(sl__arena_alloc(&a, 256, false), i1);
    char *again = sl__arena_alloc(&a, 100, true);
    assert_ptr_equal(again, i1);
    for (char *p = again; p < again + 100; p++)
        assert_int_equal(*p, 0);
    sl__arena_free(&a, c1, chunk);
    assert_ptr_not_equal(sl__arena_alloc(&a, 2048, false), c1);
    assert_ptr_equal(sl__arena_alloc(&a, chunk, false), c1);
    /* used up: the C allocator, and its blocks freed to it */
    char *big = sl__arena_alloc(&a, 3 * MIB, false);
    assert_non_null(big);
    char *out = sl__arena_alloc(&a, 2 * MIB, false);
    assert_non_null(out);
    assert_false(inside(&a, out));
    memset(out, 1, 2 * MIB);
    sl__arena_free(&a, out, 2 * MIB);
    sl__arena_fini(&a);
}

static void test_region_offered_to_huge_pages(void **st)
{
    struct sl__arena a;

    (void)st;
    sl__arena_init(&a, 64 * MIB, 40 * 512);
    if (a.base == NULL || !thp_enabled()) {
        sl__arena_fini(&a);
        skip();
    }
    assert_int_equal((uintptr_t)a.base % (2 * MIB), 0);
    assert_true(a.huge);
    assert_int_equal(a.size, 64 * MIB);
    sl__arena_fini(&a);
    /* a small table's region is not offered (it would hold 2 MiB) */
    sl__arena_init(&a, 1 * MIB, 40 * 8);
    assert_non_null(a.base);
    assert_false(a.huge);
    char *p = sl__arena_alloc(&a, 4096, true);
    assert_true(inside(&a, p));
    p[0] = 1;
    assert_true(huge_kb_at(p) == 0);
    sl__arena_fini(&a);
}

/* 100,000 keys, each decided twice: the second decision finds the first's
 * state (remaining one less), wherever its block came from. */
static void test_large_table_decides_from_the_region(void **st)
{
    struct sl_table_config c;
    struct sl_limit l;
    struct sl_decision d;
    sl_table *t;
    char key[32];

    (void)st;
    sl_table_config_init(&c);
    c.max_bytes = 256 * MIB;
    memset(c.secret, 7, sizeof(c.secret));
    assert_int_equal(sl_table_new(&c, &t), SL_OK);
    sl_limit_init(&l);
    l.algo = SL_ALGO_GCRA;
    l.requests = 30;
    l.burst = 15;
    l.period_ns = 60 * SL_NS_PER_S;
    assert_int_equal(sl_limit_validate(&l, NULL), SL_OK);
    sl_limit_finish(&l);
    for (int round = 0; round < 2; round++) {
        for (unsigned k = 0; k < 100000; k++) {
            int n = snprintf(key, sizeof(key), "key:%012u", k);
            assert_int_equal(sl_table_check(t, key, (size_t)n, &l, T0, 1, &d), SL_OK);
            assert_int_equal(d.verdict, SL_ALLOW);
            assert_int_equal(d.remaining, 15 - round);
        }
    }
    struct sl_table_stats s;
    sl_table_stats(t, &s);
    assert_int_equal(s.entries, 100000);
    if (t->arena.base != NULL) {
        assert_true(inside(&t->arena, t->shards));
        assert_true(inside(&t->arena, t->shards[0].index));
        assert_true(inside(&t->arena, t->shards[0].chunks[0]));
        /* the blocks are packed: about the bytes the table counts */
        size_t used = atomic_load(&t->arena.used);
        assert_true(used <= s.bytes + s.bytes / 4);
    }
    if (sl__table_huge_pages(t)) {
        long kb = huge_kb_at(t->shards);
        if (kb == 0)
            print_message("the kernel gave no huge page (fragmented memory?)\n");
        else
            assert_true(kb >= 2048);
    }
    sl_table_free(t);
}

/* Threads taking and giving back blocks of four classes from one small
 * region (so that it runs out and the C allocator serves some): a block
 * filled with its owner's byte must still hold it when given back. */
#define MT_THREADS 4
#define MT_HELD    32
#define MT_ROUNDS  20000

struct mt_arg {
    struct sl__arena *a;
    unsigned id;
    unsigned bad;
};

static void *mt_run(void *p)
{
    static const size_t sizes[4] = {128, 256, 1024, 40 * 32};
    struct mt_arg *m = p;
    char *held[MT_HELD] = {0};
    size_t bytes[MT_HELD] = {0};
    unsigned r = m->id * 2654435761u + 1;

    for (unsigned i = 0; i < MT_ROUNDS; i++) {
        r = r * 1103515245u + 12345u;
        unsigned k = (r >> 8) % MT_HELD;
        if (held[k] != NULL) {
            for (size_t j = 0; j < bytes[k]; j++)
                m->bad += held[k][j] != (char)m->id;
            sl__arena_free(m->a, held[k], bytes[k]);
            held[k] = NULL;
            continue;
        }
        bytes[k] = sizes[(r >> 20) % 4];
        held[k] = sl__arena_alloc(m->a, bytes[k], (r >> 24) & 1);
        if (held[k] == NULL) {
            m->bad++;
            continue;
        }
        memset(held[k], (char)m->id, bytes[k]);
    }
    for (unsigned k = 0; k < MT_HELD; k++)
        sl__arena_free(m->a, held[k], bytes[k]);
    return NULL;
}

static void test_threads_never_share_a_block(void **st)
{
    struct sl__arena a;
    pthread_t th[MT_THREADS];
    struct mt_arg args[MT_THREADS];

    (void)st;
    sl__arena_init(&a, 2 * MIB, 40 * 32);
    for (unsigned i = 0; i < MT_THREADS; i++) {
        args[i] = (struct mt_arg){&a, i + 1, 0};
        assert_int_equal(pthread_create(&th[i], NULL, mt_run, &args[i]), 0);
    }
    for (unsigned i = 0; i < MT_THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].bad, 0);
    }
    sl__arena_fini(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_and_classes),
        cmocka_unit_test(test_region_offered_to_huge_pages),
        cmocka_unit_test(test_large_table_decides_from_the_region),
        cmocka_unit_test(test_threads_never_share_a_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
