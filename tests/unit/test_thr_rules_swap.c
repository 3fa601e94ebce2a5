/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_thr_rules_swap.c - snapshots swapped while other threads check: each
 * reader always sees one whole snapshot (both descriptors of a request
 * report limits of the same generation), a swap is seen, and no snapshot is
 * freed while a reader still uses it (ThreadSanitizer/ASan runs this).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"

#define READERS 4
#define SWAPS   200

static sl_rules_slot *slot;
static sl_limiter *lim;
static atomic_bool done;
static atomic_int bad;
static atomic_int saw_change;
static atomic_long checks; /* every check done by any reader */

/* A snapshot whose two descriptors' limits are both named "gN". */
static sl_rules *make(int gen)
{
    char text[512];
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;
    int n =
        snprintf(text, sizeof(text),
                 "domain: s\ndescriptors:\n"
                 "  - key: x\n    rate_limit: {unit: second, requests_per_unit: %d, name: g%d}\n"
                 "  - key: y\n    rate_limit: {unit: second, requests_per_unit: %d, name: g%d}\n",
                 1000 + gen, gen, 1000 + gen, gen);

    assert_int_equal(sl_rules_builder_add_yaml(b, text, (size_t)n, "gen", SL_SRC_FILE), SL_OK);
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    sl_rules_builder_free(b);
    return r;
}

static void *reader(void *arg)
{
    sl_rules_reader *rd = sl_rules_reader_new(slot);
    struct sl_entry e[2] = {{{"x", 1}, {"1", 1}}, {{"y", 1}, {"1", 1}}};
    struct sl_descriptor d[2] = {{&e[0], 1, -1, NULL}, {&e[1], 1, -1, NULL}};
    struct sl_request req = {.domain = {"s", 1}, .descriptors = d, .n_descriptors = 2, .hits = 0};
    char first[32] = "";
    struct sl_result res;

    (void)arg;
    while (!atomic_load(&done)) {
        const sl_rules *r = sl_rules_reader_get(rd);
        req.now_ns += 1000;
        atomic_fetch_add(&checks, 1);
        if (sl_limiter_check(lim, r, &req, &res) != SL_OK || res.statuses[0].limit == NULL ||
            res.statuses[1].limit == NULL ||
            strcmp(res.statuses[0].limit->name, res.statuses[1].limit->name) != 0) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        if (first[0] == '\0')
            snprintf(first, sizeof(first), "%s", res.statuses[0].limit->name);
        else if (strcmp(first, res.statuses[0].limit->name) != 0)
            atomic_store(&saw_change, 1);
    }
    sl_rules_reader_free(rd);
    return NULL;
}

static void swap_under_concurrent_checks(void **st)
{
    pthread_t th[READERS];
    struct sl_limiter_config c;

    sl_limiter_config_init(&c);
    c.table.max_bytes = 1 << 22;
    assert_int_equal(sl_limiter_new(&c, &lim), SL_OK);
    slot = sl_rules_slot_new(make(0));
    assert_non_null(slot);
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader, NULL), 0);
    /* Each publish waits for a check after the previous one, so with more
     * swaps than readers some reader must see two generations. */
    for (int g = 1; g <= SWAPS; g++) {
        long seen = atomic_load(&checks);
        while (atomic_load(&checks) == seen)
            sched_yield();
        sl_rules_slot_publish(slot, make(g));
    }
    atomic_store(&done, true);
    for (int i = 0; i < READERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
    assert_int_equal(atomic_load(&saw_change), 1);
    sl_rules_slot_free(slot);
    sl_limiter_free(lim);
}

static void reader_sees_latest(void **st)
{
    sl_rules_slot *s = sl_rules_slot_new(make(1));
    sl_rules_reader *rd = sl_rules_reader_new(s);
    const sl_rules *a = sl_rules_reader_get(rd);

    assert_ptr_equal(sl_rules_reader_get(rd), a);
    sl_rules_slot_publish(s, make(2));
    assert_true(sl_rules_reader_get(rd) != a);
    sl_rules_reader_free(rd);
    sl_rules_slot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reader_sees_latest),
        cmocka_unit_test(swap_under_concurrent_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
