/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_http_query.c - query strings of the GET endpoints: order kept,
 * percent and '+' decoding, empty pieces, names without values, and the
 * errors (bad escapes, too many pairs, scratch too small).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "http_query.h"

static void assert_str(struct sl_str s, const char *want)
{
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.p, want, s.len);
}

static int parse(const char *q, struct sl__qpair *p, size_t max, char *scratch, size_t cap)
{
    return sl__query_parse(q, strlen(q), p, max, scratch, cap);
}

static void test_decode_in_order(void **st)
{
    struct sl__qpair p[8];
    char scratch[128];
    const char *q = "domain=api&user=al%69ce&path=%2Fa%2fb&&flag&sp=a+b%20c&=v";

    assert_int_equal(parse(q, p, 8, scratch, strlen(q)), 6);
    assert_str(p[0].name, "domain");
    assert_str(p[0].value, "api");
    assert_str(p[1].value, "alice");
    assert_str(p[2].name, "path");
    assert_str(p[2].value, "/a/b");
    assert_str(p[3].name, "flag");
    assert_str(p[3].value, "");
    assert_str(p[4].value, "a b c");
    assert_str(p[5].name, "");
    assert_str(p[5].value, "v");
    assert_int_equal(parse("", p, 8, scratch, sizeof(scratch)), 0);
    assert_int_equal(parse("&&&", p, 8, scratch, sizeof(scratch)), 0);
    (void)st;
}

static void test_errors(void **st)
{
    struct sl__qpair p[2];
    char scratch[64];

    assert_int_equal(parse("a=%", p, 2, scratch, sizeof(scratch)), SL_EINVAL);
    assert_int_equal(parse("a=%4", p, 2, scratch, sizeof(scratch)), SL_EINVAL);
    assert_int_equal(parse("a=%zz", p, 2, scratch, sizeof(scratch)), SL_EINVAL);
    assert_int_equal(parse("%g1=b", p, 2, scratch, sizeof(scratch)), SL_EINVAL);
    assert_int_equal(parse("a=1&b=2&c=3", p, 2, scratch, sizeof(scratch)), SL_ETOOBIG);
    assert_int_equal(parse("abc=def", p, 2, scratch, 5), SL_ETOOBIG);
    assert_int_equal(parse("a=%41", p, 2, scratch, sizeof(scratch)), 1);
    assert_str(p[0].value, "A");
    (void)st;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_in_order),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
