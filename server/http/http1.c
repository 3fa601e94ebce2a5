/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http1.c - HTTP/1.1 as a sluiced protocol: sniffing by the method token,
 * framing with Debian's http-parser behind a strict head check, keep-alive and pipelining (answers
 * go out in request order through the core's reply slots), and the limits: a head above
 * SL__H1_MAX_HEAD is 431, a body above the listener's frame size is 413, anything http-parser
 * refuses is 400 — each answered once, then the connection closes. Slow clients are the core's read
 * timeout: an incomplete request is never consumed, so the core sees it pending.
 *
 * Framing is http1_parse.c: while a request arrives, each byte is looked
 * at once (sl__h1_frame keeps where it stands between reads), and the
 * complete request is parsed once. It does not route or answer requests
 * (http_api.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conn.h"
#include "decide.h"
#include "http1.h"
#include "http1_parse.h"
#include "proto.h"
#include "xalloc.h"

/* Per-connection state (c->proto_state). */
struct sl__h1_state {
    bool continue_sent;            /* "100 Continue" already sent for the pending request */
    struct sl__h1_framing framing; /* where the pending request's framing stands */
};

static _Thread_local struct sl__buf out_buf;
static _Thread_local char *body_mem;
static _Thread_local size_t body_cap;

/* ------------------------------------------------------------ answers */

static const char *reason(int status)
{
    static const struct {
        int status;
        const char *text;
    } reasons[] = {
        {100, "Continue"},
        {200, "OK"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {409, "Conflict"},
        {413, "Content Too Large"},
        {415, "Unsupported Media Type"},
        {421, "Misdirected Request"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {503, "Service Unavailable"},
    };
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
        if (reasons[i].status == status)
            return reasons[i].text;
    }
    return "Unknown";
}

const struct sl__buf *sl__h1_build(bool keep_alive, int status, const char *headers,
                                   size_t headers_len, const char *body, size_t body_len)
{
    /* Assembled by hand, not with snprintf: every answer pays for this line
     * (format parsing showed in a profile of /v1/check). A caller's headers
     * that start with their own Content-Type (pages of the dashboard)
     * replace the one guessed from the body. */
    static const char json[] = "\r\nContent-Type: application/json\r\nContent-Length: ";
    static const char text[] = "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ";
    static const char bare[] = "\r\nContent-Length: ";
    bool typed = headers_len >= 13 && strncasecmp(headers, "Content-Type:", 13) == 0;
    const char *why = reason(status), *type = typed                            ? bare
                                              : body_len > 0 && body[0] == '{' ? json
                                                                               : text;
    size_t type_len = typed ? sizeof(bare) - 1 : type == json ? sizeof(json) - 1 : sizeof(text) - 1;
    char line[160], num[24], *e = num + sizeof(num);
    size_t n = 0, v = body_len;
    unsigned code = status >= 100 && status <= 999 ? (unsigned)status : 500;

    memcpy(line, "HTTP/1.1 ", 9);
    line[9] = (char)('0' + code / 100);
    line[10] = (char)('0' + code / 10 % 10);
    line[11] = (char)('0' + code % 10);
    line[12] = ' ';
    n = 13;
    memcpy(line + n, why, strlen(why));
    n += strlen(why);
    memcpy(line + n, type, type_len);
    n += type_len;
    do {
        *--e = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    memcpy(line + n, e, (size_t)(num + sizeof(num) - e));
    n += (size_t)(num + sizeof(num) - e);
    memcpy(line + n, "\r\n", 2);
    n += 2;
    if (!keep_alive) {
        memcpy(line + n, "Connection: close\r\n", 19);
        n += 19;
    }
    out_buf.len = 0;
    sl__buf_append(&out_buf, line, n);
    if (headers_len > 0)
        sl__buf_append(&out_buf, headers, headers_len);
    sl__buf_append(&out_buf, "\r\n", 2);
    if (body_len > 0)
        sl__buf_append(&out_buf, body, body_len);
    return &out_buf;
}

void sl__h1_respond(struct sl__conn *c, int64_t slot, bool keep_alive, int status,
                    const char *headers, size_t headers_len, const char *body, size_t body_len)
{
    sl__h1_build(keep_alive, status, headers, headers_len, body, body_len);
    if (slot >= 0)
        sl__conn_slot_fill(c, slot, out_buf.p, out_buf.len);
    else
        sl__conn_write(c, out_buf.p, out_buf.len);
}

/* An error answered once, after which the connection closes. */
static ssize_t refuse(struct sl__conn *c, int status, const char *why)
{
    char body[200];
    int n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}", why);

    sl__h1_respond(c, -1, false, status, NULL, 0, body, (size_t)n);
    return -1;
}

/* ------------------------------------------------------------ framing */

static size_t max_body(const struct sl__conn *c)
{
    size_t frame = c->ls->max_frame_bytes;
    return frame > 2 * SL__H1_MAX_HEAD ? frame - SL__H1_MAX_HEAD : frame / 2;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SL_NS_PER_S + ts.tv_nsec;
}

/* A body buffer for this thread as big as this listener allows. */
static char *body_buffer(size_t need)
{
    if (need > body_cap) {
        body_mem = sl__xrealloc(body_mem, need);
        body_cap = need;
    }
    return body_mem;
}

/*
 * One request from b[0..n): its length when handled, 0 when incomplete,
 * -1 when the connection must close (an error was answered).
 */
static ssize_t one_request(struct sl__conn *c, const char *b, size_t n)
{
    struct sl__h1_state *st = c->proto_state;
    struct sl__h1_status why;
    struct sl__h1_req r;
    size_t limit = max_body(c);
    uint64_t scanned = st->framing.scanned;
    ssize_t used = sl__h1_frame(b, n, limit, &st->framing, &why);

    sl__conn_scanned(c, st->framing.scanned - scanned);
    if (used == -1)
        return refuse(c, why.status, why.why);
    if (used == -2) {
        if (why.expect_continue && !st->continue_sent) {
            sl__conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            st->continue_sent = true;
        }
        return 0;
    }
    used = sl__h1_parse_framed(b, (size_t)used, &st->framing, body_buffer(limit), limit, &r, &why);
    memset(&st->framing, 0, sizeof(st->framing));
    if (used < 0)
        return refuse(c, why.status, why.status ? why.why : "malformed request");
    st->continue_sent = false;
    r.start_ns = mono_ns();
    sl__http_api_dispatch(c, &r);
    return r.keep_alive ? used : -1;
}

static ssize_t read_requests(struct sl__conn *c, const char *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        if (c->slot_n == SL__CONN_MAX_SLOTS)
            break; /* every reply slot waits on the store: read no further */
        if (off > 0 && sl__conn_out_full(c))
            break; /* the peer reads too slowly: the rest waits for it */
        ssize_t n = one_request(c, buf + off, len - off);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        off += (size_t)n;
    }
    return (ssize_t)off;
}

/* The checks of every request read at once (pipelined) are decided as one
 * batch once the read is consumed (decide.h); the answers keep their order
 * through the reply slots and leave in one write. */
static ssize_t on_read(struct sl__conn *c, const char *buf, size_t len)
{
    ssize_t n;

    sl__decide_batch_begin(c->w);
    n = read_requests(c, buf, len);
    sl__decide_batch_end(c->w);
    return n;
}

/* ------------------------------------------------------------ sniffing */

static const char *const methods[] = {"GET",  "POST",    "PUT",   "DELETE",
                                      "HEAD", "OPTIONS", "PATCH", NULL};

/* A method name in any case and a space: the connection is HTTP's, and
 * whatever else is wrong with it (a lowercase method, another HTTP
 * version) is answered as HTTP, with a 400 (http1_head.c). No RESP command
 * is named like a method, so none is taken from RESP. */
static int sniff(const char *buf, size_t len)
{
    for (size_t i = 0; methods[i] != NULL; i++) {
        size_t m = strlen(methods[i]);
        if (strncasecmp(buf, methods[i], len < m ? len : m) != 0)
            continue;
        if (len <= m)
            return -2;
        if (buf[m] == ' ')
            return 1;
    }
    return 0;
}

static int on_open(struct sl__conn *c)
{
    c->proto_state = sl__xzalloc(sizeof(struct sl__h1_state));
    return 0;
}

static void on_close(struct sl__conn *c)
{
    free(c->proto_state);
    c->proto_state = NULL;
}

static void thread_exit(void)
{
    sl__buf_free(&out_buf);
    free(body_mem);
    body_mem = NULL;
    body_cap = 0;
}

const struct sl__proto sl__proto_http1 = {
    .name = "http1",
    .alpn = "http/1.1",
    .sniff = sniff,
    .on_open = on_open,
    .on_read = on_read,
    .on_close = on_close,
    .thread_exit = thread_exit,
};
