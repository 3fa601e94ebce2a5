/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_rlqs.c - libFuzzer driver for the rate limit quota service's
 * message handling: the input is decoded as a RateLimitQuotaUsageReports
 * (rlqs_codec.c) under a small cap on usages; the usages of a valid one
 * become the members of one pool (their demand from the counts and
 * time_elapsed, every third one departed with what it held) that is
 * divided (rlqs_assign.c) twice, with sends in between; the invariant is
 * checked - what the members may apply sums to at most the limit - and
 * every share is encoded as an assignment (token_bucket, ALLOW_ALL,
 * DENY_ALL or abandon_action by the usage's counts), the whole answer
 * encoded and decoded again. Memory errors are the sanitizers' to find.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/rate_limit_quota/v3/rlqs.pb-c.h"
#include "rlqs_assign.h"
#include "rlqs_codec.h"

#define CHECK(c)   ((c) ? (void)0 : abort())
#define MAX_USAGES 64
#define S          INT64_C(1000000000)

static struct sl__rlqs_member m[MAX_USAGES];
static struct sl__rlqs_action a[MAX_USAGES];
static uint8_t out[MAX_USAGES * 2048];

static void check_bound(const struct sl__rlqs_share *s, size_t n, int64_t now)
{
    double sum = 0.0;
    int64_t bsum = 0;

    for (size_t i = 0; i < n; i++) {
        double h = sl__rlqs_held_rate(&m[i], now);
        int64_t hb = sl__rlqs_held_burst(&m[i], now);
        sum += m[i].live && m[i].next_rate > h ? m[i].next_rate : h;
        bsum += m[i].live && m[i].next_burst > hb ? m[i].next_burst : hb;
        CHECK(m[i].next_rate >= 0.0);
        CHECK(!(m[i].next_rate > 0.0) || m[i].next_burst >= 1);
    }
    CHECK(sum <= s->rate * (1 + 1e-9) + 1e-9);
    CHECK((int64_t)n > s->burst || bsum <= s->burst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl__rlqs_report r;
    int rc = sl__rlqs_report_decode(&r, data, size, MAX_USAGES);

    if (rc != SL_OK || r.n_usages == 0) {
        sl__rlqs_report_release(&r);
        return 0;
    }
    size_t n = r.n_usages;
    /* the limit: from the first usage's counts, bounded */
    struct sl__rlqs_share s = {1.0 + (double)(r.usages[0].allowed % 100000),
                               1 + (int64_t)(r.usages[0].denied % 5000), 0.05};
    int64_t now = 10 * S;

    for (size_t i = 0; i < n; i++) {
        const struct sl__rlqs_usage *u = &r.usages[i];
        CHECK(u->elapsed_ns > 0 && u->n_entries >= 1 && u->n_entries <= SL_MAX_ENTRIES);
        memset(&m[i], 0, sizeof(m[i]));
        m[i].live = i % 3 != 2;
        m[i].demand = (double)u->allowed / ((double)u->elapsed_ns / 1e9) +
                      (double)u->denied / ((double)u->elapsed_ns / 1e9);
        if (!m[i].live) { /* departed, holding a little */
            m[i].hold_rate = s.rate / (double)(2 * n);
            m[i].hold_burst = s.burst / (int64_t)(2 * n);
            m[i].hold_until_ns = now + (int64_t)(u->elapsed_ns % (5 * S));
        }
    }
    for (int round = 0; round < 2; round++) {
        sl__rlqs_divide(&s, m, n, now);
        check_bound(&s, n, now);
        for (size_t i = 0; i < n; i++) {
            if (m[i].live && m[i].next_rate > 0.0 && (i + (size_t)round) % 2 == 0) {
                sl__rlqs_sending(&m[i], m[i].next_rate, m[i].next_burst, now, 3 * S);
                sl__rlqs_sent(&m[i], m[i].next_rate, m[i].next_burst, now, 3 * S);
            }
        }
        check_bound(&s, n, now);
        now += S;
    }
    for (size_t i = 0; i < n; i++) {
        const struct sl__rlqs_usage *u = &r.usages[i];
        memset(&a[i], 0, sizeof(a[i]));
        a[i].entries = u->entries;
        a[i].n_entries = u->n_entries;
        a[i].ttl_ms = (int64_t)(u->elapsed_ns / 1000000 % 600000);
        switch (u->allowed % 4) {
        case 0:
            a[i].abandon = true;
            break;
        case 1:
            a[i].kind = SL__RLQS_DENY_ALL;
            break;
        case 2:
            a[i].kind = SL__RLQS_ALLOW_ALL;
            break;
        default:
            a[i].kind = SL__RLQS_TOKEN_BUCKET;
            if (!sl__rlqs_token_bucket(m[i].next_rate, m[i].next_burst, &a[i].tb))
                a[i].kind = SL__RLQS_ALLOW_ALL;
            else
                CHECK(a[i].tb.tokens_per_fill <= a[i].tb.max_tokens &&
                      (double)a[i].tb.tokens_per_fill * 1000.0 / (double)a[i].tb.fill_interval_ms <=
                          m[i].next_rate * (1 + 1e-12));
        }
    }
    size_t len = sl__rlqs_response_encode(a, n, out, sizeof(out));
    if (len > 0) {
        Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse *back =
            envoy__service__rate_limit_quota__v3__rate_limit_quota_response__unpack(NULL, len, out);
        CHECK(back != NULL && back->n_bucket_action == n);
        for (size_t i = 0; i < n; i++)
            CHECK(back->bucket_action[i]->bucket_id->n_bucket == r.usages[i].n_entries);
        envoy__service__rate_limit_quota__v3__rate_limit_quota_response__free_unpacked(back, NULL);
    }
    sl__rlqs_report_release(&r);
    return 0;
}
