/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_log.c - the access log: one line per proxied request on stdout,
 * written with one write(2) so lines from workers never interleave, in
 * the combined format (Apache's and nginx's, then the proxy's own fields)
 * or as one JSON object. Quotes, backslashes and control bytes in request
 * fields are escaped (\xHH) as nginx does, so a client cannot forge lines.
 *
 * It does not buffer, rotate or open files: the service manager owns
 * stdout. A client that went away before any answer is logged as 499.
 * The decision of the route's limits (allow, delay, deny, shadow, error;
 * "-" when nothing was decided) ends each line, followed for a held
 * request by the delay it was scheduled to be held for.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "proxy_int.h"

#define LINE_MAX_BYTES 4096

static void put_escaped(struct sl__wr *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    if (*s == '\0') {
        sl__wr_puts(w, "-");
        return;
    }
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            char e[4] = {'\\', 'x', hex[ch >> 4], hex[ch & 15]};
            sl__wr_put(w, e, 4);
        } else {
            sl__wr_put(w, (const char *)&ch, 1);
        }
    }
}

static void put_ms(struct sl__wr *w, int64_t ms)
{
    char t[32];
    int n = snprintf(t, sizeof(t), "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
    sl__wr_put(w, t, (size_t)n);
}

static void combined(struct sl__wr *w, const struct sl__proxy_x *x, int64_t now)
{
    char t[64];
    time_t sec = (time_t)(x->acc.start_ns / 1000000000);
    struct tm tm;

    gmtime_r(&sec, &tm);
    strftime(t, sizeof(t), "[%d/%b/%Y:%H:%M:%S +0000]", &tm);
    sl__wr_puts(w, x->acc.client);
    sl__wr_puts(w, " - - ");
    sl__wr_puts(w, t);
    sl__wr_puts(w, " \"");
    put_escaped(w, x->acc.method);
    sl__wr_puts(w, " ");
    put_escaped(w, x->acc.target);
    sl__wr_puts(w, x->acc.minor ? " HTTP/1.1\" " : " HTTP/1.0\" ");
    sl__wr_i64(w, x->acc.status ? x->acc.status : 499);
    sl__wr_puts(w, " ");
    sl__wr_u64(w, x->acc.bytes_out);
    sl__wr_puts(w, " \"");
    put_escaped(w, x->acc.referer);
    sl__wr_puts(w, "\" \"");
    put_escaped(w, x->acc.agent);
    sl__wr_puts(w, "\" route=\"");
    put_escaped(w, x->route ? x->route->name : "");
    sl__wr_puts(w, "\" upstream=");
    sl__wr_puts(w, x->acc.upstream ? x->acc.upstream : "-");
    sl__wr_puts(w, " request_bytes=");
    sl__wr_u64(w, x->acc.bytes_in);
    sl__wr_puts(w, " rt=");
    put_ms(w, now - x->acc.t0_ms);
    sl__wr_puts(w, " urt=");
    if (x->acc.up_start_ms >= 0)
        put_ms(w, now - x->acc.up_start_ms);
    else
        sl__wr_puts(w, "-");
    sl__wr_puts(w, " decision=");
    sl__wr_puts(w, x->acc.decision ? x->acc.decision : "-");
    if (x->acc.delay_ms >= 0) { /* only a held request: the line is otherwise unchanged */
        sl__wr_puts(w, " delay=");
        put_ms(w, x->acc.delay_ms);
    }
}

static void json_field(struct sl__wr *w, const char *name, const char *v)
{
    sl__wr_puts(w, ",\"");
    sl__wr_puts(w, name);
    sl__wr_puts(w, "\":");
    if (v == NULL)
        sl__wr_puts(w, "null");
    else
        sl__wr_json_str(w, v, strlen(v));
}

static void json_num(struct sl__wr *w, const char *name, int64_t v)
{
    sl__wr_puts(w, ",\"");
    sl__wr_puts(w, name);
    sl__wr_puts(w, "\":");
    if (v < 0)
        sl__wr_puts(w, "null");
    else
        sl__wr_i64(w, v);
}

static void json(struct sl__wr *w, const struct sl__proxy_x *x, int64_t now)
{
    char t[40];
    time_t sec = (time_t)(x->acc.start_ns / 1000000000);
    struct tm tm;
    size_t n;

    gmtime_r(&sec, &tm);
    n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(t + n, sizeof(t) - n, ".%03lldZ", (long long)(x->acc.start_ns / 1000000 % 1000));
    sl__wr_puts(w, "{\"time\":\"");
    sl__wr_puts(w, t);
    sl__wr_puts(w, "\"");
    json_field(w, "client", x->acc.client);
    json_field(w, "method", x->acc.method);
    json_field(w, "target", x->acc.target);
    json_field(w, "protocol", x->acc.minor ? "HTTP/1.1" : "HTTP/1.0");
    json_num(w, "status", x->acc.status ? x->acc.status : 499);
    json_num(w, "bytes_in", (int64_t)x->acc.bytes_in);
    json_num(w, "bytes_out", (int64_t)x->acc.bytes_out);
    json_field(w, "referer", x->acc.referer);
    json_field(w, "user_agent", x->acc.agent);
    json_field(w, "route", x->route ? x->route->name : NULL);
    json_field(w, "upstream", x->acc.upstream);
    json_num(w, "duration_ms", now - x->acc.t0_ms);
    json_num(w, "upstream_ms", x->acc.up_start_ms >= 0 ? now - x->acc.up_start_ms : -1);
    json_field(w, "decision", x->acc.decision);
    json_num(w, "delay_ms", x->acc.delay_ms);
    sl__wr_puts(w, "}");
}

void sl__proxy_log(const struct sl__proxy_x *x, enum sl__log_access format)
{
    char line[LINE_MAX_BYTES];
    struct sl__wr w;
    int64_t now = (int64_t)uv_now(x->pw->loop);

    sl__wr_init(&w, line, sizeof(line) - 1);
    if (format == SL__ACCESS_JSON)
        json(&w, x, now);
    else
        combined(&w, x, now);
    if (w.overflow)
        return; /* cannot happen with the fields' caps; never a torn line */
    line[w.len] = '\n';
    if (write(STDOUT_FILENO, line, w.len + 1) < 0)
        return; /* nowhere to report it */
}
