/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_limiter_lease.c - lease tokens (lib/lease.c): sealing round-trips,
 * depends on the secret, hides the entry's fingerprint (which would be an
 * oracle for crafting colliding keys), and malformed or foreign tokens are
 * refused or find nothing.
 *
 * Acquiring and releasing through the limiter is in test_limiter.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"
#include "lease.h"

#define T0 (INT64_C(1700000000) * SL_NS_PER_S)

static void key_from(uint8_t fill, uint8_t key[16])
{
    uint8_t secret[16];

    memset(secret, fill, sizeof(secret));
    sl__lease_key(secret, key);
}

static void test_seal_round_trips(void **st)
{
    uint8_t key[16];
    char token[SL_LEASE_MAX];
    struct sl__fp fps[SL_MAX_LEASES], in[SL_MAX_LEASES];
    uint64_t ids[SL_MAX_LEASES];
    size_t n, len = 0;

    (void)st;
    key_from(7, key);
    for (size_t i = 0; i < SL_MAX_LEASES; i++) {
        in[i].w[0] = (uint32_t)(0x9e3779b9u * (i + 1));
        in[i].w[1] = (uint32_t)(0x85ebca6bu * (i + 3));
        in[i].w[2] = 0;
        if (len > 0)
            token[len++] = '.';
        sl__lease_seal(key, &in[i], 1000 + i, token + len);
        len += SL__LEASE_HEX;
    }
    assert_true(len < SL_LEASE_MAX);
    assert_int_equal(sl__lease_parse(key, token, len, fps, ids, &n), SL_OK);
    assert_int_equal(n, SL_MAX_LEASES);
    for (size_t i = 0; i < n; i++) {
        assert_memory_equal(&fps[i], &in[i], sizeof(in[i]));
        assert_int_equal(ids[i], 1000 + i);
    }
}

static void test_token_hides_fingerprint(void **st)
{
    uint8_t k1[16], k2[16];
    struct sl__fp fp = {{0x01234567u, 0x89abcdefu, 0}};
    char t1[SL__LEASE_HEX + 1] = {0}, t2[SL__LEASE_HEX + 1] = {0};

    (void)st;
    key_from(1, k1);
    key_from(2, k2);
    sl__lease_seal(k1, &fp, 42, t1);
    sl__lease_seal(k2, &fp, 42, t2);
    assert_string_not_equal(t1, t2);
    assert_null(strstr(t1, "01234567"));
    assert_null(strstr(t1, "89abcdef"));
    assert_null(strstr(t1, "000000000000002a")); /* nor the lease id */
}

static void test_malformed_tokens(void **st)
{
    uint8_t key[16];
    struct sl__fp fps[SL_MAX_LEASES];
    uint64_t ids[SL_MAX_LEASES];
    size_t n;
    char many[SL_LEASE_MAX + 64];

    (void)st;
    key_from(3, key);
    const char *bad[] = {"",
                         "abc",
                         "0123456789abcdef0123456789abcde",
                         "0123456789abcdef0123456789abcdeF",
                         "0123456789abcdef0123456789abcdef.",
                         "0123456789abcdef0123456789abcdef-0123456789abcdef0123456789abcdef"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sl__lease_parse(key, bad[i], strlen(bad[i]), fps, ids, &n), SL_EINVAL);
    assert_int_equal(sl__lease_parse(key, NULL, 3, fps, ids, &n), SL_EINVAL);
    /* More leases than a request can hold. */
    size_t len = 0;
    for (int i = 0; i <= SL_MAX_LEASES && len + 33 < sizeof(many); i++) {
        if (len > 0)
            many[len++] = '.';
        memset(many + len, 'a', SL__LEASE_HEX);
        len += SL__LEASE_HEX;
    }
    assert_int_equal(sl__lease_parse(key, many, len, fps, ids, &n), SL_EINVAL);
}

/* A token from another limiter (another secret) releases nothing here. */
static void test_foreign_token_finds_nothing(void **st)
{
    struct sl_limiter_config c;
    sl_limiter *a, *b;
    struct sl_limit l;
    struct sl_match m;
    struct sl_request req;
    struct sl_result res;

    (void)st;
    sl_limit_init(&l);
    l.algo = SL_ALGO_CONCURRENCY;
    l.requests = 1;
    l.lease_ns = 60 * SL_NS_PER_S;
    assert_int_equal(sl_limit_validate(&l, NULL), SL_OK);
    sl_limit_finish(&l);
    memset(&m, 0, sizeof(m));
    m.limits[0] = &l;
    m.n_limits = 1;
    m.key_len = 4;
    memcpy(m.key, "conn", 4);
    memset(&req, 0, sizeof(req));
    req.hits = 1;
    req.now_ns = T0;
    sl_limiter_config_init(&c);
    memset(c.table.secret, 1, 16);
    assert_int_equal(sl_limiter_new(&c, &a), SL_OK);
    memset(c.table.secret, 2, 16);
    assert_int_equal(sl_limiter_new(&c, &b), SL_OK);
    assert_int_equal(sl_limiter_check_matched(a, &m, 1, &req, &res), SL_OK);
    char token[SL_LEASE_MAX];
    memcpy(token, res.lease, sizeof(token));
    assert_int_equal(sl_limiter_check_matched(b, &m, 1, &req, &res), SL_OK);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(sl_limiter_release(b, token, strlen(token), T0), SL_ENOENT);
    assert_int_equal(sl_limiter_release(a, token, strlen(token), T0), SL_OK);
    sl_limiter_free(a);
    sl_limiter_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seal_round_trips),
        cmocka_unit_test(test_token_hides_fingerprint),
        cmocka_unit_test(test_malformed_tokens),
        cmocka_unit_test(test_foreign_token_finds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
