/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_codec.c - protobuf-c over sluiced's own .proto files (generated at
 * build time from server/grpc/proto/) for the rate limit and health
 * services: field mapping and the per-thread decoding arena (grpc_codec.h).
 *
 * It applies no Envoy semantics of its own: hits_addend and the request
 * checks are envoy.h's, the answer's fields sl__envoy_answer()'s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc_codec.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest RlsRequest;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor RlsDescriptor;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse RlsResponse;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus RlsStatus;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit RlsLimit;

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

static int map_override(
    struct sl__grpc_rls_req *r, size_t i,
    const Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__RateLimitOverride *o)
{
    char what[48];

    snprintf(what, sizeof(what), "descriptors[%zu].limit", i);
    if ((unsigned)o->unit >= SL__ENVOY_N_UNITS)
        return fail(r, SL_EINVAL, what, "unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR");
    if (sl__envoy_override_limit(o->requests_per_unit, (unsigned)o->unit, &r->override_limits[i]) !=
        SL_OK)
        return fail(r, SL_EINVAL, what,
                    "needs requests_per_unit >= 1 and a unit (SECOND ... YEAR)");
    r->overrides[i].set = true;
    r->overrides[i].requests_per_unit = o->requests_per_unit;
    r->overrides[i].unit_ns = sl__envoy_units[o->unit].ns;
    r->descs[i].limit = &r->override_limits[i];
    return SL_OK;
}

static int map_descriptor(struct sl__grpc_rls_req *r, size_t i, const RlsDescriptor *d)
{
    char what[48];

    if (d->n_entries > SL_MAX_ENTRIES)
        return sl__envoy_too_many((long)i, r->error, sizeof(r->error));
    for (size_t j = 0; j < d->n_entries; j++) {
        r->entries[i][j].key = str_of(d->entries[j]->key);
        r->entries[i][j].value = str_of(d->entries[j]->value);
    }
    r->descs[i].entries = r->entries[i];
    r->descs[i].n_entries = d->n_entries;
    r->descs[i].hits = -1;
    r->descs[i].limit = NULL;
    if (d->hits_addend != NULL) {
        if (d->hits_addend->value > INT64_MAX) {
            snprintf(what, sizeof(what), "descriptors[%zu].hits_addend", i);
            return fail(r, SL_ERANGE, what, "number out of range");
        }
        r->descs[i].hits = (int64_t)d->hits_addend->value;
    }
    return d->limit != NULL ? map_override(r, i, d->limit) : SL_OK;
}

int sl__grpc_rls_decode(struct sl__grpc_rls_req *r, const uint8_t *buf, size_t len)
{
    RlsRequest *m;
    int rc;

    memset(&r->req, 0, sizeof(r->req));
    memset(r->overrides, 0, sizeof(r->overrides));
    r->error[0] = '\0';
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
    for (size_t i = 0; i < m->n_descriptors; i++)
        if ((rc = map_descriptor(r, i, m->descriptors[i])) != SL_OK)
            return rc;
    return sl__envoy_request_check(&r->req, r->error, sizeof(r->error));
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

/* The protobuf-c structs of one answer, on the caller's stack. */
struct response {
    RlsResponse m;
    Envoy__Config__Core__V3__HeaderValue hdr[SL__ENVOY_MAX_HEADERS];
    Envoy__Config__Core__V3__HeaderValue *hdrp[SL__ENVOY_MAX_HEADERS];
    char hbuf[2 * sizeof(((struct sl__envoy_headers *)0)->buf) + 2 * SL__ENVOY_MAX_HEADERS];
    RlsStatus st[SL_MAX_DESCRIPTORS];
    RlsStatus *stp[SL_MAX_DESCRIPTORS];
    RlsLimit lim[SL_MAX_DESCRIPTORS];
    Google__Protobuf__Duration reset[SL_MAX_DESCRIPTORS];
};

static void status_to(const struct sl__envoy_status *e, struct response *r, size_t i)
{
    RlsStatus *s = &r->st[i];

    envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(s);
    s->code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)e->code;
    s->limit_remaining = e->limit_remaining; /* 4294967295 for an unlimited rule */
    if (!e->has_limit)
        return;
    envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&r->lim[i]);
    r->lim[i].name = (char *)e->name;
    r->lim[i].requests_per_unit = e->requests_per_unit;
    r->lim[i].unit = (Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit__Unit)e->unit;
    google__protobuf__duration__init(&r->reset[i]);
    r->reset[i].seconds = e->reset_s;
    s->current_limit = &r->lim[i];
    s->limit_remaining = e->limit_remaining;
    s->duration_until_reset = &r->reset[i];
}

/* response_headers_to_add: protobuf-c wants NUL-terminated strings. */
static void headers_to(const struct sl__envoy_headers *h, struct response *r)
{
    size_t used = 0;

    for (size_t i = 0; i < h->n; i++) {
        char *k = r->hbuf + used, *v;
        memcpy(k, h->h[i].key.p, h->h[i].key.len);
        k[h->h[i].key.len] = '\0';
        v = k + h->h[i].key.len + 1;
        memcpy(v, h->h[i].value.p, h->h[i].value.len);
        v[h->h[i].value.len] = '\0';
        used += h->h[i].key.len + h->h[i].value.len + 2;
        envoy__config__core__v3__header_value__init(&r->hdr[i]);
        r->hdr[i].key = k;
        r->hdr[i].value = v;
        r->hdrp[i] = &r->hdr[i];
    }
    r->m.n_response_headers_to_add = h->n;
    r->m.response_headers_to_add = r->hdrp;
}

int sl__grpc_rls_encode(const struct sl__envoy_answer *a, uint8_t *buf, size_t cap, size_t *len)
{
    struct response r;

    envoy__service__ratelimit__v3__rate_limit_response__init(&r.m);
    r.m.overall_code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)a->overall;
    r.m.n_statuses = a->n;
    r.m.statuses = r.stp;
    for (size_t i = 0; i < a->n; i++) {
        status_to(&a->st[i], &r, i);
        r.stp[i] = &r.st[i];
    }
    headers_to(&a->headers, &r);
    if (envoy__service__ratelimit__v3__rate_limit_response__get_packed_size(&r.m) > cap)
        return SL_ETOOBIG;
    *len = envoy__service__ratelimit__v3__rate_limit_response__pack(&r.m, buf);
    return SL_OK;
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
