/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_deny.c - what a denied request is answered (proxy_deny.h): the
 * route's deny_status (429), Retry-After and the configured rate-limit
 * header families (server/core/headers.h), and a body that says when to
 * come back - application/problem+json (RFC 9457), the error envelope
 * {"error": {"code", "message", "context": {"renewal"}}}, or the route's
 * own text. The human sentence counts the wait in the largest unit that
 * reads well ("Wait 3 minutes and try again.").
 *
 * It decides nothing (the decision path did) and writes nothing to a
 * connection (proxy.c does); it allocates only by growing the caller's
 * reused buffer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "conn.h"
#include "headers.h"
#include "proxy_deny.h"
#include "proxy_int.h"

#define HEADERS_MAX 4096

void sl__proxy_wait_text(int64_t ns, char *out, size_t cap)
{
    static const struct {
        int64_t below_s, unit_s;
        const char *one, *many;
    } units[] = {
        {120, 1, "second", "seconds"},
        {7200, 60, "minute", "minutes"},
        {172800, 3600, "hour", "hours"},
        {INT64_MAX, 86400, "day", "days"},
    };
    int64_t s = ns / SL_NS_PER_S + (ns % SL_NS_PER_S != 0);

    if (s < 1)
        s = 1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (s < units[i].below_s) {
            int64_t n = s / units[i].unit_s + (s % units[i].unit_s != 0);
            snprintf(out, cap, "%" PRId64 " %s", n, n == 1 ? units[i].one : units[i].many);
            return;
        }
    }
}

/* The sentence for the client: what happened and how long to wait. */
static void message(const struct sl_status *p, char *out, size_t cap)
{
    char wait[48];
    bool in_flight = p != NULL && p->limit != NULL && p->limit->period_ns == 0;
    const char *what = in_flight ? "Too many requests in flight." : "Request quota exceeded.";

    if (p == NULL) {
        snprintf(out, cap, "%s Try again later.", what);
    } else if (p->d.retry_after_ns < 0) {
        snprintf(out, cap, "%s This request is larger than the quota and can never pass.", what);
    } else if (in_flight) {
        /* the wait is how long the ones in flight usually take, a guess */
        sl__proxy_wait_text(p->d.retry_after_ns, wait, sizeof(wait));
        snprintf(out, cap, "%s Try again in about %s.", what, wait);
    } else {
        sl__proxy_wait_text(p->d.retry_after_ns, wait, sizeof(wait));
        snprintf(out, cap, "%s Wait %s and try again.", what, wait);
    }
}

/* RFC 3339 UTC time at now + retry, rounded up to the second. */
static void renewal(int64_t now_ns, int64_t retry_ns, char *out, size_t cap)
{
    int64_t at = now_ns + retry_ns;
    time_t sec = (time_t)(at / SL_NS_PER_S + (at % SL_NS_PER_S != 0));
    struct tm tm;

    gmtime_r(&sec, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void body_problem(struct sl__wr *w, int status, const char *msg)
{
    sl__wr_puts(w, "{\"type\":\"about:blank\",\"title\":");
    sl__wr_json_str(w, sl__proxy_reason(status), strlen(sl__proxy_reason(status)));
    sl__wr_puts(w, ",\"status\":");
    sl__wr_i64(w, status);
    sl__wr_puts(w, ",\"detail\":");
    sl__wr_json_str(w, msg, strlen(msg));
    sl__wr_puts(w, "}\n");
}

static void body_envelope(struct sl__wr *w, const struct sl_status *p, int64_t now_ns,
                          const char *msg)
{
    char when[40];

    sl__wr_puts(w, "{\"error\":{\"code\":\"rate_limited\",\"message\":");
    sl__wr_json_str(w, msg, strlen(msg));
    sl__wr_puts(w, ",\"context\":{\"renewal\":");
    if (p != NULL && p->d.retry_after_ns >= 0) {
        renewal(now_ns, p->d.retry_after_ns, when, sizeof(when));
        sl__wr_json_str(w, when, strlen(when));
    } else {
        sl__wr_puts(w, "null");
    }
    sl__wr_puts(w, "}}}\n");
}

void sl__proxy_deny(const struct sl__proxy_limits *lim, const struct sl_result *res, int64_t now_ns,
                    struct sl__buf *buf, struct sl__proxy_local *l)
{
    static const char *const types[] = {"application/problem+json", "application/json",
                                        "text/plain; charset=utf-8"};
    const struct sl_status *p = sl__hdr_primary(res);
    char hdrs[HEADERS_MAX], body[1024], msg[160];
    size_t hlen = 0, blen = 0;
    struct sl__wr w;

    if (sl__hdr_write(res, now_ns, lim->headers | SL__HDR_RETRY_AFTER, hdrs, sizeof(hdrs), &hlen) !=
            SL_OK &&
        sl__hdr_write(res, now_ns, SL__HDR_RETRY_AFTER, hdrs, sizeof(hdrs), &hlen) != SL_OK)
        hlen = 0;
    message(p, msg, sizeof(msg));
    sl__wr_init(&w, body, sizeof(body));
    if (lim->deny_body == SL__PD_ENVELOPE)
        body_envelope(&w, p, now_ns, msg);
    else if (lim->deny_body == SL__PD_PROBLEM)
        body_problem(&w, lim->deny_status, msg);
    if (sl__wr_finish(&w, &blen) != SL_OK)
        blen = 0;
    buf->len = 0;
    sl__buf_append(buf, hdrs, hlen);
    if (lim->deny_body == SL__PD_TEXT)
        sl__buf_append(buf, lim->deny_text, strlen(lim->deny_text));
    else
        sl__buf_append(buf, body, blen);
    *l = (struct sl__proxy_local){
        .status = lim->deny_status,
        .type = types[lim->deny_body <= SL__PD_TEXT ? lim->deny_body : 0],
        .headers = {buf->p, hlen},
        .body = {buf->p != NULL ? buf->p + hlen : "", buf->len - hlen}, /* nothing appended */
    };
}
