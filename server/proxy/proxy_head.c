/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_head.c - the heads written to the other side: the request for the
 * upstream and the response for the client, each the original's headers
 * minus the hop-by-hop ones (RFC 9110 §7.6.1: Connection and the headers
 * it names, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding,
 * Upgrade) with the framing rebuilt by the proxy, and the forwarding
 * headers (X-Forwarded-For, Forwarded, Via) each merged into one line with
 * this hop appended. Also the proxy's own error answers.
 *
 * It decides nothing about framing (the caller says what to send) and
 * allocates only by growing the caller's reused buffer.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "conn.h"
#include "proxy_int.h"

static void put(struct sl__buf *b, const char *s)
{
    sl__buf_append(b, s, strlen(s));
}

static void put_str(struct sl__buf *b, struct sl_str s)
{
    if (s.len > 0) /* an empty slice may have no pointer */
        sl__buf_append(b, s.p, s.len);
}

static void put_u64(struct sl__buf *b, uint64_t v)
{
    char d[24];
    int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)v);
    sl__buf_append(b, d, (size_t)n);
}

static bool is_any(struct sl_str name, const char *const *list)
{
    for (size_t i = 0; list[i] != NULL; i++)
        if (sl__proxy_ieq(name, list[i]))
            return true;
    return false;
}

/* HTTP2-Settings belongs to an h2c upgrade, which is never passed on */
static const char *const hop[] = {"connection", "keep-alive",     "proxy-connection",
                                  "te",         "trailer",        "transfer-encoding",
                                  "upgrade",    "http2-settings", NULL};
static const char *const merged[] = {"x-forwarded-for", "forwarded", "via", NULL};

/* Named by one of the head's Connection headers (then hop-by-hop too).
 * Host never is: a request without it is not HTTP/1.1 (the upstream would
 * refuse it), whatever a client lists. */
static bool conn_named(const struct sl__proxy_head *h, struct sl_str name)
{
    if (!(h->flags & SL__PH_CONN_OTHER) || sl__proxy_ieq(name, "host"))
        return false;
    for (unsigned i = 0; i < h->n_hdrs; i++)
        if (sl__proxy_ieq(h->hdrs[i].name, "connection") &&
            sl__proxy_conn_lists(h->hdrs[i].value, name))
            return true;
    return false;
}

/* Copy the end-to-end headers; `also` lists more names to leave out. */
static void copy_headers(struct sl__buf *out, const struct sl__proxy_head *h,
                         const char *const *also)
{
    for (unsigned i = 0; i < h->n_hdrs; i++) {
        struct sl_str n = h->hdrs[i].name;
        if (is_any(n, hop) || is_any(n, merged) || is_any(n, also) || conn_named(h, n))
            continue;
        put_str(out, n);
        sl__buf_append(out, ": ", 2);
        put_str(out, h->hdrs[i].value);
        sl__buf_append(out, "\r\n", 2);
    }
}

/* "Name: <every value of that header>, <last>\r\n" */
static void merge(struct sl__buf *out, const struct sl__proxy_head *h, const char *lower,
                  const char *name, const char *last_a, const char *last_b, const char *last_c)
{
    put(out, name);
    sl__buf_append(out, ": ", 2);
    for (unsigned i = 0; i < h->n_hdrs; i++) {
        if (sl__proxy_ieq(h->hdrs[i].name, lower) && h->hdrs[i].value.len > 0) {
            put_str(out, h->hdrs[i].value);
            sl__buf_append(out, ", ", 2);
        }
    }
    put(out, last_a);
    put(out, last_b);
    put(out, last_c);
    sl__buf_append(out, "\r\n", 2);
}

static void framing(struct sl__buf *out, enum sl__proxy_framing f, uint64_t length)
{
    if (f == SL__PF_LENGTH) {
        put(out, "Content-Length: ");
        put_u64(out, length);
        sl__buf_append(out, "\r\n", 2);
    } else if (f == SL__PF_CHUNKED) {
        put(out, "Transfer-Encoding: chunked\r\n");
    }
}

static bool has_header(const struct sl__proxy_head *h, const char *lower)
{
    for (unsigned i = 0; i < h->n_hdrs; i++)
        if (sl__proxy_ieq(h->hdrs[i].name, lower))
            return true;
    return false;
}

void sl__proxy_req_head(struct sl__buf *out, const struct sl__proxy_head *h,
                        const struct sl__proxy_fwd *f)
{
    static const char *const req_also[] = {"content-length", "expect", NULL};
    bool v6 = strchr(f->client, ':') != NULL;

    put_str(out, h->method);
    sl__buf_append(out, " ", 1);
    put_str(out, h->target);
    put(out, " HTTP/1.1\r\n");
    copy_headers(out, h, req_also);
    if (h->host.p == NULL) {
        put(out, "Host: ");
        put(out, f->host);
        sl__buf_append(out, "\r\n", 2);
    }
    framing(out, f->framing, f->length);
    if (f->upgrade) {
        put(out, "Connection: upgrade\r\nUpgrade: ");
        put_str(out, h->upgrade);
        sl__buf_append(out, "\r\n", 2);
    }
    merge(out, h, "x-forwarded-for", "X-Forwarded-For", f->client, "", "");
    if (!has_header(h, "x-forwarded-proto"))
        put(out, "X-Forwarded-Proto: http\r\n");
    merge(out, h, "forwarded", "Forwarded", v6 ? "for=\"[" : "for=", f->client,
          v6 ? "]\";proto=http" : ";proto=http");
    merge(out, h, "via", "Via", h->minor ? "1.1 " : "1.0 ", f->via, "");
    sl__buf_append(out, "\r\n", 2);
}

void sl__proxy_resp_head(struct sl__buf *out, const struct sl__proxy_head *h,
                         const struct sl__proxy_rfwd *f)
{
    static const char *const resp_also[] = {"content-length", NULL};
    static const char *const none[] = {NULL};
    /* the gate's rate-limit headers replace the upstream's own */
    static const char *const resp_rl[] = {
        "content-length",        "ratelimit-policy",  "ratelimit", "x-ratelimit-limit",
        "x-ratelimit-remaining", "x-ratelimit-reset", NULL};
    char line[32];
    int n = snprintf(line, sizeof(line), "HTTP/1.1 %03d ", h->status);

    sl__buf_append(out, line, (size_t)n);
    put_str(out, h->reason);
    sl__buf_append(out, "\r\n", 2);
    copy_headers(out, h,
                 f->extra.len > 0 ? resp_rl + (f->keep_length ? 1 : 0)
                 : f->keep_length ? none
                                  : resp_also);
    put_str(out, f->extra);
    if (!f->keep_length)
        framing(out, f->framing, f->length);
    if (f->upgrade) {
        put(out, "Connection: upgrade\r\nUpgrade: ");
        put_str(out, h->upgrade);
        sl__buf_append(out, "\r\n", 2);
    } else if (f->close) {
        put(out, "Connection: close\r\n");
    } else if (f->keep_alive10) {
        put(out, "Connection: keep-alive\r\n");
    }
    merge(out, h, "via", "Via", h->minor ? "1.1 " : "1.0 ", f->via, "");
    sl__buf_append(out, "\r\n", 2);
}

const char *sl__proxy_reason(int status)
{
    static const struct {
        int status;
        const char *text;
    } reasons[] = {
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {413, "Content Too Large"},
        {417, "Expectation Failed"},
        {420, "Enhance Your Calm"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
    };
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].status == status)
            return reasons[i].text;
    return status < 500 ? "Client Error" : "Server Error";
}

void sl__proxy_local_resp(struct sl__buf *out, const struct sl__proxy_local *l)
{
    char line[200];
    int n = snprintf(line, sizeof(line),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s", l->status,
                     sl__proxy_reason(l->status), l->type, l->body.len,
                     l->close ? "Connection: close\r\n" : "");

    sl__buf_append(out, line, (size_t)n);
    put_str(out, l->headers);
    sl__buf_append(out, "\r\n", 2);
    if (!l->no_body)
        put_str(out, l->body);
}

size_t sl__proxy_error_body(char *buf, size_t cap, const char *why)
{
    struct sl__wr w;
    size_t blen = 0;

    sl__wr_init(&w, buf, cap);
    sl__wr_puts(&w, "{\"error\":");
    sl__wr_json_str(&w, why, strlen(why));
    sl__wr_puts(&w, "}\n");
    return sl__wr_finish(&w, &blen) == SL_OK ? blen : 0;
}

void sl__proxy_local_head(struct sl__buf *out, int status, bool close, const char *why)
{
    char body[320];
    size_t blen = sl__proxy_error_body(body, sizeof(body), why);

    sl__proxy_local_resp(out, &(struct sl__proxy_local){.status = status,
                                                        .type = "application/json",
                                                        .body = {body, blen},
                                                        .close = close});
}
