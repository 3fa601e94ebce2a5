/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_grpc_codec.c - the hand-written RateLimitResponse encoder
 * (grpc_codec.c) against protobuf-c's packing of the same answer: for
 * edge answers (all zeros, UINT32_MAX everywhere, empty and long names,
 * a negative reset, 32 statuses, headers with a NUL in them) and many
 * random ones, the bytes must be equal, the length must be what it
 * returns, a buffer one byte short must be refused (SL_ETOOBIG) and
 * protobuf-c must read the bytes back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "grpc_codec.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitResponse RlsResponse;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus RlsStatus;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit RlsLimit;
typedef Envoy__Config__Core__V3__HeaderValue HeaderValue;

/* ------------------------------------------------------------ the reference */

/* protobuf-c's packing of `a`, fields mapped as sluiced mapped them when it
 * packed with protobuf-c (C strings: a header stops at a NUL). */
static size_t reference_pack(const struct sl__envoy_answer *a, uint8_t *out, size_t cap)
{
    static RlsStatus st[SL_MAX_DESCRIPTORS];
    static RlsStatus *stp[SL_MAX_DESCRIPTORS];
    static RlsLimit lim[SL_MAX_DESCRIPTORS];
    static Google__Protobuf__Duration reset[SL_MAX_DESCRIPTORS];
    static HeaderValue hdr[SL__ENVOY_MAX_HEADERS];
    static HeaderValue *hdrp[SL__ENVOY_MAX_HEADERS];
    static char hbuf[SL__ENVOY_MAX_HEADERS][2][4096];
    RlsResponse m = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__INIT;
    size_t n;

    m.overall_code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)a->overall;
    m.n_statuses = a->n;
    m.statuses = stp;
    for (size_t i = 0; i < a->n; i++) {
        const struct sl__envoy_status *e = &a->st[i];

        envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(&st[i]);
        stp[i] = &st[i];
        st[i].code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)e->code;
        st[i].limit_remaining = e->limit_remaining;
        if (!e->has_limit)
            continue;
        envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&lim[i]);
        lim[i].name = (char *)e->name;
        lim[i].requests_per_unit = e->requests_per_unit;
        lim[i].unit = (Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit__Unit)e->unit;
        google__protobuf__duration__init(&reset[i]);
        reset[i].seconds = e->reset_s;
        st[i].current_limit = &lim[i];
        st[i].duration_until_reset = &reset[i];
    }
    for (size_t i = 0; i < a->headers.n; i++) {
        envoy__config__core__v3__header_value__init(&hdr[i]);
        memcpy(hbuf[i][0], a->headers.h[i].key.p, a->headers.h[i].key.len);
        hbuf[i][0][a->headers.h[i].key.len] = '\0';
        memcpy(hbuf[i][1], a->headers.h[i].value.p, a->headers.h[i].value.len);
        hbuf[i][1][a->headers.h[i].value.len] = '\0';
        hdr[i].key = hbuf[i][0];
        hdr[i].value = hbuf[i][1];
        hdrp[i] = &hdr[i];
    }
    m.n_response_headers_to_add = a->headers.n;
    m.response_headers_to_add = hdrp;
    n = envoy__service__ratelimit__v3__rate_limit_response__get_packed_size(&m);
    assert_true(n <= cap);
    return envoy__service__ratelimit__v3__rate_limit_response__pack(&m, out);
}

/* ------------------------------------------------------------ checking one */

static unsigned long checked;

static void check_answer(const struct sl__envoy_answer *a)
{
    static uint8_t want[1 << 16], got[1 << 16];
    size_t wn = reference_pack(a, want, sizeof(want)), gn = 0;
    RlsResponse *m;

    assert_int_equal(sl__grpc_rls_encode(a, got, sizeof(got), &gn), SL_OK);
    assert_int_equal(gn, wn);
    assert_memory_equal(got, want, wn);
    gn = 0;
    assert_int_equal(sl__grpc_rls_encode(a, got, wn, &gn), SL_OK); /* exactly enough */
    assert_int_equal(gn, wn);
    if (wn > 0)
        assert_int_equal(sl__grpc_rls_encode(a, got, wn - 1, &gn), SL_ETOOBIG);
    m = envoy__service__ratelimit__v3__rate_limit_response__unpack(NULL, wn, want);
    assert_non_null(m);
    assert_int_equal(m->n_statuses, a->n);
    envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(m, NULL);
    checked++;
}

/* ------------------------------------------------------------ answers */

static char names[SL_MAX_DESCRIPTORS][512];
static char hbytes[SL__ENVOY_MAX_HEADERS][2][700];

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A uint32 that is often on a varint's edge. */
static uint32_t some_u32(void)
{
    static const uint32_t edges[] = {
        0,       1,       127,       128,       16383,          16384,
        2097151, 2097152, 268435455, 268435456, UINT32_MAX - 1, UINT32_MAX};
    uint64_t r = next();

    if (r % 3 == 0)
        return edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))];
    return (uint32_t)(next() >> (r % 32));
}

static int64_t some_seconds(void)
{
    uint64_t r = next();

    switch (r % 6) {
    case 0:
        return 0;
    case 1:
        return -1 - (int64_t)(next() % 1000); /* never from sluiced, but encodable */
    case 2:
        return INT64_MAX;
    default:
        return (int64_t)(next() >> (1 + r % 63));
    }
}

/* A string of `len` bytes; NULs only where `nuls`. */
static void fill(char *s, size_t len, bool nuls)
{
    for (size_t i = 0; i < len; i++) {
        s[i] = (char)(' ' + next() % 95);
        if (nuls && next() % 40 == 0)
            s[i] = '\0';
    }
    s[len] = '\0';
}

static void random_answer(struct sl__envoy_answer *a)
{
    memset(a, 0, sizeof(*a));
    a->overall = (enum sl__envoy_code)(next() % 3);
    a->n = next() % 4 == 0 ? next() % (SL_MAX_DESCRIPTORS + 1) : next() % 4;
    for (size_t i = 0; i < a->n; i++) {
        struct sl__envoy_status *e = &a->st[i];
        size_t nl = next() % 5 == 0 ? 0 : next() % (next() % 2 ? 20 : sizeof(names[i]) - 1);

        e->code = (enum sl__envoy_code)(next() % 3);
        e->has_limit = next() % 4 != 0;
        fill(names[i], nl, false);
        e->name = names[i];
        e->requests_per_unit = some_u32();
        e->unit = (unsigned)(next() % 8);
        e->limit_remaining = some_u32();
        e->reset_s = some_seconds();
    }
    a->headers.n = next() % (SL__ENVOY_MAX_HEADERS + 1);
    for (size_t i = 0; i < a->headers.n; i++) {
        size_t kl = next() % 5 == 0 ? 0 : next() % 40, vl = next() % 5 == 0 ? 0 : next() % 600;

        fill(hbytes[i][0], kl, true);
        fill(hbytes[i][1], vl, true);
        a->headers.h[i].key = (struct sl_str){hbytes[i][0], kl};
        a->headers.h[i].value = (struct sl_str){hbytes[i][1], vl};
    }
}

static void test_edges(void **state)
{
    static struct sl__envoy_answer a;

    memset(&a, 0, sizeof(a)); /* nothing at all: zero bytes */
    check_answer(&a);
    a.n = 1; /* one status that is all zeros: an empty sub-message */
    a.st[0].name = "";
    check_answer(&a);
    a.st[0].has_limit = true; /* an empty current_limit and reset, still written */
    check_answer(&a);
    a.overall = SL__ENVOY_OVER_LIMIT;
    a.n = SL_MAX_DESCRIPTORS;
    for (size_t i = 0; i < a.n; i++)
        a.st[i] = (struct sl__envoy_status){
            SL__ENVOY_OVER_LIMIT, true, "api.user", UINT32_MAX, 7, UINT32_MAX, INT64_MAX};
    check_answer(&a);
    a.st[3].name = ""; /* an empty name is left out */
    a.st[4].has_limit = false;
    a.st[4].limit_remaining = UINT32_MAX; /* an unlimited rule */
    a.st[5].reset_s = -1;
    memset(names[0], 'n', 300); /* a name whose length takes two bytes */
    names[0][300] = '\0';
    a.st[6].name = names[0];
    check_answer(&a);
    a.headers.n = 3;
    a.headers.h[0].key = (struct sl_str){"X-RateLimit-Limit", 17};
    a.headers.h[0].value = (struct sl_str){"10, 10;w=60", 11};
    a.headers.h[1].key = (struct sl_str){"", 0};
    a.headers.h[1].value = (struct sl_str){"only a value", 12};
    a.headers.h[2].key = (struct sl_str){"a\0b", 3}; /* stops at the NUL, as a C string */
    a.headers.h[2].value = (struct sl_str){"", 0};
    check_answer(&a);
}

static void test_random(void **state)
{
    static struct sl__envoy_answer a;

    for (int i = 0; i < 20000; i++) {
        random_answer(&a);
        check_answer(&a);
    }
    assert_true(checked >= 20000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
