/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_grpc_codec.c - the hand-written RateLimitResponse encoder
 * (grpc_codec.c) against protobuf-c's packing of the same answer: for
 * edge answers (all zeros, UINT32_MAX everywhere, empty and long names,
 * a negative reset, 32 statuses, headers with a NUL in them) and many
 * random ones, the bytes must be equal, the length must be what it
 * returns, a buffer one byte short must be refused (SL_ETOOBIG) and
 * protobuf-c must read the bytes back. And the in-place RateLimitRequest
 * reader against protobuf-c's: for random requests as protobuf-c packs
 * them (which the in-place reader must take itself), their mutations
 * (bytes changed, cut, appended, two messages run together, unknown
 * fields, a NUL in a string) and random bytes, both give the same result
 * code, the same error words and the same request.
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
typedef Envoy__Service__Ratelimit__V3__RateLimitRequest RlsRequest;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor Desc;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__Entry Entry;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__RateLimitOverride Override;

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

/* ------------------------------------------------------------ RateLimitRequest */

static bool str_equal(struct sl_str a, struct sl_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* A decoded request with its own copies of the strings: one thread decodes
 * one request at a time (the arena is per thread). */
struct copy {
    int rc;
    bool fast;
    char error[160];
    struct sl__grpc_rls_req r;
    char bytes[1 << 17];
    size_t used;
};

static struct sl_str keep(struct copy *c, struct sl_str s)
{
    struct sl_str k = {c->bytes + c->used, s.len};

    assert_true(s.len <= sizeof(c->bytes) - c->used);
    if (s.len > 0)
        memcpy(c->bytes + c->used, s.p, s.len);
    c->used += s.len;
    return k;
}

static void decode_copy(struct copy *c, bool general, const uint8_t *buf, size_t len)
{
    static struct sl__grpc_rls_req r;

    c->rc = general ? sl__grpc_rls_decode_general(&r, buf, len) : sl__grpc_rls_decode(&r, buf, len);
    c->fast = r.fast;
    memcpy(c->error, r.error, sizeof(c->error));
    c->used = 0;
    c->r.req = r.req;
    memcpy(c->r.overrides, r.overrides, sizeof(r.overrides));
    if (c->rc == SL_OK) {
        c->r.req.domain = keep(c, r.req.domain);
        for (size_t i = 0; i < r.req.n_descriptors; i++) {
            c->r.descs[i] = r.req.descriptors[i];
            c->r.descs[i].entries = c->r.entries[i];
            if (r.req.descriptors[i].limit != NULL) {
                c->r.override_limits[i] = *r.req.descriptors[i].limit;
                c->r.descs[i].limit = &c->r.override_limits[i];
            }
            for (size_t j = 0; j < r.req.descriptors[i].n_entries; j++) {
                c->r.entries[i][j].key = keep(c, r.req.descriptors[i].entries[j].key);
                c->r.entries[i][j].value = keep(c, r.req.descriptors[i].entries[j].value);
            }
        }
    }
    sl__grpc_rls_release(&r);
}

static unsigned long fast_ok, fast_taken, general_only;

/* Decode buf both ways; the results must be the same. Returns whether the
 * in-place reader took it. */
static bool compare(const uint8_t *buf, size_t len)
{
    static struct copy x, y;
    const struct sl_request *a = &x.r.req, *b = &y.r.req;

    decode_copy(&x, false, buf, len);
    decode_copy(&y, true, buf, len);
    assert_false(y.fast);
    assert_int_equal(x.rc, y.rc);
    assert_string_equal(x.error, y.error);
    if (x.rc == SL_OK) {
        assert_true(str_equal(a->domain, b->domain));
        assert_int_equal(a->hits, b->hits);
        assert_int_equal(a->n_descriptors, b->n_descriptors);
        for (size_t i = 0; i < a->n_descriptors; i++) {
            const struct sl_descriptor *p = &x.r.descs[i], *q = &y.r.descs[i];

            assert_int_equal(p->n_entries, q->n_entries);
            for (size_t j = 0; j < p->n_entries; j++) {
                assert_true(str_equal(p->entries[j].key, q->entries[j].key));
                assert_true(str_equal(p->entries[j].value, q->entries[j].value));
            }
            assert_int_equal(p->hits, q->hits);
            assert_int_equal(p->limit == NULL, q->limit == NULL);
            if (p->limit != NULL)
                assert_memory_equal(p->limit, q->limit, sizeof(*p->limit));
            assert_int_equal(x.r.overrides[i].set, y.r.overrides[i].set);
            assert_int_equal(x.r.overrides[i].requests_per_unit,
                             y.r.overrides[i].requests_per_unit);
            assert_int_equal(x.r.overrides[i].unit_ns, y.r.overrides[i].unit_ns);
        }
        fast_ok += x.fast;
    }
    fast_taken += x.fast;
    general_only += !x.fast;
    return x.fast;
}

static char strs[64][40][24];

static char *some_string(size_t slot, size_t k)
{
    size_t n = next() % 4 == 0 ? 0 : next() % 23;

    fill(strs[slot % 64][k % 40], n, false);
    return strs[slot % 64][k % 40];
}

/* A random RateLimitRequest, packed by protobuf-c. *plain says whether it
 * stays within what the in-place reader takes (the caps, a unit >= 0). */
static size_t random_request(uint8_t *out, bool *plain)
{
    static Desc d[36];
    static Desc *dp[36];
    static Entry e[36][18];
    static Entry *ep[36][18];
    static Override o[36];
    static Google__Protobuf__UInt64Value h[36];
    RlsRequest m = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_REQUEST__INIT;
    uint64_t r = next();

    *plain = true;
    m.domain = next() % 10 == 0 ? "" : some_string(0, 0);
    m.hits_addend = next() % 2 ? 0 : some_u32();
    m.n_descriptors = r % 8 == 0 ? next() % 35 : 1 + next() % 3;
    *plain &= m.n_descriptors <= SL_MAX_DESCRIPTORS;
    m.descriptors = dp;
    for (size_t i = 0; i < m.n_descriptors; i++) {
        envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__init(&d[i]);
        dp[i] = &d[i];
        d[i].n_entries = next() % 8 == 0 ? next() % 18 : next() % 3;
        *plain &= d[i].n_entries <= SL_MAX_ENTRIES;
        d[i].entries = ep[i];
        for (size_t j = 0; j < d[i].n_entries; j++) {
            envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__entry__init(&e[i][j]);
            ep[i][j] = &e[i][j];
            e[i][j].key = next() % 50 == 0 ? "" : some_string(i + 1, 2 * j);
            e[i][j].value = some_string(i + 1, 2 * j + 1);
        }
        if (next() % 3 == 0) {
            envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__rate_limit_override__init(
                &o[i]);
            o[i].requests_per_unit = next() % 20 == 0 ? 0 : some_u32();
            o[i].unit =
                (Envoy__Type__V3__RateLimitUnit)(next() % 10 == 0 ? next() % 9 : 1 + next() % 6);
            if (next() % 20 == 0) {
                o[i].unit = (Envoy__Type__V3__RateLimitUnit)-1; /* ten bytes on the wire */
                *plain = false;
            }
            d[i].limit = &o[i];
        }
        if (next() % 3 == 0) {
            google__protobuf__uint64_value__init(&h[i]);
            h[i].value = next() % 4 == 0 ? 0 : next() >> (next() % 64);
            d[i].hits_addend = &h[i];
        }
    }
    return envoy__service__ratelimit__v3__rate_limit_request__pack(&m, out);
}

static void test_request_fixed(void **state)
{
    /* Envoy's shape: domain, one descriptor of two entries, read in place. */
    static const uint8_t envoy[] = "\x0a\x03"
                                   "api"
                                   "\x12\x12\x0a\x09\x0a\x04user\x12\x01u\x0a\x05\x0a\x01k\x12\x00"
                                   "\x18\x02";
    static struct sl__grpc_rls_req r;

    assert_int_equal(sl__grpc_rls_decode(&r, envoy, sizeof(envoy) - 1), SL_OK);
    assert_true(r.fast);
    assert_int_equal(r.req.hits, 2);
    assert_int_equal(r.req.n_descriptors, 1);
    assert_int_equal(r.descs[0].n_entries, 2);
    assert_true(str_equal(r.descs[0].entries[0].value, (struct sl_str){"u", 1}));
    assert_true(str_equal(r.descs[0].entries[1].value, (struct sl_str){"", 0}));
    sl__grpc_rls_release(&r);
    assert_true(compare(envoy, sizeof(envoy) - 1));
    /* An unknown field, a domain twice, a NUL in a string, a group, a cut
     * message: protobuf-c's to decide. */
    assert_false(compare((const uint8_t *)"\x0a\x01"
                                          "a\x12\x00\x48\x01",
                         7));
    assert_false(compare((const uint8_t *)"\x0a\x01"
                                          "a\x0a\x01"
                                          "b\x12\x00",
                         8));
    assert_false(compare((const uint8_t *)"\x0a\x02"
                                          "a\0\x12\x00",
                         6));
    assert_false(compare((const uint8_t *)"\x0b\x0c", 2));
    assert_false(compare((const uint8_t *)"\x0a\x05"
                                          "ab",
                         4));
    assert_false(compare((const uint8_t *)"\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11));
    /* Refusals the in-place reader gives itself, in protobuf-c's words. */
    assert_true(compare((const uint8_t *)"", 0)); /* no domain */
    assert_true(compare((const uint8_t *)"\x0a\x01"
                                         "a",
                        3)); /* no descriptor */
    assert_true(compare((const uint8_t *)"\x0a\x01"
                                         "a\x12\x04\x12\x02\x10\x09",
                        9)); /* unit */
    assert_true(compare((const uint8_t *)"\x0a\x01"
                                         "a\x12\x04\x12\x02\x10\x01",
                        9)); /* rate 0 */
    assert_true(
        compare((const uint8_t *)"\x0a\x01"
                                 "a\x12\x0d\x1a\x0b\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                18)); /* hits_addend above 2^63-1 */
}

static void test_request_random(void **state)
{
    static uint8_t buf[1 << 16], two[1 << 17];

    for (int i = 0; i < 20000; i++) {
        bool plain;
        size_t len = random_request(buf, &plain), n;

        assert_int_equal(compare(buf, len), plain); /* as protobuf-c packs: read in place */
        switch (next() % 7) {
        case 0: /* bytes changed */
            for (int k = 0; k < 3 && len > 0; k++)
                buf[next() % len] = (uint8_t)next();
            compare(buf, len);
            break;
        case 1: /* cut */
            compare(buf, len > 0 ? next() % len : 0);
            break;
        case 2: /* random bytes after */
            n = next() % 16;
            for (size_t k = 0; k < n; k++)
                buf[len + k] = (uint8_t)next();
            compare(buf, len + n);
            break;
        case 3: /* two messages run together: protobuf-c merges them */
            memcpy(two, buf, len);
            n = random_request(two + len, &plain);
            compare(two, len + n);
            break;
        case 4: /* an unknown field first */
            memmove(buf + 2, buf, len);
            buf[0] = (uint8_t)(next() % 2 ? 0x20 : 0x78); /* 4 or 15, varint */
            buf[1] = (uint8_t)(next() % 128);
            compare(buf, len + 2);
            break;
        case 5: /* a NUL where a letter was */
            for (size_t k = 0; k < len; k++)
                if (buf[k] >= 'a' && buf[k] <= 'z' && next() % 4 == 0) {
                    buf[k] = 0;
                    break;
                }
            compare(buf, len);
            break;
        default: /* random bytes */
            n = next() % 64;
            for (size_t k = 0; k < n; k++)
                buf[k] = (uint8_t)next();
            compare(buf, n);
            break;
        }
    }
    /* Both kinds were exercised: most in place, some by protobuf-c alone. */
    assert_true(fast_ok > 5000);
    assert_true(general_only > 1000);
}

/* The one-pass reader says when no entry can be the client certificate's
 * (sl__cert_entries is then skipped); the key, or a reader that does not
 * look, leaves it to sl__cert_entries. */
static void test_request_cert_key(void **state)
{
    static const uint8_t user[] = {0x0a, 0x01, 'd', 0x12, 0x0b, 0x0a, 0x09, 0x0a,
                                   0x04, 'u',  's', 'e',  'r',  0x12, 0x01, 'x'};
    static const uint8_t cert[] = {0x0a, 0x01, 'd', 0x12, 0x17, 0x0a, 0x15, 0x0a, 0x10, 'c',
                                   'l',  'i',  'e', 'n',  't',  '_',  'c',  'e',  'r',  't',
                                   '_',  'n',  'a', 'm',  'e',  0x12, 0x01, 'x'};
    /* the same as `user`, its hits_addend a two-byte varint: not the one-pass reader's */
    static const uint8_t slow[] = {0x0a, 0x01, 'd', 0x12, 0x0b, 0x0a, 0x09, 0x0a, 0x04, 'u',
                                   's',  'e',  'r', 0x12, 0x01, 'x',  0x18, 0x81, 0x01};
    static struct sl__grpc_rls_req r;

    assert_int_equal(sl__grpc_rls_decode(&r, user, sizeof(user)), SL_OK);
    assert_true(r.fast);
    assert_true(r.no_cert);
    sl__grpc_rls_release(&r);
    assert_int_equal(sl__grpc_rls_decode(&r, cert, sizeof(cert)), SL_OK);
    assert_true(r.fast);
    assert_int_equal(r.req.descriptors[0].entries[0].key.len, 16);
    assert_false(r.no_cert);
    sl__grpc_rls_release(&r);
    assert_int_equal(sl__grpc_rls_decode(&r, slow, sizeof(slow)), SL_OK);
    assert_int_equal(r.req.hits, 129);
    assert_false(r.no_cert);
    sl__grpc_rls_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_request_fixed),
        cmocka_unit_test(test_request_random),
        cmocka_unit_test(test_request_cert_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
