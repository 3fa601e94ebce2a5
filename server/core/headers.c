/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * headers.c - writes the rate-limit headers of a decision (headers.h).
 *
 * Seconds on the wire are always rounded up, so a client that waits what it
 * is told never comes back early. It does not look at the request or the
 * rules: everything comes from the result and the limits it points to.
 */
#include <string.h>

#include "sluice_sat.h"
#include "buf.h"
#include "headers.h"

/* Structured-field integers have at most 15 digits (RFC 8941 3.3.1). */
#define SF_INT_MAX INT64_C(999999999999999)

static int64_t ceil_s(int64_t ns)
{
    if (ns <= 0)
        return 0;
    return ns / SL_NS_PER_S + (ns % SL_NS_PER_S != 0);
}

static int64_t sf_int(int64_t v)
{
    if (v < 0)
        return 0;
    return v > SF_INT_MAX ? SF_INT_MAX : v;
}

/* -1 (never) ranks as the longest retry. */
static bool retry_longer(int64_t a, int64_t b)
{
    if (a < 0)
        return b >= 0;
    return b >= 0 && a > b;
}

static bool more_restrictive(const struct sl_status *a, const struct sl_status *b)
{
    if (a->d.verdict == SL_DENY || b->d.verdict == SL_DENY) {
        if (a->d.verdict != b->d.verdict)
            return a->d.verdict == SL_DENY;
        return retry_longer(a->d.retry_after_ns, b->d.retry_after_ns);
    }
    if (a->d.remaining != b->d.remaining)
        return a->d.remaining < b->d.remaining;
    return a->limit->period_ns > b->limit->period_ns;
}

const struct sl_status *sl__hdr_primary(const struct sl_result *res)
{
    const struct sl_status *best = NULL;

    for (size_t i = 0; i < res->n_statuses && i < SL_MAX_DESCRIPTORS; i++) {
        const struct sl_status *s = &res->statuses[i];
        if (s->limit == NULL)
            continue;
        if (best == NULL || more_restrictive(s, best))
            best = s;
    }
    return best;
}

static void put_sf_string(struct sl__wr *b, const char *s)
{
    sl__wr_put(b, "\"", 1);
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            sl__wr_put(b, "\\", 1);
        if (c < 0x20 || c > 0x7e)
            c = '?';
        sl__wr_put(b, (const char *)&c, 1);
    }
    sl__wr_put(b, "\"", 1);
}

static const char *limit_name(const struct sl_limit *l)
{
    return l->name != NULL && l->name[0] != '\0' ? l->name : "default";
}

/* The quota a policy announces: the limit's sustained rate, `requests`
 * per window (`period`), for every algorithm. A bucket's capacity
 * (burst, the decision's `quota`) is not announced as the quota: a client
 * pacing itself by q per w would then exceed the sustained rate. The
 * burst shows in the remaining (`r`, X-RateLimit-Remaining) instead.
 * adaptive_concurrency: the limit its controller has now (the decision's
 * quota), not the most it may ever allow. */
static int64_t policy_quota(const struct sl_limit *l, const struct sl_decision *d)
{
    if (l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY)
        return d->quota;
    return l->requests > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)l->requests;
}

/* Has an earlier status reported the same limit? (one list member each) */
static bool seen_before(const struct sl_result *res, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (res->statuses[j].limit == res->statuses[i].limit)
            return true;
    }
    return false;
}

static void put_ietf(struct sl__wr *b, const struct sl_result *res, bool policy)
{
    bool first = true;

    sl__wr_puts(b, policy ? "RateLimit-Policy: " : "RateLimit: ");
    for (size_t i = 0; i < res->n_statuses && i < SL_MAX_DESCRIPTORS; i++) {
        const struct sl_status *s = &res->statuses[i];
        if (s->limit == NULL || seen_before(res, i))
            continue;
        if (!first)
            sl__wr_put(b, ", ", 2);
        first = false;
        put_sf_string(b, limit_name(s->limit));
        if (policy) {
            sl__wr_put(b, ";q=", 3);
            sl__wr_i64(b, sf_int(policy_quota(s->limit, &s->d)));
            if (s->limit->period_ns > 0) {
                sl__wr_put(b, ";w=", 3);
                sl__wr_i64(b, sf_int(ceil_s(s->limit->period_ns)));
            }
        } else {
            sl__wr_put(b, ";r=", 3);
            sl__wr_i64(b, sf_int(s->d.remaining));
            sl__wr_put(b, ";t=", 3);
            sl__wr_i64(b, sf_int(ceil_s(s->d.reset_ns)));
        }
    }
    sl__wr_put(b, "\r\n", 2);
}

static void put_header_i64(struct sl__wr *b, const char *name, int64_t v)
{
    sl__wr_puts(b, name);
    sl__wr_put(b, ": ", 2);
    sl__wr_i64(b, v);
    sl__wr_put(b, "\r\n", 2);
}

int sl__hdr_write(const struct sl_result *res, int64_t now_ns, unsigned fams, char *buf, size_t cap,
                  size_t *len)
{
    const struct sl_status *p = sl__hdr_primary(res);
    struct sl__wr b;

    sl__wr_init(&b, buf, cap);
    if (p != NULL && (fams & SL__HDR_IETF)) {
        put_ietf(&b, res, true);
        put_ietf(&b, res, false);
    }
    if (p != NULL && (fams & SL__HDR_X)) {
        int64_t reset_at = sl__sat_add(now_ns, p->d.reset_ns > 0 ? p->d.reset_ns : 0);
        put_header_i64(&b, "X-RateLimit-Limit", sf_int(policy_quota(p->limit, &p->d)));
        put_header_i64(&b, "X-RateLimit-Remaining", sf_int(p->d.remaining));
        put_header_i64(&b, "X-RateLimit-Reset", sf_int(ceil_s(reset_at)));
    }
    if (p != NULL && (fams & SL__HDR_RETRY_AFTER) && res->verdict == SL_DENY &&
        p->d.verdict == SL_DENY && p->d.retry_after_ns >= 0)
        put_header_i64(&b, "Retry-After", ceil_s(p->d.retry_after_ns));
    return sl__wr_finish(&b, len);
}
