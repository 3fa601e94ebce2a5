/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_client_key.c - the client key of the per-client budgets
 * (server.max_connections_per_ip, admin.max_failures): addresses of one
 * IPv6 /64 are one client, of two /64s two; a prefix of 128 is one client
 * per address; other prefixes mask to the bit; IPv4 and IPv4-mapped IPv6
 * are the same 4-byte client; another family has no key.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include <cmocka.h>

#include "client_key.h"

/* The key of a textual address, as text: "a.b.c.d" or an IPv6 address. */
static const char *key_of(const char *addr, unsigned prefix, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    unsigned char k[16];
    size_t n;

    memset(&ss, 0, sizeof(ss));
    if (strchr(addr, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
    }
    n = sl__client_key((const struct sockaddr *)&ss, prefix, k);
    assert_true(n == 4 || n == 16);
    assert_non_null(inet_ntop(n == 4 ? AF_INET : AF_INET6, k, out, (socklen_t)cap));
    return out;
}

#define KEY(addr, prefix) key_of((addr), (prefix), (char[64]){0}, 64)

static void test_one_64_is_one_client(void **st)
{
    (void)st;
    assert_string_equal(KEY("2001:db8:1:2::a", 64), "2001:db8:1:2::");
    assert_string_equal(KEY("2001:db8:1:2:ffff:ffff:ffff:ffff", 64), "2001:db8:1:2::");
    assert_string_equal(KEY("2001:db8:1:3::a", 64), "2001:db8:1:3::"); /* another /64 */
    assert_string_equal(KEY("::1", 64), "::");
}

static void test_other_prefixes(void **st)
{
    (void)st;
    assert_string_equal(KEY("2001:db8:1:2::a", 128), "2001:db8:1:2::a"); /* per address */
    assert_string_equal(KEY("2001:db8:1:2::b", 128), "2001:db8:1:2::b");
    assert_string_equal(KEY("2001:db8:1:2::a", 48), "2001:db8:1::");
    assert_string_equal(KEY("2001:db8:1:2::a", 56), "2001:db8:1::");
    assert_string_equal(KEY("2001:db8:1:ff00::", 56), "2001:db8:1:ff00::");
    assert_string_equal(KEY("2001:db8:1:ffff::", 60), "2001:db8:1:fff0::"); /* to the bit */
    assert_string_equal(KEY("ffff:ffff::", 1), "8000::");
    assert_string_equal(KEY("2001:db8::1", 0), "2001:db8::1");   /* out of range: 128 */
    assert_string_equal(KEY("2001:db8::1", 200), "2001:db8::1"); /* out of range: 128 */
}

static void test_ipv4_and_mapped(void **st)
{
    (void)st;
    assert_string_equal(KEY("192.0.2.7", 64), "192.0.2.7"); /* IPv4 unchanged */
    assert_string_equal(KEY("192.0.2.7", 1), "192.0.2.7");
    assert_string_equal(KEY("::ffff:192.0.2.7", 64), "192.0.2.7"); /* mapped: IPv4's key */
    assert_string_equal(KEY("::ffff:192.0.2.8", 128), "192.0.2.8");
}

static void test_other_family(void **st)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    unsigned char k[16];

    (void)st;
    assert_int_equal(sl__client_key((const struct sockaddr *)&un, 64, k), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_64_is_one_client),
        cmocka_unit_test(test_other_prefixes),
        cmocka_unit_test(test_ipv4_and_mapped),
        cmocka_unit_test(test_other_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
