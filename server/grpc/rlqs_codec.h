/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlqs_codec.h - the messages of Envoy's rate limit quota service
 * (internal): RateLimitQuotaUsageReports decoded and checked, and
 * RateLimitQuotaResponse encoded from a list of actions. protobuf-c over
 * server/grpc/proto/envoy/service/rate_limit_quota/v3/rlqs.proto. It
 * decides nothing and keeps no state.
 *
 * Ownership: a decoded report borrows its strings from the unpacked
 * message, which lives until sl__rlqs_report_release(). Decoding allocates
 * (a report comes once per reporting interval per Envoy, not per request).
 */
#ifndef SL_SERVER_RLQS_CODEC_H
#define SL_SERVER_RLQS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlqs_assign.h"
#include "sluice.h"

/* One bucket's usage: its id's pairs (as sent), and the counts. */
struct sl__rlqs_usage {
    struct sl_entry entries[SL_MAX_ENTRIES];
    size_t n_entries;
    int64_t elapsed_ns; /* > 0 */
    uint64_t allowed, denied;
};

struct sl__rlqs_report {
    struct sl_str domain; /* len 0: none given */
    struct sl__rlqs_usage *usages;
    size_t n_usages;
    void *msg;       /* the unpacked message */
    char error[160]; /* what is wrong */
};

/*
 * Decode buf[0..len) with at most max_usages usages: SL_OK; SL_EPARSE (not
 * a RateLimitQuotaUsageReports); SL_EINVAL (a usage without bucket_id or
 * with an empty key or value, a time_elapsed not > 0); SL_ETOOBIG (more
 * usages than max_usages, a bucket id of more than SL_MAX_ENTRIES pairs) -
 * with r->error saying what. The caller releases in every case.
 */
int sl__rlqs_report_decode(struct sl__rlqs_report *r, const uint8_t *buf, size_t len,
                           size_t max_usages);
void sl__rlqs_report_release(struct sl__rlqs_report *r);

enum sl__rlqs_kind {
    SL__RLQS_ALLOW_ALL,   /* blanket_rule ALLOW_ALL */
    SL__RLQS_DENY_ALL,    /* blanket_rule DENY_ALL */
    SL__RLQS_TOKEN_BUCKET /* token_bucket `tb` */
};

/* One BucketAction: an assignment with its TTL, or abandon_action. */
struct sl__rlqs_action {
    const struct sl_entry *entries; /* the bucket id */
    size_t n_entries;
    bool abandon;
    enum sl__rlqs_kind kind;
    struct sl__rlqs_bucket tb;
    int64_t ttl_ms;
};

/* Encode a[0..n) (n >= 1) as one RateLimitQuotaResponse into buf[0..cap):
 * its length, or 0 when it does not fit. */
size_t sl__rlqs_response_encode(const struct sl__rlqs_action *a, size_t n, uint8_t *buf,
                                size_t cap);

#endif /* SL_SERVER_RLQS_CODEC_H */
