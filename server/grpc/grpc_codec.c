/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_codec.c - the protobuf messages of the rate limit and health
 * services (grpc_codec.h): RateLimitResponse written by hand straight into
 * the caller's buffer, the rest through protobuf-c over sluiced's own
 * .proto files (generated at build time from server/grpc/proto/), with
 * the per-thread decoding arena.
 *
 * It applies no Envoy semantics of its own: hits_addend and the request
 * checks are envoy.h's, the answer's fields sl__envoy_answer()'s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "cert_entry.h"
#include "grpc_codec.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest RlsRequest;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor RlsDescriptor;

/* ------------------------------------------------------------ arena */

#define ARENA_BYTES (64u << 10)

/* One decode at a time per thread: the unpacked message lives here. */
static _Thread_local _Alignas(16) char arena[ARENA_BYTES];
static _Thread_local size_t arena_used;

static void *arena_alloc(void *ud, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;

    if (need >= n && need <= ARENA_BYTES - arena_used) {
        void *p = arena + arena_used;
        arena_used += need;
        return p;
    }
    return malloc(n); /* a message larger than the arena still decodes */
}

static void arena_free(void *ud, void *p)
{
    if ((char *)p < arena || (char *)p >= arena + ARENA_BYTES)
        free(p);
}

static ProtobufCAllocator arena_allocator = {arena_alloc, arena_free, NULL};

/* Protobuf's wire types that these messages use. */
#define WT_VARINT      0u
#define WT_LEN         2u
#define TAG(field, wt) ((uint8_t)((field) << 3 | (wt)))

/* ------------------------------------------------------------ RateLimitRequest */

static int fail(struct sl__grpc_rls_req *r, int rc, const char *what, const char *why)
{
    snprintf(r->error, sizeof(r->error), "%s: %s", what, why);
    return rc;
}

static struct sl_str str_of(const char *s)
{
    return (struct sl_str){s, strlen(s)};
}

/* What the mapping needs of one RateLimitDescriptor besides its entries
 * (already in r->entries), from either decoder. */
struct raw_desc {
    size_t n_entries;
    bool has_limit, has_hits;
    uint32_t requests_per_unit;
    int32_t unit; /* RateLimitUnit, as protobuf-c reads an enum */
    uint64_t hits;
};

static int map_override(struct sl__grpc_rls_req *r, size_t i, const struct raw_desc *d)
{
    char what[48];

    snprintf(what, sizeof(what), "descriptors[%zu].limit", i);
    if ((unsigned)d->unit >= SL__ENVOY_N_UNITS)
        return fail(r, SL_EINVAL, what, "unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR");
    if (sl__envoy_override_limit(d->requests_per_unit, (unsigned)d->unit, &r->override_limits[i]) !=
        SL_OK)
        return fail(r, SL_EINVAL, what,
                    "needs requests_per_unit >= 1 and a unit (SECOND ... YEAR)");
    r->overrides[i].set = true;
    r->overrides[i].requests_per_unit = d->requests_per_unit;
    r->overrides[i].unit_ns = sl__envoy_units[d->unit].ns;
    r->descs[i].limit = &r->override_limits[i];
    return SL_OK;
}

static int map_descriptor(struct sl__grpc_rls_req *r, size_t i, const struct raw_desc *d)
{
    char what[48];

    r->overrides[i].set = false;
    r->descs[i].entries = r->entries[i];
    r->descs[i].n_entries = d->n_entries;
    r->descs[i].hits = -1;
    r->descs[i].limit = NULL;
    if (d->has_hits) {
        if (d->hits > INT64_MAX) {
            snprintf(what, sizeof(what), "descriptors[%zu].hits_addend", i);
            return fail(r, SL_ERANGE, what, "number out of range");
        }
        r->descs[i].hits = (int64_t)d->hits;
    }
    return d->has_limit ? map_override(r, i, d) : SL_OK;
}

/* The request's fields, from either decoder, then Envoy's checks. */
static int map_request(struct sl__grpc_rls_req *r, struct sl_str domain, uint32_t hits_addend,
                       const struct raw_desc *d, size_t n)
{
    int rc;

    r->req.domain = domain;
    r->req.descriptors = r->descs;
    r->req.n_descriptors = n;
    r->req.hits = sl__envoy_request_hits(hits_addend);
    for (size_t i = 0; i < n; i++)
        if ((rc = map_descriptor(r, i, &d[i])) != SL_OK)
            return rc;
    return sl__envoy_request_check(&r->req, r->error, sizeof(r->error));
}

/*
 * The fast decoder: RateLimitRequest as Envoy sends it, read in place with
 * no allocation (the strings point into the caller's buffer). It takes
 * only what it reads exactly as protobuf-c would: known fields with their
 * own wire types, each singular one at most once, no unknown field, no
 * NUL in a string (protobuf-c's C strings stop there), varints in range,
 * no more descriptors or entries than the caps. Anything else - malformed
 * bytes included - is left to protobuf-c (FALLBACK), which decides it.
 */
#define FALLBACK 1

struct rd {
    const uint8_t *p, *end;
};

static bool rd_varint_long(struct rd *b, uint64_t *v)
{
    uint64_t x = 0;

    for (unsigned shift = 0; shift < 64 && b->p < b->end; shift += 7) {
        uint8_t c = *b->p++;

        if (shift == 63 && c > 1)
            return false;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* A varint: the one-byte case (every tag and length of Envoy's requests)
 * inline, the rest out of line. */
static inline __attribute__((always_inline)) bool rd_varint(struct rd *b, uint64_t *v)
{
    if (b->p < b->end && *b->p < 0x80) {
        *v = *b->p++;
        return true;
    }
    return rd_varint_long(b, v);
}

/* A tag: field number and wire type. */
static inline __attribute__((always_inline)) bool rd_tag(struct rd *b, uint32_t *field,
                                                         unsigned *wt)
{
    uint64_t t;

    if (!rd_varint(b, &t) || t > UINT32_MAX || (t >> 3) == 0)
        return false;
    *field = (uint32_t)(t >> 3);
    *wt = (unsigned)(t & 7);
    return true;
}

/* A length-delimited field's bytes, as a sub-reader. */
static inline __attribute__((always_inline)) bool rd_len(struct rd *b, unsigned wt, struct rd *sub)
{
    uint64_t n;

    if (wt != WT_LEN || !rd_varint(b, &n) || n > (uint64_t)(b->end - b->p))
        return false;
    sub->p = b->p;
    sub->end = b->p + n;
    b->p += n;
    return true;
}

static bool rd_u32(struct rd *b, unsigned wt, uint32_t *v)
{
    uint64_t x;

    if (wt != WT_VARINT || !rd_varint(b, &x) || x > UINT32_MAX)
        return false;
    *v = (uint32_t)x;
    return true;
}

/* Whether p[0..n) holds a NUL: eight bytes at a time, the last eight
 * overlapping what came before (a libc call costs more than the short
 * strings of a request). */
#define ONES         0x0101010101010101ull
#define ZERO_BYTE(x) (((x)-ONES) & ~(x) & (ONES << 7))

static bool has_nul(const uint8_t *p, size_t n)
{
    uint64_t x, bad = 0;

    if (n < 4) /* the first, middle and last bytes are all of them */
        return n != 0 && (p[0] == 0 || p[n >> 1] == 0 || p[n - 1] == 0);
    if (n < 8) { /* two fours, overlapping */
        uint32_t a, b;

        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        x = (uint64_t)a << 32 | b;
        return ZERO_BYTE(x) != 0;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, p + i, 8);
        bad |= ZERO_BYTE(x);
    }
    memcpy(&x, p + n - 8, 8);
    return (bad | ZERO_BYTE(x)) != 0;
}

static bool rd_str(struct rd *b, unsigned wt, struct sl_str *s)
{
    struct rd sub;

    if (!rd_len(b, wt, &sub) || has_nul(sub.p, (size_t)(sub.end - sub.p)))
        return false;
    *s = (struct sl_str){(const char *)sub.p, (size_t)(sub.end - sub.p)};
    return true;
}

/* RateLimitDescriptor.Entry */
static bool rd_entry(struct rd b, struct sl_entry *e)
{
    bool seen[3] = {false, false, false};
    uint32_t f;
    unsigned wt;

    e->key = e->value = (struct sl_str){"", 0};
    while (b.p < b.end) {
        if (!rd_tag(&b, &f, &wt) || f > 2 || seen[f])
            return false;
        seen[f] = true;
        if (!rd_str(&b, wt, f == 1 ? &e->key : &e->value))
            return false;
    }
    return true;
}

/* RateLimitDescriptor.RateLimitOverride */
static bool rd_override(struct rd b, struct raw_desc *d)
{
    bool seen[3] = {false, false, false};
    uint32_t f, v;
    unsigned wt;

    d->has_limit = true;
    while (b.p < b.end) {
        if (!rd_tag(&b, &f, &wt) || f > 2 || seen[f] || !rd_u32(&b, wt, &v))
            return false;
        seen[f] = true;
        if (f == 1)
            d->requests_per_unit = v;
        else if (v > INT32_MAX) /* a negative enum: protobuf-c's to read */
            return false;
        else
            d->unit = (int32_t)v;
    }
    return true;
}

/* google.protobuf.UInt64Value */
static bool rd_uint64_value(struct rd b, struct raw_desc *d)
{
    bool seen = false;
    uint32_t f;
    unsigned wt;

    d->has_hits = true;
    while (b.p < b.end) {
        if (!rd_tag(&b, &f, &wt) || f != 1 || seen || wt != WT_VARINT || !rd_varint(&b, &d->hits))
            return false;
        seen = true;
    }
    return true;
}

static bool rd_descriptor(struct rd b, struct sl_entry *entries, struct raw_desc *d)
{
    struct rd sub;
    uint32_t f;
    unsigned wt;

    memset(d, 0, sizeof(*d));
    while (b.p < b.end) {
        if (!rd_tag(&b, &f, &wt) || !rd_len(&b, wt, &sub))
            return false;
        if (f == 1) {
            if (d->n_entries == SL_MAX_ENTRIES || !rd_entry(sub, &entries[d->n_entries]))
                return false;
            d->n_entries++;
        } else if (f == 2) {
            if (d->has_limit || !rd_override(sub, d))
                return false;
        } else if (f == 3) {
            if (d->has_hits || !rd_uint64_value(sub, d))
                return false;
        } else {
            return false;
        }
    }
    return true;
}

static void reset_request(struct sl__grpc_rls_req *r)
{
    memset(&r->req, 0, sizeof(r->req));
    r->error[0] = '\0';
    r->msg = NULL;
    r->fast = false;
    r->no_cert = false;
}

static __attribute__((noinline)) int fast_decode(struct sl__grpc_rls_req *r, const uint8_t *buf,
                                                 size_t len)
{
    struct raw_desc d[SL_MAX_DESCRIPTORS];
    struct rd b = {buf, buf + len}, sub;
    struct sl_str domain = {"", 0};
    bool seen_domain = false, seen_hits = false;
    uint32_t f, hits = 0;
    unsigned wt;
    size_t n = 0;

    while (b.p < b.end) {
        if (!rd_tag(&b, &f, &wt))
            return FALLBACK;
        if (f == 1) {
            if (seen_domain || !rd_str(&b, wt, &domain))
                return FALLBACK;
            seen_domain = true;
        } else if (f == 2) {
            if (n == SL_MAX_DESCRIPTORS || !rd_len(&b, wt, &sub) ||
                !rd_descriptor(sub, r->entries[n], &d[n]))
                return FALLBACK;
            n++;
        } else if (f == 3) {
            if (seen_hits || !rd_u32(&b, wt, &hits))
                return FALLBACK;
            seen_hits = true;
        } else {
            return FALLBACK;
        }
    }
    r->fast = true;
    return map_request(r, domain, hits, d, n);
}

/*
 * The shape Envoy sends nearly always: a domain, descriptors of entries
 * only, perhaps a hits_addend, every length and varint one byte and no
 * NUL byte anywhere (so no empty string or zero either). Read in one pass
 * straight into the request; anything else (an override, a descriptor's
 * hits_addend, a longer length, a repeated field, a NUL) goes to
 * fast_decode (FALLBACK), which reads it from the start.
 */

/* A one-byte length at *p and its bytes, within end: *p moves past them. */
static inline __attribute__((always_inline)) bool tiny_len(const uint8_t **p, const uint8_t *end,
                                                           struct sl_str *s)
{
    size_t n;

    if (*p >= end || (n = **p) >= 0x80 || n >= (size_t)(end - *p))
        return false;
    *s = (struct sl_str){(const char *)*p + 1, n};
    *p += 1 + n;
    return true;
}

static bool tiny_descriptor(const uint8_t *p, const uint8_t *end, struct sl_entry *entries,
                            size_t *n, bool *bad_key, bool *cert)
{
    struct sl_str e;

    for (*n = 0; p < end; (*n)++) {
        struct sl_entry *en = &entries[*n];
        const uint8_t *q;
        bool key = false, value = false;

        if (*n == SL_MAX_ENTRIES || *p++ != TAG(1, WT_LEN) || !tiny_len(&p, end, &e))
            return false;
        en->key = en->value = (struct sl_str){"", 0};
        for (q = (const uint8_t *)e.p; q < (const uint8_t *)e.p + e.len;) {
            uint8_t tag = *q++;
            struct sl_str *to;

            if (tag == TAG(1, WT_LEN) && !key) {
                key = true;
                to = &en->key;
            } else if (tag == TAG(2, WT_LEN) && !value) {
                value = true;
                to = &en->value;
            } else {
                return false;
            }
            if (!tiny_len(&q, (const uint8_t *)e.p + e.len, to))
                return false;
        }
        *bad_key |= !key;
        *cert |= en->key.len == sizeof(SL__CERT_ENTRY_KEY) - 1; /* (its length will do) */
    }
    return true;
}

static int tiny_decode(struct sl__grpc_rls_req *r, const uint8_t *buf, size_t len)
{
    const uint8_t *p = buf, *end = buf + len;
    struct sl_str domain = {"", 0}, f;
    bool seen_domain = false, seen_hits = false, bad_key = false, cert = false;
    uint32_t hits = 0;
    size_t n = 0;

    if (has_nul(buf, len)) /* every string's bytes at once */
        return FALLBACK;
    while (p < end) {
        uint8_t tag = *p++;

        if (tag == TAG(3, WT_VARINT) && !seen_hits) {
            if (p >= end || *p >= 0x80)
                return FALLBACK;
            hits = *p++;
            seen_hits = true;
            continue;
        }
        if (!tiny_len(&p, end, &f))
            return FALLBACK;
        if (tag == TAG(1, WT_LEN) && !seen_domain) {
            domain = f;
            seen_domain = true;
        } else if (tag == TAG(2, WT_LEN) && n < SL_MAX_DESCRIPTORS) {
            struct sl_descriptor *d = &r->descs[n];

            if (!tiny_descriptor((const uint8_t *)f.p, (const uint8_t *)f.p + f.len, r->entries[n],
                                 &d->n_entries, &bad_key, &cert))
                return FALLBACK;
            d->entries = r->entries[n];
            d->hits = -1;
            d->limit = NULL;
            r->overrides[n].set = false;
            n++;
        } else {
            return FALLBACK;
        }
    }
    r->fast = true;
    r->no_cert = !cert;
    r->req.domain = domain;
    r->req.descriptors = r->descs;
    r->req.n_descriptors = n;
    r->req.hits = sl__envoy_request_hits(hits);
    if (domain.len == 0 || n == 0 || bad_key) /* refused: envoy.h's words */
        return sl__envoy_request_check(&r->req, r->error, sizeof(r->error));
    return SL_OK;
}

/* protobuf-c's reading, into the per-thread arena. */
int sl__grpc_rls_decode_general(struct sl__grpc_rls_req *r, const uint8_t *buf, size_t len)
{
    RlsRequest *m;
    int rc;

    reset_request(r);
    arena_used = 0;
    r->msg = m =
        envoy__service__ratelimit__v3__rate_limit_request__unpack(&arena_allocator, len, buf);
    if (m == NULL)
        return fail(r, SL_EPARSE, "message", "not a valid RateLimitRequest");
    if (m->n_descriptors > SL_MAX_DESCRIPTORS)
        return sl__envoy_too_many(-1, r->error, sizeof(r->error));
    r->req.domain = str_of(m->domain);
    r->req.descriptors = r->descs;
    r->req.n_descriptors = m->n_descriptors;
    r->req.hits = sl__envoy_request_hits(m->hits_addend);
    for (size_t i = 0; i < m->n_descriptors; i++) {
        const RlsDescriptor *p = m->descriptors[i];
        struct raw_desc d = {.n_entries = p->n_entries,
                             .has_limit = p->limit != NULL,
                             .has_hits = p->hits_addend != NULL};

        if (p->n_entries > SL_MAX_ENTRIES)
            return sl__envoy_too_many((long)i, r->error, sizeof(r->error));
        for (size_t j = 0; j < p->n_entries; j++) {
            r->entries[i][j].key = str_of(p->entries[j]->key);
            r->entries[i][j].value = str_of(p->entries[j]->value);
        }
        if (p->limit != NULL) {
            d.requests_per_unit = p->limit->requests_per_unit;
            d.unit = (int32_t)p->limit->unit;
        }
        if (p->hits_addend != NULL)
            d.hits = p->hits_addend->value;
        if ((rc = map_descriptor(r, i, &d)) != SL_OK)
            return rc;
    }
    return sl__envoy_request_check(&r->req, r->error, sizeof(r->error));
}

int sl__grpc_rls_decode(struct sl__grpc_rls_req *r, const uint8_t *buf, size_t len)
{
    int rc;

    reset_request(r);
    if ((rc = tiny_decode(r, buf, len)) != FALLBACK || (rc = fast_decode(r, buf, len)) != FALLBACK)
        return rc;
    return sl__grpc_rls_decode_general(r, buf, len);
}

void sl__grpc_rls_release(struct sl__grpc_rls_req *r)
{
    if (r->msg != NULL)
        envoy__service__ratelimit__v3__rate_limit_request__free_unpacked(r->msg, &arena_allocator);
    r->msg = NULL;
    arena_used = 0;
    memset(&r->req, 0, sizeof(r->req));
}

/* ------------------------------------------------------------ RateLimitResponse */

/*
 * The answer is written by hand: its shape is fixed (a few varints, one
 * name, at most three headers), so the sizes are known before a byte is
 * written and nothing goes through protobuf-c's reflection. The bytes are
 * those protobuf-c's packing gives (tests/server/test_grpc_codec.c checks
 * it): fields in number order, proto3 zeros and empty strings left out,
 * a present sub-message written even when empty.
 */

/* 7 bits a byte: from the highest bit set, no loop. */
static size_t varint_size(uint64_t v)
{
    unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);

    return (bits * 9 + 64) / 64;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    if (v < 0x80) { /* tags, lengths and codes */
        *p = (uint8_t)v;
        return p + 1;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* A varint field, left out when 0 (proto3). */
static size_t uint_field_size(uint64_t v)
{
    return v != 0 ? 1 + varint_size(v) : 0;
}

static uint8_t *put_uint_field(uint8_t *p, uint8_t tag, uint64_t v)
{
    if (v == 0)
        return p;
    *p++ = tag;
    return put_varint(p, v);
}

/* A length-delimited field of `len` bytes, tag and length included. */
static size_t len_field_size(size_t len)
{
    return 1 + varint_size(len) + len;
}

/* A string field, left out when empty (proto3). */
static uint8_t *put_str_field(uint8_t *p, uint8_t tag, const char *s, size_t len)
{
    if (len == 0)
        return p;
    *p++ = tag;
    p = put_varint(p, len);
    memcpy(p, s, len);
    return p + len;
}

/* Enums are int32 on the wire: a negative one is ten bytes. */
static uint64_t enum_wire(int v)
{
    return (uint64_t)(int64_t)v;
}

/* The sizes of one DescriptorStatus and of its two sub-messages. */
struct status_size {
    size_t name_len, limit, reset, all;
};

static void status_size(const struct sl__envoy_status *e, struct status_size *z)
{
    z->all = uint_field_size(enum_wire((int)e->code)) + uint_field_size(e->limit_remaining);
    if (!e->has_limit)
        return;
    z->name_len = e->name != NULL ? strlen(e->name) : 0;
    z->limit = uint_field_size(e->requests_per_unit) + uint_field_size(enum_wire((int)e->unit)) +
               (z->name_len != 0 ? len_field_size(z->name_len) : 0);
    z->reset = uint_field_size((uint64_t)e->reset_s);
    z->all += len_field_size(z->limit) + len_field_size(z->reset);
}

static uint8_t *put_status(uint8_t *p, const struct sl__envoy_status *e,
                           const struct status_size *z)
{
    *p++ = TAG(2, WT_LEN); /* RateLimitResponse.statuses */
    p = put_varint(p, z->all);
    p = put_uint_field(p, TAG(1, WT_VARINT), enum_wire((int)e->code));
    if (e->has_limit) {
        *p++ = TAG(2, WT_LEN); /* current_limit */
        p = put_varint(p, z->limit);
        p = put_uint_field(p, TAG(1, WT_VARINT), e->requests_per_unit);
        p = put_uint_field(p, TAG(2, WT_VARINT), enum_wire((int)e->unit));
        p = put_str_field(p, TAG(3, WT_LEN), e->name, z->name_len);
    }
    p = put_uint_field(p, TAG(3, WT_VARINT), e->limit_remaining);
    if (e->has_limit) {
        *p++ = TAG(4, WT_LEN); /* duration_until_reset: seconds only */
        p = put_varint(p, z->reset);
        p = put_uint_field(p, TAG(1, WT_VARINT), (uint64_t)e->reset_s);
    }
    return p;
}

/* A HeaderValue's key and value stop at a NUL, as protobuf-c's C strings
 * did. */
static size_t cstr_len(struct sl_str s)
{
    const char *nul = memchr(s.p, '\0', s.len);

    return nul != NULL ? (size_t)(nul - s.p) : s.len;
}

static size_t header_size(struct sl_str k, struct sl_str v)
{
    size_t kl = cstr_len(k), vl = cstr_len(v);

    return (kl != 0 ? len_field_size(kl) : 0) + (vl != 0 ? len_field_size(vl) : 0);
}

/*
 * The short form: every sub-message under 128 bytes (one length byte),
 * as an answer without long names or headers is. Written in one pass,
 * each length byte left open and filled in behind its sub-message; false
 * when one turns out longer, and the sized encoder writes it instead.
 * SHORT_ROOM bounds what one status or header writes before its length
 * is seen (its varints and at most SHORT_TEXT bytes of strings).
 */
#define SHORT_TEXT 100
#define SHORT_ROOM (2 * (2 + 10) + 2 * 2 + 2 * 10 + 2 + 2 + 10 + SHORT_TEXT + 2)

/* A varint field (left out when 0) where ten bytes may be written
 * whatever its length: up to 35 bits without a loop. */
static uint8_t *put_uint_short(uint8_t *p, uint8_t tag, uint64_t v)
{
    size_t n;

    if (v == 0)
        return p;
    *p++ = tag;
    if (v < 0x80) {
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v >> 35 != 0)
        return put_varint(p, v);
    n = varint_size(v);
    p[0] = (uint8_t)(v | 0x80);
    p[1] = (uint8_t)(v >> 7 | 0x80);
    p[2] = (uint8_t)(v >> 14 | 0x80);
    p[3] = (uint8_t)(v >> 21 | 0x80);
    p[4] = (uint8_t)(v >> 28);
    p[n - 1] &= 0x7f;
    return p + n;
}

static bool close_short(uint8_t *at, const uint8_t *p)
{
    size_t n = (size_t)(p - at - 1);

    *at = (uint8_t)n;
    return n < 0x80;
}

static bool encode_short(const struct sl__envoy_answer *a, size_t n, size_t nh, uint8_t *buf,
                         size_t cap, size_t *len)
{
    uint8_t *p = buf, *st, *sub;

    if (cap < 11 + (n + nh) * SHORT_ROOM)
        return false;
    p = put_uint_short(p, TAG(1, WT_VARINT), enum_wire((int)a->overall));
    for (size_t i = 0; i < n; i++) {
        const struct sl__envoy_status *e = &a->st[i];

        *p++ = TAG(2, WT_LEN); /* RateLimitResponse.statuses */
        st = p++;
        p = put_uint_short(p, TAG(1, WT_VARINT), enum_wire((int)e->code));
        if (e->has_limit) {
            size_t nl = e->name != NULL ? strlen(e->name) : 0;

            if (nl > SHORT_TEXT)
                return false;
            *p++ = TAG(2, WT_LEN); /* current_limit */
            sub = p++;
            p = put_uint_short(p, TAG(1, WT_VARINT), e->requests_per_unit);
            p = put_uint_short(p, TAG(2, WT_VARINT), enum_wire((int)e->unit));
            if (nl >= 8 && nl <= 16) { /* a short name: two overlapping copies, no call */
                *p++ = TAG(3, WT_LEN);
                *p++ = (uint8_t)nl;
                memcpy(p, e->name, 8);
                memcpy(p + nl - 8, e->name + nl - 8, 8);
                p += nl;
            } else {
                p = put_str_field(p, TAG(3, WT_LEN), e->name, nl);
            }
            if (!close_short(sub, p))
                return false;
        }
        p = put_uint_short(p, TAG(3, WT_VARINT), e->limit_remaining);
        if (e->has_limit) {
            *p++ = TAG(4, WT_LEN); /* duration_until_reset: seconds only */
            sub = p++;
            p = put_uint_short(p, TAG(1, WT_VARINT), (uint64_t)e->reset_s);
            close_short(sub, p);
        }
        if (!close_short(st, p))
            return false;
    }
    for (size_t i = 0; i < nh; i++) {
        struct sl_str k = a->headers.h[i].key, v = a->headers.h[i].value;
        size_t kl = cstr_len(k), vl = cstr_len(v);

        if (kl + vl > SHORT_TEXT)
            return false;
        *p++ = TAG(3, WT_LEN); /* response_headers_to_add */
        st = p++;
        p = put_str_field(p, TAG(1, WT_LEN), k.p, kl);
        p = put_str_field(p, TAG(2, WT_LEN), v.p, vl);
        close_short(st, p);
    }
    *len = (size_t)(p - buf);
    return true;
}

/* Every answer, each size computed before a byte is written. */
static __attribute__((noinline)) int encode_sized(const struct sl__envoy_answer *a, size_t n,
                                                  size_t nh, uint8_t *buf, size_t cap, size_t *len)
{
    struct status_size z[SL_MAX_DESCRIPTORS];
    size_t hz[SL__ENVOY_MAX_HEADERS];
    size_t total = uint_field_size(enum_wire((int)a->overall));
    uint8_t *p = buf;

    for (size_t i = 0; i < n; i++) {
        status_size(&a->st[i], &z[i]);
        total += len_field_size(z[i].all);
    }
    for (size_t i = 0; i < nh; i++) {
        hz[i] = header_size(a->headers.h[i].key, a->headers.h[i].value);
        total += len_field_size(hz[i]);
    }
    if (total > cap)
        return SL_ETOOBIG;
    p = put_uint_field(p, TAG(1, WT_VARINT), enum_wire((int)a->overall));
    for (size_t i = 0; i < n; i++)
        p = put_status(p, &a->st[i], &z[i]);
    for (size_t i = 0; i < nh; i++) {
        struct sl_str k = a->headers.h[i].key, v = a->headers.h[i].value;

        *p++ = TAG(3, WT_LEN); /* response_headers_to_add */
        p = put_varint(p, hz[i]);
        p = put_str_field(p, TAG(1, WT_LEN), k.p, cstr_len(k));
        p = put_str_field(p, TAG(2, WT_LEN), v.p, cstr_len(v));
    }
    *len = (size_t)(p - buf);
    return SL_OK;
}

int sl__grpc_rls_encode(const struct sl__envoy_answer *a, uint8_t *buf, size_t cap, size_t *len)
{
    size_t n = a->n < SL_MAX_DESCRIPTORS ? a->n : SL_MAX_DESCRIPTORS;
    size_t nh = a->headers.n < SL__ENVOY_MAX_HEADERS ? a->headers.n : SL__ENVOY_MAX_HEADERS;

    if (encode_short(a, n, nh, buf, cap, len))
        return SL_OK;
    return encode_sized(a, n, nh, buf, cap, len);
}

/* ------------------------------------------------------------ health */

int sl__grpc_health_decode(const uint8_t *buf, size_t len, char *out, size_t cap)
{
    Grpc__Health__V1__HealthCheckRequest *m;

    arena_used = 0;
    m = grpc__health__v1__health_check_request__unpack(&arena_allocator, len, buf);
    if (m == NULL)
        return SL_EPARSE;
    snprintf(out, cap, "%s", m->service);
    grpc__health__v1__health_check_request__free_unpacked(m, &arena_allocator);
    arena_used = 0;
    return SL_OK;
}

size_t sl__grpc_health_encode(enum sl__grpc_serving status, uint8_t *buf, size_t cap)
{
    Grpc__Health__V1__HealthCheckResponse m = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;

    m.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)status;
    if (grpc__health__v1__health_check_response__get_packed_size(&m) > cap)
        return 0;
    return grpc__health__v1__health_check_response__pack(&m, buf);
}
