/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_http_headers.c - the rate-limit headers written for a decision:
 * exact IETF draft-10 syntax, the X- family, Retry-After rounding and
 * omission, family selection, name escaping and buffer overflow.
 *
 * Results are built by hand here; no limiter runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "headers.h"

#define NOW_NS (INT64_C(1700000000) * SL_NS_PER_S + 250 * SL_NS_PER_MS)

static struct sl_limit lim_a, lim_b;

static void make_limit(struct sl_limit *l, const char *name, uint64_t requests, int64_t period_ns)
{
    sl_limit_init(l);
    l->algo = SL_ALGO_FIXED_WINDOW;
    l->requests = requests;
    l->period_ns = period_ns;
    l->name = name;
}

static void set_status(struct sl_status *s, const struct sl_limit *l, enum sl_verdict v,
                       int64_t remaining, int64_t reset_ns, int64_t retry_ns)
{
    memset(s, 0, sizeof(*s));
    s->limit = l;
    s->d.verdict = v;
    s->d.quota = (int64_t)l->requests;
    s->d.remaining = remaining;
    s->d.reset_ns = reset_ns;
    s->d.retry_after_ns = retry_ns;
}

static int write_all(const struct sl_result *r, unsigned fams, char *buf, size_t cap)
{
    size_t len = 0;
    int rc = sl__hdr_write(r, NOW_NS, fams, buf, cap, &len);
    if (rc == SL_OK)
        assert_int_equal(strlen(buf), len);
    return rc;
}

static void test_allow_one_limit(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 1};
    char buf[512], want[512];

    make_limit(&lim_a, "api.user", 100, 60 * SL_NS_PER_S);
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, 99, 59 * SL_NS_PER_S + 1, 0);
    assert_int_equal(write_all(&r, SL__HDR_ALL, buf, sizeof(buf)), SL_OK);
    /* Reset is now + 59.000000001 s, rounded up to whole epoch seconds. */
    snprintf(want, sizeof(want),
             "RateLimit-Policy: \"api.user\";q=100;w=60\r\n"
             "RateLimit: \"api.user\";r=99;t=60\r\n"
             "X-RateLimit-Limit: 100\r\n"
             "X-RateLimit-Remaining: 99\r\n"
             "X-RateLimit-Reset: %lld\r\n",
             (long long)(1700000000 + 60));
    assert_string_equal(buf, want);
    (void)st;
}

static void test_deny_retry_after_rounded_up(void **st)
{
    struct sl_result r = {.verdict = SL_DENY, .n_statuses = 1};
    char buf[512];

    make_limit(&lim_a, "a", 10, SL_NS_PER_S);
    set_status(&r.statuses[0], &lim_a, SL_DENY, 0, 900 * SL_NS_PER_MS,
               11 * SL_NS_PER_S + 1 * SL_NS_PER_MS);
    assert_int_equal(write_all(&r, SL__HDR_RETRY_AFTER, buf, sizeof(buf)), SL_OK);
    assert_string_equal(buf, "Retry-After: 12\r\n");
    (void)st;
}

static void test_deny_never_omits_retry_after(void **st)
{
    struct sl_result r = {.verdict = SL_DENY, .n_statuses = 1};
    char buf[512];

    make_limit(&lim_a, "a", 10, SL_NS_PER_S);
    set_status(&r.statuses[0], &lim_a, SL_DENY, 3, SL_NS_PER_S, -1);
    assert_int_equal(write_all(&r, SL__HDR_ALL, buf, sizeof(buf)), SL_OK);
    assert_null(strstr(buf, "Retry-After"));
    assert_non_null(strstr(buf, "X-RateLimit-Remaining: 3\r\n"));
    (void)st;
}

static void test_allow_has_no_retry_after(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 1};
    char buf[512];

    make_limit(&lim_a, "a", 10, SL_NS_PER_S);
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, 3, SL_NS_PER_S, 0);
    assert_int_equal(write_all(&r, SL__HDR_RETRY_AFTER, buf, sizeof(buf)), SL_OK);
    assert_string_equal(buf, "");
    (void)st;
}

static void test_primary_is_denying_longest_retry(void **st)
{
    struct sl_result r = {.verdict = SL_DENY, .n_statuses = 3};
    struct sl_limit c;
    char buf[1024];

    make_limit(&lim_a, "short", 5, SL_NS_PER_S);
    make_limit(&lim_b, "long", 50, 60 * SL_NS_PER_S);
    make_limit(&c, "fine", 1000, SL_NS_PER_S);
    set_status(&r.statuses[0], &lim_a, SL_DENY, 0, SL_NS_PER_S, 2 * SL_NS_PER_S);
    set_status(&r.statuses[1], &lim_b, SL_DENY, 0, 60 * SL_NS_PER_S, 30 * SL_NS_PER_S);
    set_status(&r.statuses[2], &c, SL_ALLOW, 0, SL_NS_PER_S, 0);
    assert_ptr_equal(sl__hdr_primary(&r), &r.statuses[1]);
    assert_int_equal(write_all(&r, SL__HDR_X | SL__HDR_RETRY_AFTER, buf, sizeof(buf)), SL_OK);
    assert_non_null(strstr(buf, "X-RateLimit-Limit: 50\r\n"));
    assert_non_null(strstr(buf, "Retry-After: 30\r\n"));

    /* -1 (never) is the longest retry of all. */
    r.statuses[0].d.retry_after_ns = -1;
    assert_ptr_equal(sl__hdr_primary(&r), &r.statuses[0]);
    (void)st;
}

static void test_primary_lowest_remaining_tie_longer_period(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 3};

    make_limit(&lim_a, "sec", 10, SL_NS_PER_S);
    make_limit(&lim_b, "min", 100, 60 * SL_NS_PER_S);
    r.statuses[0].limit = NULL; /* nothing applied to this descriptor */
    set_status(&r.statuses[1], &lim_a, SL_ALLOW, 4, SL_NS_PER_S, 0);
    set_status(&r.statuses[2], &lim_b, SL_ALLOW, 4, SL_NS_PER_S, 0);
    assert_ptr_equal(sl__hdr_primary(&r), &r.statuses[2]);
    r.statuses[1].d.remaining = 3;
    assert_ptr_equal(sl__hdr_primary(&r), &r.statuses[1]);
    (void)st;
}

static void test_ietf_lists_each_limit_once(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 3};
    char buf[1024];

    make_limit(&lim_a, "a", 10, 90 * SL_NS_PER_S);
    make_limit(&lim_b, "b", 7, 1500 * SL_NS_PER_MS);
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, 9, 2 * SL_NS_PER_S, 0);
    set_status(&r.statuses[1], &lim_b, SL_ALLOW, 6, 1, 0);
    set_status(&r.statuses[2], &lim_a, SL_ALLOW, 9, 2 * SL_NS_PER_S, 0);
    assert_int_equal(write_all(&r, SL__HDR_IETF, buf, sizeof(buf)), SL_OK);
    /* A 1.5 s window is announced as 2 s (rounded up), a 1 ns reset as 1 s. */
    assert_string_equal(buf, "RateLimit-Policy: \"a\";q=10;w=90, \"b\";q=7;w=2\r\n"
                             "RateLimit: \"a\";r=9;t=2, \"b\";r=6;t=1\r\n");
    (void)st;
}

static void test_name_escaping_and_default(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 2};
    char buf[1024];

    make_limit(&lim_a, "q\"b\\s\x01\xc3", 1, SL_NS_PER_S);
    make_limit(&lim_b, NULL, 2, SL_NS_PER_S);
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, 0, 0, 0);
    set_status(&r.statuses[1], &lim_b, SL_ALLOW, 1, 0, 0);
    assert_int_equal(write_all(&r, SL__HDR_IETF, buf, sizeof(buf)), SL_OK);
    assert_non_null(
        strstr(buf, "RateLimit-Policy: \"q\\\"b\\\\s??\";q=1;w=1, \"default\";q=2;w=1"));
    (void)st;
}

/* A bucket announces its sustained rate, not its capacity: a leaky bucket
 * of 2/s with burst 4 (quota 5 in the decision) is q=2;w=1, a token bucket
 * refilling 1/s with burst 5 is q=1;w=1, and X-RateLimit-Limit says the
 * same; the burst shows in the remaining. */
static void test_buckets_announce_their_rate(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 2};
    char buf[1024];

    sl_limit_init(&lim_a);
    lim_a.algo = SL_ALGO_LEAKY_BUCKET;
    lim_a.requests = 2;
    lim_a.period_ns = SL_NS_PER_S;
    lim_a.burst = 4;
    lim_a.name = "per_ip";
    sl_limit_init(&lim_b);
    lim_b.algo = SL_ALGO_TOKEN_BUCKET;
    lim_b.requests = 1;
    lim_b.period_ns = SL_NS_PER_S;
    lim_b.burst = 5;
    lim_b.name = "path";
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, 4, SL_NS_PER_S, 0);
    r.statuses[0].d.quota = sl_limit_quota(&lim_a);
    set_status(&r.statuses[1], &lim_b, SL_ALLOW, 5, SL_NS_PER_S, 0);
    r.statuses[1].d.quota = sl_limit_quota(&lim_b);
    assert_int_equal(r.statuses[0].d.quota, 5);
    assert_int_equal(write_all(&r, SL__HDR_IETF | SL__HDR_X, buf, sizeof(buf)), SL_OK);
    assert_non_null(strstr(buf, "RateLimit-Policy: \"per_ip\";q=2;w=1, \"path\";q=1;w=1\r\n"));
    assert_non_null(strstr(buf, "RateLimit: \"per_ip\";r=4;t=1, \"path\";r=5;t=1\r\n"));
    assert_non_null(strstr(buf, "X-RateLimit-Limit: 2\r\n"));
    (void)st;
}

static void test_concurrency_has_no_window(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 1};
    char buf[256];

    sl_limit_init(&lim_a);
    lim_a.algo = SL_ALGO_CONCURRENCY;
    lim_a.requests = 4;
    lim_a.name = "inflight";
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, 3, 0, 0);
    assert_int_equal(write_all(&r, SL__HDR_IETF, buf, sizeof(buf)), SL_OK);
    assert_non_null(strstr(buf, "RateLimit-Policy: \"inflight\";q=4\r\n"));
    (void)st;
}

static void test_no_limit_no_headers_and_huge_values_clamped(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 1};
    char buf[512];

    r.statuses[0].limit = NULL;
    assert_int_equal(write_all(&r, SL__HDR_ALL, buf, sizeof(buf)), SL_OK);
    assert_string_equal(buf, "");

    make_limit(&lim_a, "big", UINT64_MAX, INT64_MAX);
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, INT64_MAX, INT64_MAX, 0);
    r.statuses[0].d.quota = INT64_MAX;
    assert_int_equal(write_all(&r, SL__HDR_ALL, buf, sizeof(buf)), SL_OK);
    assert_non_null(strstr(buf, "q=999999999999999;"));
    /* now + reset saturates at INT64_MAX ns, which is 9223372036.85... s. */
    assert_non_null(strstr(buf, "X-RateLimit-Reset: 9223372037\r\n"));
    assert_non_null(strstr(buf, "X-RateLimit-Remaining: 999999999999999\r\n"));
    (void)st;
}

static void test_small_buffer_is_toobig(void **st)
{
    struct sl_result r = {.verdict = SL_ALLOW, .n_statuses = 1};
    char buf[512];
    size_t len = 0, need;

    make_limit(&lim_a, "api", 100, 60 * SL_NS_PER_S);
    set_status(&r.statuses[0], &lim_a, SL_ALLOW, 99, SL_NS_PER_S, 0);
    assert_int_equal(sl__hdr_write(&r, NOW_NS, SL__HDR_ALL, buf, sizeof(buf), &need), SL_OK);
    assert_int_equal(sl__hdr_write(&r, NOW_NS, SL__HDR_ALL, buf, need - 1, &len), SL_ETOOBIG);
    assert_int_equal(sl__hdr_write(&r, NOW_NS, SL__HDR_ALL, buf, need, &len), SL_OK);
    assert_int_equal(len, need);
    (void)st;
}

static void test_family_parse(void **st)
{
    unsigned bits = 99;

    assert_int_equal(sl__hdr_family_parse("ietf", 4, &bits), SL_OK);
    assert_int_equal(bits, SL__HDR_IETF);
    assert_int_equal(sl__hdr_family_parse("none", 4, &bits), SL_OK);
    assert_int_equal(bits, 0);
    assert_int_equal(sl__hdr_family_parse("ietfx", 5, &bits), SL_EINVAL);
    assert_int_equal(sl__hdr_family_parse("iet", 3, &bits), SL_EINVAL);
    (void)st;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allow_one_limit),
        cmocka_unit_test(test_deny_retry_after_rounded_up),
        cmocka_unit_test(test_deny_never_omits_retry_after),
        cmocka_unit_test(test_allow_has_no_retry_after),
        cmocka_unit_test(test_primary_is_denying_longest_retry),
        cmocka_unit_test(test_primary_lowest_remaining_tie_longer_period),
        cmocka_unit_test(test_ietf_lists_each_limit_once),
        cmocka_unit_test(test_name_escaping_and_default),
        cmocka_unit_test(test_buckets_announce_their_rate),
        cmocka_unit_test(test_concurrency_has_no_window),
        cmocka_unit_test(test_no_limit_no_headers_and_huge_values_clamped),
        cmocka_unit_test(test_small_buffer_is_toobig),
        cmocka_unit_test(test_family_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
