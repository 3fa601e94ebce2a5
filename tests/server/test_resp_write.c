/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_resp_write.c - the RESP reply writer's integers against printf:
 * every value of the short path (-9..99) and its edges, both sides of it,
 * powers of ten, INT64_MIN and INT64_MAX, values of every length, alone
 * (sl__resp_w_int), as an array (sl__resp_w_ints, and sl__resp_w_ints5
 * for CL.THROTTLE's reply) and as a run (sl__resp_w_int_run, SL.CHECK's
 * status); and SL.CHECK's one-pass reply (sl__resp_w_decision1) against
 * the same reply built from those general writers, byte for byte. It does
 * not test commands.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resp_write.h"

static void expect_int(int64_t v)
{
    struct sl__buf b = {0};
    char want[32];
    int n = snprintf(want, sizeof(want), ":%" PRId64 "\r\n", v);

    sl__resp_w_int(&b, v);
    assert_int_equal(b.len, (size_t)n);
    assert_memory_equal(b.p, want, (size_t)n);
    free(b.p);
}

static void every_short_value_and_edges(void **state)
{
    (void)state;
    for (int64_t v = -1000; v <= 1000; v++)
        expect_int(v);
}

static void powers_of_ten_and_extremes(void **state)
{
    int64_t p = 1;

    (void)state;
    for (int i = 0; i < 19; i++) {
        expect_int(p);
        expect_int(p - 1);
        expect_int(-p);
        expect_int(-p + 1);
        if (i < 18)
            p *= 10; /* 10^18 is the last power an int64_t holds */
    }
    expect_int(INT64_MAX);
    expect_int(INT64_MIN);
    expect_int(INT64_MIN + 1);
}

/* Values of every length, pseudo-random, against printf. */
static void values_of_every_length(void **state)
{
    uint64_t x = 0x9e3779b97f4a7c15u;

    (void)state;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        expect_int((int64_t)(x >> (i % 64)));
        expect_int(-(int64_t)(x >> (1 + i % 63)));
    }
}

static void an_array_of_integers(void **state)
{
    const int64_t v[5] = {1, 16, 0, -1, 100};
    const char want[] = "*5\r\n:1\r\n:16\r\n:0\r\n:-1\r\n:100\r\n";
    struct sl__buf b = {0};

    (void)state;
    sl__resp_w_ints(&b, v, 5);
    assert_int_equal(b.len, sizeof(want) - 1);
    assert_memory_equal(b.p, want, sizeof(want) - 1);
    sl__resp_w_ints5(&b, v); /* appended: the same five, unrolled */
    assert_int_equal(b.len, 2 * (sizeof(want) - 1));
    assert_memory_equal(b.p + sizeof(want) - 1, want, sizeof(want) - 1);
    b.len = sizeof(want) - 1;
    sl__resp_w_ints(&b, v, 0); /* appended: an empty array */
    assert_int_equal(b.len, sizeof(want) - 1 + 4);
    assert_memory_equal(b.p + sizeof(want) - 1, "*0\r\n", 4);
    b.len = 0;
    sl__resp_w_int_run(&b, v, 5); /* the five without the array's header */
    assert_int_equal(b.len, sizeof(want) - 1 - 4);
    assert_memory_equal(b.p, want + 4, sizeof(want) - 1 - 4);
    free(b.p);
}

/* The general writers' version of a one-status decision (resp_sl.c). */
static void general_decision(struct sl__buf *b, const char *verdict, int64_t delay_ms,
                             const char *status_verdict, const char *name, const int64_t v[5])
{
    sl__resp_w_array(b, 3);
    sl__resp_w_cstr(b, verdict);
    sl__resp_w_int(b, delay_ms);
    sl__resp_w_array(b, 1);
    sl__resp_w_array(b, 7);
    sl__resp_w_cstr(b, status_verdict);
    if (name != NULL)
        sl__resp_w_cstr(b, name);
    else
        sl__resp_w_nil(b);
    sl__resp_w_int_run(b, v, 5);
}

static struct sl_str str(const char *s)
{
    return (struct sl_str){s != NULL ? s : "", s != NULL ? strlen(s) : 0};
}

static void expect_decision(const char *verdict, int64_t delay_ms, const char *status_verdict,
                            const char *name, const int64_t v[5])
{
    struct sl__buf want = {0}, got = {0};

    general_decision(&want, verdict, delay_ms, status_verdict, name, v);
    /* after bytes already there, in a buffer too small for the reply */
    sl__resp_w_int(&got, 7);
    size_t before = got.len;
    sl__resp_w_decision1(&got, str(verdict), delay_ms, str(status_verdict), str(name), name != NULL,
                         v);
    assert_int_equal(got.len - before, want.len);
    assert_memory_equal(got.p, ":7\r\n", before);
    assert_memory_equal(got.p + before, want.p, want.len);
    free(want.p);
    free(got.p);
}

static void a_decision_in_one_pass(void **state)
{
    const int64_t small[5] = {100, 99, 1000, 0, 0};
    const int64_t big[5] = {1000000000, 999999999, INT64_MAX, 12345678901, 1};
    const int64_t neg[5] = {0, -1, -9, INT64_MIN, 0};
    const char want[] = "*3\r\n$5\r\nallow\r\n:0\r\n*1\r\n*7\r\n$5\r\nallow\r\n"
                        "$8\r\nper_user\r\n:100\r\n:99\r\n:1000\r\n:0\r\n:0\r\n";
    struct sl__buf b = {0};
    char name[300];

    (void)state;
    /* one reply spelt out, so that both writers cannot be wrong alike */
    sl__resp_w_decision1(&b, str("allow"), 0, str("allow"), str("per_user"), true, small);
    assert_int_equal(b.len, sizeof(want) - 1);
    assert_memory_equal(b.p, want, sizeof(want) - 1);
    free(b.p);
    expect_decision("allow", 0, "allow", "per_user", small);
    expect_decision("deny", 0, "deny", NULL, big);
    expect_decision("delay", 1500, "delay", "x", neg);
    expect_decision("allow", 0, "deny", "shadowed", small); /* a shadow limit's own verdict */
    expect_decision("deny", INT64_MAX, "deny", "", big);    /* a name of no bytes is not nil */
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    expect_decision("deny", 99, "deny", name, big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_short_value_and_edges), cmocka_unit_test(powers_of_ten_and_extremes),
        cmocka_unit_test(values_of_every_length),      cmocka_unit_test(an_array_of_integers),
        cmocka_unit_test(a_decision_in_one_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
