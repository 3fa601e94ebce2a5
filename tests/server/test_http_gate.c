/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_http_gate.c - the admin gate's checks that need no connection: the
 * bearer token, Host values against the listener's names (DNS rebinding),
 * Origin against Host (a web page), and the JSON Content-Type of writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "http_gate.h"

static struct sl_str S(const char *s) {
    return (struct sl_str){s, strlen(s)};
}

static void
test_token(void **st)
{
    const char *t = "0123456789abcdef";

    assert_true(sl__gate_token_ok(t, "Bearer 0123456789abcdef", 23));
    assert_true(sl__gate_token_ok(t, "bearer   0123456789abcdef", 25));
    assert_false(sl__gate_token_ok(t, "Bearer 0123456789abcde", 22));
    assert_false(sl__gate_token_ok(t, "Bearer 0123456789abcdef0", 24));
    assert_false(sl__gate_token_ok(t, "Basic 0123456789abcdef", 22));
    assert_false(sl__gate_token_ok(t, "", 0));
    /* no token configured never means open */
    assert_false(sl__gate_token_ok(NULL, "Bearer x", 8));
    assert_false(sl__gate_token_ok(NULL, "", 0));
    (void)st;
}

static void test_split_host(void **st)
{
    struct sl_str h, p;

    assert_true(sl__gate_split_host(S("a.b:8080"), &h, &p));
    assert_int_equal(h.len, 3);
    assert_memory_equal(p.p, ":8080", 5);
    assert_true(sl__gate_split_host(S("[::1]:6390"), &h, &p));
    assert_int_equal(h.len, 3);
    assert_memory_equal(h.p, "::1", 3);
    assert_true(sl__gate_split_host(S("[::1]"), &h, &p));
    assert_int_equal(p.len, 0);
    assert_true(sl__gate_split_host(S("localhost:65535"), &h, &p));
    assert_true(sl__gate_split_host(S("localhost:1"), &h, &p));
    for (const char *const *b =
             (const char *const[]){"", ":80", "a:", "a:x", "a:1234567", "[::1", "[::1]x", "[]:1",
                                   "localhost:99999", "localhost:65536", "localhost:0",
                                   "localhost:00000", "localhost:abc", "localhost:", "[::1]:0",
                                   "[::1]:70000", NULL};
         *b != NULL; b++)
        if (sl__gate_split_host(S(*b), &h, &p))
            fail_msg("'%s' accepted", *b);
    (void)st;
}

static void test_host(void **st)
{
    const char *hosts[] = {"sluice.internal"};
    struct sl__gate_names loop = {"127.0.0.1", "127.0.0.1", hosts, 1};
    struct sl__gate_names wild = {NULL, "10.1.2.3", NULL, 0};
    struct sl__gate_names v6 = {NULL, "::ffff:127.0.0.1", NULL, 0};

    assert_true(sl__gate_host_ok(S("127.0.0.1:6390"), &loop));
    assert_true(sl__gate_host_ok(S("localhost:6390"), &loop));
    assert_true(sl__gate_host_ok(S("LocalHost"), &loop));
    assert_true(sl__gate_host_ok(S("SLUICE.internal:1"), &loop));
    assert_false(sl__gate_host_ok(S("evil.example:6390"), &loop));
    assert_false(sl__gate_host_ok(S("localhost:99999"), &loop)); /* no such port */
    assert_false(sl__gate_host_ok(S("localhost:0"), &loop));
    assert_false(sl__gate_host_ok(S("localhost:abc"), &loop));
    assert_false(sl__gate_host_ok(S("localhost:"), &loop));
    assert_false(sl__gate_host_ok(S("127.0.0.1.evil.example"), &loop));
    assert_false(sl__gate_host_ok(S("localhost.evil.example"), &loop));
    assert_false(sl__gate_host_ok(S("sluice.internal.evil"), &loop));
    assert_true(sl__gate_host_ok(S("10.1.2.3:80"), &wild));
    assert_false(sl__gate_host_ok(S("localhost"), &wild)); /* not reached on loopback */
    assert_false(sl__gate_host_ok(S("0.0.0.0"), &wild));
    assert_true(sl__gate_host_ok(S("127.0.0.1"), &v6)); /* IPv4 on a dual-stack listener */
    assert_true(sl__gate_host_ok(S("localhost"), &v6));
    (void)st;
}

static void test_origin(void **st)
{
    assert_true(sl__gate_origin_ok(S("http://127.0.0.1:6390"), S("127.0.0.1:6390")));
    assert_true(sl__gate_origin_ok(S("HTTP://Sluice.Internal"), S("sluice.internal:80")));
    assert_true(sl__gate_origin_ok(S("https://sluice.internal"), S("sluice.internal:443")));
    assert_true(sl__gate_origin_ok(S("http://[::1]:6390"), S("[::1]:6390")));
    assert_false(sl__gate_origin_ok(S("http://evil.example"), S("127.0.0.1:6390")));
    assert_false(sl__gate_origin_ok(S("http://127.0.0.1:6391"), S("127.0.0.1:6390")));
    assert_false(sl__gate_origin_ok(S("http://localhost:6390"), S("127.0.0.1:6390")));
    assert_false(sl__gate_origin_ok(S("https://sluice.internal"), S("sluice.internal:80")));
    assert_false(sl__gate_origin_ok(S("null"), S("127.0.0.1:6390")));
    assert_false(sl__gate_origin_ok(S("file://"), S("127.0.0.1")));
    assert_false(sl__gate_origin_ok(S("http://"), S("")));
    (void)st;
}

static void test_json_type(void **st)
{
    assert_true(sl__gate_json_type(S("application/json")));
    assert_true(sl__gate_json_type(S("Application/JSON; charset=utf-8")));
    assert_true(sl__gate_json_type(S("application/json ;charset=utf-8")));
    assert_false(sl__gate_json_type(S("text/plain")));
    assert_false(sl__gate_json_type(S("text/plain; application/json")));
    assert_false(sl__gate_json_type(S("application/x-www-form-urlencoded")));
    assert_false(sl__gate_json_type(S("multipart/form-data; boundary=x")));
    assert_false(sl__gate_json_type(S("application/jsonx")));
    assert_false(sl__gate_json_type(S("")));
    (void)st;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token),     cmocka_unit_test(test_split_host),
        cmocka_unit_test(test_host),      cmocka_unit_test(test_origin),
        cmocka_unit_test(test_json_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
