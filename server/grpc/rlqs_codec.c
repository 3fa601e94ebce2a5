/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlqs_codec.c - RateLimitQuotaUsageReports and RateLimitQuotaResponse
 * with protobuf-c (rlqs_codec.h): field mapping and the checks Envoy's API
 * states for the reports (a bucket id of non-empty pairs, time_elapsed
 * above 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/rate_limit_quota/v3/rlqs.pb-c.h"
#include "rlqs_codec.h"

typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaUsageReports Reports;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaUsageReports__BucketQuotaUsage Usage;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse Response;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse__BucketAction Action;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse__BucketAction__QuotaAssignmentAction
    Assign;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse__BucketAction__AbandonAction
    Abandon;
typedef Envoy__Service__RateLimitQuota__V3__BucketId BucketId;
typedef Envoy__Service__RateLimitQuota__V3__BucketId__BucketEntry BucketEntry;

static int fail(struct sl__rlqs_report *r, int rc, size_t i, const char *why)
{
    snprintf(r->error, sizeof(r->error), "bucket_quota_usages[%zu]: %s", i, why);
    return rc;
}

static int map_usage(struct sl__rlqs_report *r, size_t i, const Usage *u)
{
    struct sl__rlqs_usage *out = &r->usages[i];
    const BucketId *id = u->bucket_id;

    if (id == NULL || id->n_bucket == 0)
        return fail(r, SL_EINVAL, i, "bucket_id needs at least one pair");
    if (id->n_bucket > SL_MAX_ENTRIES)
        return fail(r, SL_ETOOBIG, i, "bucket_id has more than 16 pairs");
    for (size_t j = 0; j < id->n_bucket; j++) {
        const BucketEntry *e = id->bucket[j];
        if (e->key == NULL || e->key[0] == '\0' || e->value == NULL || e->value[0] == '\0')
            return fail(r, SL_EINVAL, i, "bucket_id keys and values must not be empty");
        out->entries[j].key = (struct sl_str){e->key, strlen(e->key)};
        out->entries[j].value = (struct sl_str){e->value, strlen(e->value)};
        for (size_t k = 0; k < j; k++)
            if (out->entries[k].key.len == out->entries[j].key.len &&
                memcmp(out->entries[k].key.p, e->key, out->entries[j].key.len) == 0)
                return fail(r, SL_EINVAL, i, "bucket_id has a key twice");
    }
    out->n_entries = id->n_bucket;
    if (u->time_elapsed == NULL || u->time_elapsed->seconds < 0 || u->time_elapsed->nanos < 0 ||
        u->time_elapsed->nanos >= 1000000000 || u->time_elapsed->seconds > (INT64_C(1) << 32) ||
        (u->time_elapsed->seconds == 0 && u->time_elapsed->nanos == 0))
        return fail(r, SL_EINVAL, i, "time_elapsed must be above 0");
    out->elapsed_ns = u->time_elapsed->seconds * SL_NS_PER_S + u->time_elapsed->nanos;
    out->allowed = u->num_requests_allowed;
    out->denied = u->num_requests_denied;
    return SL_OK;
}

int sl__rlqs_report_decode(struct sl__rlqs_report *r, const uint8_t *buf, size_t len,
                           size_t max_usages)
{
    Reports *m;
    int rc;

    memset(r, 0, sizeof(*r));
    r->msg = m = envoy__service__rate_limit_quota__v3__rate_limit_quota_usage_reports__unpack(
        NULL, len, buf);
    if (m == NULL) {
        snprintf(r->error, sizeof(r->error), "message: not a valid RateLimitQuotaUsageReports");
        return SL_EPARSE;
    }
    if (m->n_bucket_quota_usages > max_usages) {
        snprintf(
            r->error, sizeof(r->error),
            "bucket_quota_usages: more than grpc.rlqs_max_buckets_per_stream (%zu) in one message",
            max_usages);
        return SL_ETOOBIG;
    }
    r->domain = (struct sl_str){m->domain, m->domain != NULL ? strlen(m->domain) : 0};
    if (m->n_bucket_quota_usages > 0) {
        r->usages = calloc(m->n_bucket_quota_usages, sizeof(*r->usages));
        if (r->usages == NULL) {
            snprintf(r->error, sizeof(r->error), "out of memory");
            return SL_ENOMEM;
        }
    }
    r->n_usages = m->n_bucket_quota_usages;
    for (size_t i = 0; i < m->n_bucket_quota_usages; i++)
        if ((rc = map_usage(r, i, m->bucket_quota_usages[i])) != SL_OK)
            return rc;
    return SL_OK;
}

void sl__rlqs_report_release(struct sl__rlqs_report *r)
{
    if (r->msg != NULL)
        envoy__service__rate_limit_quota__v3__rate_limit_quota_usage_reports__free_unpacked(r->msg,
                                                                                            NULL);
    free(r->usages);
    memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------ response */

/* The protobuf-c structs of one action. */
struct action_msgs {
    Action a;
    BucketId id;
    BucketEntry e[SL_MAX_ENTRIES];
    BucketEntry *ep[SL_MAX_ENTRIES];
    Assign as;
    Abandon ab;
    Google__Protobuf__Duration ttl;
    Envoy__Type__V3__RateLimitStrategy st;
    Envoy__Type__V3__TokenBucket tb;
    Google__Protobuf__UInt32Value per_fill;
    Google__Protobuf__Duration fill;
    char strs[2 * SL_MAX_ENTRIES][64]; /* NUL-terminated copies, when short */
};

static char *cstr(struct sl_str s, char *slot, size_t cap, char **heap)
{
    char *p = s.len < cap ? slot : (*heap = malloc(s.len + 1));

    if (p == NULL)
        return NULL;
    memcpy(p, s.p, s.len);
    p[s.len] = '\0';
    return p;
}

static void set_duration(Google__Protobuf__Duration *d, int64_t ms)
{
    google__protobuf__duration__init(d);
    d->seconds = ms / 1000;
    d->nanos = (int32_t)((ms % 1000) * 1000000);
}

static bool fill_action(struct action_msgs *m, const struct sl__rlqs_action *a, char **heap)
{
    envoy__service__rate_limit_quota__v3__rate_limit_quota_response__bucket_action__init(&m->a);
    envoy__service__rate_limit_quota__v3__bucket_id__init(&m->id);
    for (size_t j = 0; j < a->n_entries && j < SL_MAX_ENTRIES; j++) {
        envoy__service__rate_limit_quota__v3__bucket_id__bucket_entry__init(&m->e[j]);
        m->e[j].key = cstr(a->entries[j].key, m->strs[2 * j], sizeof(m->strs[0]), &heap[2 * j]);
        m->e[j].value =
            cstr(a->entries[j].value, m->strs[2 * j + 1], sizeof(m->strs[0]), &heap[2 * j + 1]);
        if (m->e[j].key == NULL || m->e[j].value == NULL)
            return false;
        m->ep[j] = &m->e[j];
    }
    m->id.n_bucket = a->n_entries < SL_MAX_ENTRIES ? a->n_entries : SL_MAX_ENTRIES;
    m->id.bucket = m->ep;
    m->a.bucket_id = &m->id;
    if (a->abandon) {
        envoy__service__rate_limit_quota__v3__rate_limit_quota_response__bucket_action__abandon_action__init(
            &m->ab);
        m->a.bucket_action_case =
            ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_QUOTA_RESPONSE__BUCKET_ACTION__BUCKET_ACTION_ABANDON_ACTION;
        m->a.abandon_action = &m->ab;
        return true;
    }
    envoy__service__rate_limit_quota__v3__rate_limit_quota_response__bucket_action__quota_assignment_action__init(
        &m->as);
    set_duration(&m->ttl, a->ttl_ms);
    m->as.assignment_time_to_live = &m->ttl;
    envoy__type__v3__rate_limit_strategy__init(&m->st);
    if (a->kind == SL__RLQS_TOKEN_BUCKET) {
        envoy__type__v3__token_bucket__init(&m->tb);
        google__protobuf__uint32_value__init(&m->per_fill);
        m->tb.max_tokens = a->tb.max_tokens;
        m->per_fill.value = a->tb.tokens_per_fill;
        m->tb.tokens_per_fill = &m->per_fill;
        set_duration(&m->fill, a->tb.fill_interval_ms);
        m->tb.fill_interval = &m->fill;
        m->st.strategy_case = ENVOY__TYPE__V3__RATE_LIMIT_STRATEGY__STRATEGY_TOKEN_BUCKET;
        m->st.token_bucket = &m->tb;
    } else {
        m->st.strategy_case = ENVOY__TYPE__V3__RATE_LIMIT_STRATEGY__STRATEGY_BLANKET_RULE;
        m->st.blanket_rule = a->kind == SL__RLQS_DENY_ALL
                                 ? ENVOY__TYPE__V3__RATE_LIMIT_STRATEGY__BLANKET_RULE__DENY_ALL
                                 : ENVOY__TYPE__V3__RATE_LIMIT_STRATEGY__BLANKET_RULE__ALLOW_ALL;
    }
    m->as.rate_limit_strategy = &m->st;
    m->a.bucket_action_case =
        ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_QUOTA_RESPONSE__BUCKET_ACTION__BUCKET_ACTION_QUOTA_ASSIGNMENT_ACTION;
    m->a.quota_assignment_action = &m->as;
    return true;
}

size_t sl__rlqs_response_encode(const struct sl__rlqs_action *a, size_t n, uint8_t *buf, size_t cap)
{
    struct action_msgs *m = calloc(n, sizeof(*m));
    Action **ap = calloc(n, sizeof(*ap));
    char **heap = calloc(n * 2 * SL_MAX_ENTRIES, sizeof(*heap));
    Response r;
    size_t len = 0;
    bool ok = m != NULL && ap != NULL && heap != NULL && n > 0;

    for (size_t i = 0; ok && i < n; i++) {
        ok = fill_action(&m[i], &a[i], &heap[i * 2 * SL_MAX_ENTRIES]);
        ap[i] = &m[i].a;
    }
    if (ok) {
        envoy__service__rate_limit_quota__v3__rate_limit_quota_response__init(&r);
        r.n_bucket_action = n;
        r.bucket_action = ap;
        len = envoy__service__rate_limit_quota__v3__rate_limit_quota_response__get_packed_size(&r);
        if (len <= cap)
            envoy__service__rate_limit_quota__v3__rate_limit_quota_response__pack(&r, buf);
        else
            len = 0;
    }
    for (size_t i = 0; heap != NULL && i < n * 2 * SL_MAX_ENTRIES; i++)
        free(heap[i]);
    free(heap);
    free(ap);
    free(m);
    return len;
}
