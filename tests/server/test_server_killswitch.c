/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_server_killswitch.c - the kill-switch table (killswitch.c) and the
 * admin token compare (http_gate.c): modes per domain and for "*", removal,
 * the 64-domain cap, the shadow edit of a result, and bearer token
 * acceptance. It does not start a server (integration tests do).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http_gate.h"
#include "killswitch.h"

static const uint8_t secret[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static struct sl_str str(const char *s)
{
    return (struct sl_str){s, strlen(s)};
}

static void test_modes(void **state)
{
    struct sl__ks ks;
    (void)state;

    sl__ks_init(&ks, secret);
    assert_int_equal(sl__ks_mode(&ks, str("api")), SL__KS_ENFORCE);
    assert_int_equal(sl__ks_set(&ks, str("api"), SL__KS_SHADOW), SL_OK);
    assert_int_equal(sl__ks_mode(&ks, str("api")), SL__KS_SHADOW);
    assert_int_equal(sl__ks_mode(&ks, str("apix")), SL__KS_ENFORCE);
    assert_int_equal(sl__ks_set(&ks, str("*"), SL__KS_OFF), SL_OK);
    assert_int_equal(sl__ks_mode(&ks, str("other")), SL__KS_OFF);
    assert_int_equal(sl__ks_mode(&ks, str("api")), SL__KS_OFF); /* the more relaxed */
    assert_int_equal(sl__ks_set(&ks, str("*"), SL__KS_ENFORCE), SL_OK);
    assert_int_equal(sl__ks_set(&ks, str("api"), SL__KS_ENFORCE), SL_OK);
    assert_int_equal(sl__ks_mode(&ks, str("api")), SL__KS_ENFORCE);
    assert_int_equal(sl__ks_set(&ks, str(""), SL__KS_OFF), SL_EINVAL);
    sl__ks_destroy(&ks);
}

static void test_cap_and_reuse(void **state)
{
    struct sl__ks ks;
    char name[16];
    (void)state;

    sl__ks_init(&ks, secret);
    for (int i = 0; i < SL__KS_MAX; i++) {
        snprintf(name, sizeof(name), "d%d", i);
        assert_int_equal(sl__ks_set(&ks, str(name), SL__KS_OFF), SL_OK);
    }
    assert_int_equal(sl__ks_set(&ks, str("more"), SL__KS_OFF), SL_EFULL);
    assert_int_equal(sl__ks_set(&ks, str("d7"), SL__KS_SHADOW), SL_OK); /* an update fits */
    assert_int_equal(sl__ks_mode(&ks, str("d7")), SL__KS_SHADOW);
    assert_int_equal(sl__ks_set(&ks, str("d3"), SL__KS_ENFORCE), SL_OK);
    assert_int_equal(sl__ks_set(&ks, str("more"), SL__KS_OFF), SL_OK);
    assert_int_equal(sl__ks_mode(&ks, str("more")), SL__KS_OFF);
    assert_int_equal(sl__ks_mode(&ks, str("d3")), SL__KS_ENFORCE);
    sl__ks_destroy(&ks);
}

static void test_unenforce(void **state)
{
    struct sl_result res, scratch;
    const struct sl_result *out;
    (void)state;

    memset(&res, 0, sizeof(res));
    res.n_statuses = 2;
    out = sl__ks_unenforce(&res, &scratch);
    assert_ptr_equal(out, &res); /* allowed already: untouched */
    res.verdict = SL_DENY;
    res.statuses[1].d.verdict = SL_DENY;
    res.statuses[1].d.retry_after_ns = 5;
    out = sl__ks_unenforce(&res, &scratch);
    assert_ptr_equal(out, &scratch);
    assert_int_equal(out->verdict, SL_ALLOW);
    assert_int_equal(out->statuses[1].d.verdict, SL_ALLOW);
    assert_int_equal(out->statuses[1].d.retry_after_ns, 0);
    assert_true(out->statuses[1].shadow_denied);
    assert_false(out->statuses[0].shadow_denied);
}

static void test_token(void **state)
{
    (void)state;
    /* no token never means open: the server always has one (token.h) */
    assert_false(sl__gate_token_ok(NULL, "", 0));
    assert_true(sl__gate_token_ok("tok", "Bearer tok", 10));
    assert_true(sl__gate_token_ok("tok", "bearer tok", 10));
    assert_false(sl__gate_token_ok("tok", "Bearer to", 9));
    assert_false(sl__gate_token_ok("tok", "Bearer toka", 11));
    assert_false(sl__gate_token_ok("tok", "Bearer tox", 10));
    assert_false(sl__gate_token_ok("tok", "Basic tok", 9));
    assert_false(sl__gate_token_ok("tok", "", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_cap_and_reuse),
        cmocka_unit_test(test_unenforce),
        cmocka_unit_test(test_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
