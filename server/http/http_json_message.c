/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_json_message.c - the human sentence that explains a denial, as in
 * "rate limit 'api.user' exceeded: 100 per 1m; retry in 12 s".
 *
 * It picks the limit that speaks for the request the same way the headers
 * do (sl__hdr_primary) so the sentence and Retry-After always agree; a
 * request denied only because a descriptor matched no rule (on_unmatched:
 * deny) says that. It does not localise anything.
 */
#include <inttypes.h>
#include <stdio.h>

#include "headers.h"
#include "http_json_int.h"

/* "1m", "90s", "1500ms": the largest unit that divides the period. */
static void format_period(int64_t ns, char *buf, size_t cap)
{
    static const struct {
        const char *suffix;
        int64_t ns;
    } units[] = {
        {"d", 86400 * SL_NS_PER_S}, {"h", 3600 * SL_NS_PER_S}, {"m", 60 * SL_NS_PER_S},
        {"s", SL_NS_PER_S},         {"ms", SL_NS_PER_MS},      {"ns", 1},
    };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (ns % units[i].ns == 0) {
            snprintf(buf, cap, "%" PRId64 "%s", ns / units[i].ns, units[i].suffix);
            return;
        }
    }
}

/* The first descriptor denied for matching no rule, or -1. */
static int first_unmatched(const struct sl_result *res)
{
    for (size_t i = 0; i < res->n_statuses && i < SL_MAX_DESCRIPTORS; i++)
        if (res->statuses[i].unmatched)
            return (int)i;
    return -1;
}

void sl__json_deny_message(const struct sl_result *res, char *buf, size_t cap)
{
    const struct sl_status *p = sl__hdr_primary(res);
    char period[32], retry[64];
    const struct sl_limit *l;
    int u;

    if (cap == 0)
        return;
    buf[0] = '\0';
    if (res->verdict != SL_DENY)
        return;
    if ((p == NULL || p->d.verdict != SL_DENY) && (u = first_unmatched(res)) >= 0) {
        snprintf(buf, cap,
                 "descriptors[%d] matches no rule, and its domain denies what no rule matches "
                 "(on_unmatched: deny)",
                 u);
        return;
    }
    if (p == NULL)
        return;
    l = p->limit;
    if (l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY) {
        if (p->d.retry_after_ns < 0)
            snprintf(buf, cap,
                     "adaptive limit '%s': a request takes one slot, its cost must be 1; this "
                     "request can never pass",
                     l->name != NULL ? l->name : "default");
        else
            snprintf(buf, cap,
                     "adaptive limit '%s' exceeded: %" PRId64 " in flight (its current limit); "
                     "retry in %" PRId64 " s at the latest",
                     l->name != NULL ? l->name : "default", p->d.quota,
                     p->d.retry_after_ns / SL_NS_PER_S + (p->d.retry_after_ns % SL_NS_PER_S != 0));
        return;
    }
    if (p->d.retry_after_ns < 0)
        snprintf(retry, sizeof(retry), "this request can never pass (its cost is above the limit)");
    else
        snprintf(retry, sizeof(retry), "retry in %" PRId64 " s",
                 p->d.retry_after_ns / SL_NS_PER_S + (p->d.retry_after_ns % SL_NS_PER_S != 0));
    if (l->period_ns > 0) {
        format_period(l->period_ns, period, sizeof(period));
        snprintf(buf, cap, "rate limit '%s' exceeded: %" PRIu64 " per %s; %s",
                 l->name != NULL ? l->name : "default", l->requests, period, retry);
    } else {
        /* a concurrency limit's retry is an estimate from the requests' usual duration */
        if (p->d.retry_after_ns >= 0)
            snprintf(retry, sizeof(retry), "retry in about %" PRId64 " s",
                     p->d.retry_after_ns / SL_NS_PER_S + (p->d.retry_after_ns % SL_NS_PER_S != 0));
        snprintf(buf, cap,
                 "rate limit '%s' exceeded: too many requests in flight (%" PRIu64 "); %s",
                 l->name != NULL ? l->name : "default", l->requests, retry);
    }
}
