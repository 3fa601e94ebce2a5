/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_json_build.c - writes the JSON answers of the check endpoints
 * (Envoy's RateLimitResponse, the native check answer, errors) straight
 * into a caller's buffer.
 *
 * Nothing is allocated and no cJSON tree is built: these are on the hot path.
 * It does not choose HTTP statuses or headers.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "http_json_int.h"

void sl__json_envoy_unit(const struct sl_limit *l, const char **unit, uint32_t *per_unit)
{
    unsigned u;

    sl__envoy_unit_of(l, &u, per_unit);
    *unit = sl__envoy_units[u].name;
}

static void envoy_status(struct sl__wr *b, const struct sl__envoy_status *e)
{
    if (!e->has_limit) { /* OVER_LIMIT: no rule matched and the domain denies that */
        sl__wr_puts(b, e->code == SL__ENVOY_OVER_LIMIT ? "{\"code\":\"OVER_LIMIT\""
                                                       : "{\"code\":\"OK\"");
        if (e->limit_remaining > 0) { /* an unlimited rule */
            sl__wr_puts(b, ",\"limitRemaining\":");
            sl__wr_u64(b, e->limit_remaining);
        }
        sl__wr_puts(b, "}");
        return;
    }
    sl__wr_puts(b,
                e->code == SL__ENVOY_OVER_LIMIT ? "{\"code\":\"OVER_LIMIT\"" : "{\"code\":\"OK\"");
    sl__wr_puts(b, ",\"currentLimit\":{\"name\":");
    sl__wr_json_str(b, e->name, strlen(e->name));
    sl__wr_puts(b, ",\"requestsPerUnit\":");
    sl__wr_u64(b, e->requests_per_unit);
    sl__wr_puts(b, ",\"unit\":\"");
    sl__wr_puts(b, sl__envoy_units[e->unit].name);
    sl__wr_puts(b, "\"},\"limitRemaining\":");
    sl__wr_u64(b, e->limit_remaining);
    sl__wr_puts(b, ",\"durationUntilReset\":\"");
    sl__wr_i64(b, e->reset_s);
    sl__wr_puts(b, "s\"}");
}

int sl__json_write_envoy(const struct sl__envoy_answer *a, char *buf, size_t cap, size_t *len)
{
    struct sl__wr b;

    sl__wr_init(&b, buf, cap);
    sl__wr_puts(&b, a->overall == SL__ENVOY_OVER_LIMIT ? "{\"overallCode\":\"OVER_LIMIT\""
                                                       : "{\"overallCode\":\"OK\"");
    sl__wr_puts(&b, ",\"statuses\":[");
    for (size_t i = 0; i < a->n; i++) {
        if (i > 0)
            sl__wr_put(&b, ",", 1);
        envoy_status(&b, &a->st[i]);
    }
    sl__wr_put(&b, "]", 1);
    if (a->headers.n > 0) {
        sl__wr_puts(&b, ",\"responseHeadersToAdd\":[");
        for (size_t i = 0; i < a->headers.n; i++) {
            sl__wr_puts(&b, i > 0 ? ",{\"key\":" : "{\"key\":");
            sl__wr_json_str(&b, a->headers.h[i].key.p, a->headers.h[i].key.len);
            sl__wr_puts(&b, ",\"value\":");
            sl__wr_json_str(&b, a->headers.h[i].value.p, a->headers.h[i].value.len);
            sl__wr_put(&b, "}", 1);
        }
        sl__wr_put(&b, "]", 1);
    }
    sl__wr_put(&b, "}", 1);
    return sl__wr_finish(&b, len);
}

int sl__json_build_envoy(const struct sl_result *res, char *buf, size_t cap, size_t *len)
{
    static _Thread_local struct sl__envoy_answer a;

    sl__envoy_answer(NULL, res, false, 0, &a);
    return sl__json_write_envoy(&a, buf, cap, len);
}

static void check_status(struct sl__wr *b, const struct sl_status *s)
{
    sl__wr_puts(b, "{\"decision\":\"");
    sl__wr_puts(b, sl_verdict_name(s->limit != NULL || s->unmatched ? s->d.verdict : SL_ALLOW));
    sl__wr_puts(b, "\",\"limit\":");
    if (s->limit == NULL) {
        sl__wr_puts(b, s->unmatched ? "null,\"unmatched\":true}" : "null}");
        return;
    }
    if (s->limit->name != NULL)
        sl__wr_json_str(b, s->limit->name, strlen(s->limit->name));
    else
        sl__wr_puts(b, "null");
    sl__wr_puts(b, ",\"quota\":");
    sl__wr_i64(b, s->d.quota);
    sl__wr_puts(b, ",\"remaining\":");
    sl__wr_i64(b, s->d.remaining);
    sl__wr_puts(b, ",\"reset_ms\":");
    sl__wr_i64(b, sl_ns_to_ms_ceil(s->d.reset_ns));
    sl__wr_puts(b, ",\"retry_after_ms\":");
    sl__wr_i64(b, sl_ns_to_ms_ceil(s->d.retry_after_ns));
    sl__wr_puts(b, "}");
}

int sl__json_build_check(const struct sl_result *res, char *buf, size_t cap, size_t *len)
{
    return sl__json_build_check_by(res, NULL, buf, cap, len);
}

int sl__json_build_check_by(const struct sl_result *res, const char *policy, char *buf, size_t cap,
                            size_t *len)
{
    struct sl__wr b;
    char msg[256];

    sl__wr_init(&b, buf, cap);
    sl__wr_puts(&b, "{\"decision\":\"");
    sl__wr_puts(&b, sl_verdict_name(res->verdict));
    sl__wr_puts(&b, "\",\"delay_ms\":");
    sl__wr_i64(&b, res->verdict == SL_DELAY ? sl_ns_to_ms_ceil(res->delay_ns) : 0);
    sl__wr_puts(&b, ",\"statuses\":[");
    for (size_t i = 0; i < res->n_statuses && i < SL_MAX_DESCRIPTORS; i++) {
        if (i > 0)
            sl__wr_put(&b, ",", 1);
        check_status(&b, &res->statuses[i]);
    }
    sl__wr_put(&b, "]", 1);
    if (policy != NULL) { /* only when a failure policy answered */
        sl__wr_puts(&b, ",\"policy\":");
        sl__wr_json_str(&b, policy, strlen(policy));
    }
    if (res->verdict == SL_DENY) {
        sl__json_deny_message(res, msg, sizeof(msg));
        sl__wr_puts(&b, ",\"message\":");
        sl__wr_json_str(&b, msg, strlen(msg));
    }
    sl__wr_put(&b, "}", 1);
    return sl__wr_finish(&b, len);
}

int sl__json_build_error(const char *message, char *buf, size_t cap, size_t *len)
{
    struct sl__wr b;

    sl__wr_init(&b, buf, cap);
    sl__wr_puts(&b, "{\"error\":");
    sl__wr_json_str(&b, message, strlen(message));
    sl__wr_put(&b, "}", 1);
    return sl__wr_finish(&b, len);
}
