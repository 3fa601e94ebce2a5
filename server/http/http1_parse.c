/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http1_parse.c - frames one HTTP/1.1 request with Debian's http-parser:
 * head size limit, body size limit (Content-Length and chunked), request
 * target split, keep-alive, Expect: 100-continue. The head is first read
 * strictly (http1_head.c): http-parser only frames what both agree on.
 *
 * Pure: no connection, no I/O, no allocation (the body goes into the
 * caller's buffer). A request is parsed only once complete, from its first
 * byte, so nothing is kept between calls. It does not route requests.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <http_parser.h>

#include "http1_parse.h"

static ssize_t fail(struct sl__h1_status *st, int status, const char *why)
{
    st->status = status;
    st->why = why;
    return -1;
}

struct parse {
    struct sl__h1_req *r;
    struct sl_str url;
    bool complete, too_large;
    size_t max_body;
    struct sl__wr *body;
};

static struct parse *P(http_parser *p)
{
    return p->data;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    P(p)->url = (struct sl_str){at, len};
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct parse *x = P(p);

    if (p->content_length != ULLONG_MAX && p->content_length > x->max_body) {
        x->too_large = true;
        http_parser_pause(p, 1);
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct parse *x = P(p);

    sl__wr_put(x->body, at, len);
    if (x->body->overflow) {
        x->too_large = true;
        http_parser_pause(p, 1);
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    P(p)->complete = true;
    http_parser_pause(p, 1); /* stop exactly at the end of this request */
    return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Offset just past the blank line ending the head in b[0..n), 0 if none. */
static size_t head_end(const char *b, size_t n)
{
    for (const char *p = memchr(b, '\n', n); p != NULL;
         p = memchr(p + 1, '\n', n - (size_t)(p + 1 - b))) {
        size_t i = (size_t)(p - b) + 1;
        if (i < n && b[i] == '\n')
            return i + 1;
        if (i + 1 < n && b[i] == '\r' && b[i + 1] == '\n')
            return i + 2;
    }
    return 0;
}

/* Split the request target into path and query. */
static int split_url(struct sl_str url, struct sl__h1_req *r)
{
    struct http_parser_url u;

    http_parser_url_init(&u);
    if (http_parser_parse_url(url.p, url.len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH)))
        return -1;
    r->path = (struct sl_str){url.p + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len};
    if (u.field_set & (1 << UF_QUERY))
        r->query = (struct sl_str){url.p + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len};
    return 0;
}

/* The request b[0..n) whose head passed the strict check (r->headers and
 * r->authorization set): http-parser frames it and fills r. */
static ssize_t parse_checked(const char *b, size_t n, char *body, size_t max_body,
                             bool expect_continue, struct sl__h1_req *r, struct sl__h1_status *st)
{
    struct sl__wr w;
    struct parse x = {.r = r, .max_body = max_body, .body = &w};
    http_parser p;
    size_t used;

    sl__wr_init(&w, body, max_body);
    http_parser_init(&p, HTTP_REQUEST);
    p.data = &x;
    used = http_parser_execute(&p, &settings, b, n);
    if (x.too_large)
        return fail(st, 413, "request body too large");
    if (HTTP_PARSER_ERRNO(&p) != HPE_OK && HTTP_PARSER_ERRNO(&p) != HPE_PAUSED)
        return fail(st, 400, http_errno_description(HTTP_PARSER_ERRNO(&p)));
    if (p.upgrade)
        return fail(st, 400, "protocol upgrades are not supported");
    if (!x.complete) {
        st->expect_continue = expect_continue;
        return -2;
    }
    if (split_url(x.url, r) != 0)
        return fail(st, 400, "malformed request target");
    r->method = (int)p.method;
    r->body = (struct sl_str){body, w.len};
    r->keep_alive = http_should_keep_alive(&p) != 0;
    return (ssize_t)used;
}

ssize_t sl__h1_parse(const char *b, size_t n, char *body, size_t max_body, struct sl__h1_req *r,
                     struct sl__h1_status *st)
{
    size_t head = head_end(b, n < SL__H1_MAX_HEAD ? n : SL__H1_MAX_HEAD);
    bool expect_continue;

    memset(r, 0, sizeof(*r));
    memset(st, 0, sizeof(*st));
    if (head == 0) {
        if (n < SL__H1_MAX_HEAD)
            return -2;
        return fail(st, 431, "request head too large");
    }
    if (sl__h1_check_head(b, head, r, &expect_continue, st) != 0)
        return -1;
    return parse_checked(b, n, body, max_body, expect_continue, r, st);
}

ssize_t sl__h1_parse_framed(const char *b, size_t n, const struct sl__h1_framing *f, char *body,
                            size_t max_body, struct sl__h1_req *r, struct sl__h1_status *st)
{
    if (!f->checked || f->head == 0 || f->head > n)
        return sl__h1_parse(b, n, body, max_body, r, st);
    memset(r, 0, sizeof(*r));
    memset(st, 0, sizeof(*st));
    r->headers = (struct sl_str){f->hdr_off != SIZE_MAX ? b + f->hdr_off : NULL, f->hdr_len};
    r->authorization =
        (struct sl_str){f->auth_off != SIZE_MAX ? b + f->auth_off : NULL, f->auth_len};
    return parse_checked(b, n, body, max_body, f->expect_continue, r, st);
}

/* ------------------------------------------------------------ framing */

static int hs_headers_complete(http_parser *p)
{
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings head_settings = {
    .on_headers_complete = hs_headers_complete,
};

/* The head b[0..f->head) is complete: learn how the body is framed. */
static ssize_t frame_head(const char *b, size_t max_body, struct sl__h1_framing *f,
                          struct sl__h1_status *st)
{
    struct sl__h1_req r;
    http_parser p;

    /* The strict check first, so a head it refuses is refused while the
     * body is still arriving, not once it has all come. */
    memset(&r, 0, sizeof(r));
    if (sl__h1_check_head(b, f->head, &r, &f->expect_continue, st) != 0)
        return -1;
    f->checked = true;
    f->hdr_off = r.headers.p != NULL ? (size_t)(r.headers.p - b) : SIZE_MAX;
    f->hdr_len = r.headers.len;
    f->auth_off = r.authorization.p != NULL ? (size_t)(r.authorization.p - b) : SIZE_MAX;
    f->auth_len = r.authorization.len;
    http_parser_init(&p, HTTP_REQUEST);
    http_parser_execute(&p, &head_settings, b, f->head);
    f->scanned += f->head;
    if (HTTP_PARSER_ERRNO(&p) != HPE_OK && HTTP_PARSER_ERRNO(&p) != HPE_PAUSED)
        return fail(st, 400, http_errno_description(HTTP_PARSER_ERRNO(&p)));
    if (p.flags & F_CHUNKED) {
        f->chunked = true;
        f->at = f->head;
    } else if (p.content_length != ULLONG_MAX && p.content_length > 0) {
        if (p.content_length > max_body)
            return fail(st, 413, "request body too large");
        f->need = f->head + (size_t)p.content_length;
    } else {
        f->need = f->head;
    }
    return 0;
}

/* The line starting at b[at..n): its length with the newline, 0 when it is
 * not complete yet, -1 when it is longer than any chunk header may be. */
static ssize_t line_at(const char *b, size_t n, size_t at, struct sl__h1_framing *f)
{
    size_t avail = n - at, cap = avail < 4096 ? avail : 4096;
    const char *nl = memchr(b + at, '\n', cap);

    if (nl == NULL) {
        if (avail >= 4096)
            return -1;
        return 0;
    }
    f->scanned += (size_t)(nl - (b + at)) + 1;
    return (ssize_t)(nl - (b + at)) + 1;
}

/* Walk chunk headers (and then trailer lines) from f->at, skipping the
 * data. 0 when the request is still incomplete or its end is known. */
static ssize_t frame_chunks(const char *b, size_t n, size_t max_body, struct sl__h1_framing *f,
                            struct sl__h1_status *st)
{
    while (f->need == 0 && f->at < n) {
        ssize_t line = line_at(b, n, f->at, f);
        uint64_t size = 0;
        size_t i = f->at;
        if (line < 0)
            return fail(st, 400, "chunk header too long");
        if (line == 0)
            return 0;
        if (f->in_trailers) { /* a blank line ends the trailers and the request */
            if (line == 1 || (line == 2 && b[i] == '\r'))
                f->need = f->at + (size_t)line;
            f->at += (size_t)line;
            continue;
        }
        for (; i < f->at + (size_t)line; i++) {
            int d = b[i] >= '0' && b[i] <= '9'   ? b[i] - '0'
                    : b[i] >= 'a' && b[i] <= 'f' ? b[i] - 'a' + 10
                    : b[i] >= 'A' && b[i] <= 'F' ? b[i] - 'A' + 10
                                                 : -1;
            if (d < 0)
                break;
            if (size > (UINT64_MAX >> 4))
                return fail(st, 400, "invalid chunk size");
            size = size << 4 | (uint64_t)d;
        }
        if (i == f->at)
            return fail(st, 400, "invalid chunk size");
        f->at += (size_t)line;
        if (size == 0) {
            f->in_trailers = true;
            continue;
        }
        if (size > max_body - f->body)
            return fail(st, 413, "request body too large");
        f->body += (size_t)size;
        f->at += (size_t)size + 2; /* the data and its CRLF, checked by the final parse */
    }
    return 0;
}

ssize_t sl__h1_frame(const char *b, size_t n, size_t max_body, struct sl__h1_framing *f,
                     struct sl__h1_status *st)
{
    ssize_t r;

    memset(st, 0, sizeof(*st));
    if (f->head == 0) {
        size_t cap = n < SL__H1_MAX_HEAD ? n : SL__H1_MAX_HEAD;
        size_t from = f->searched > 3 ? f->searched - 3 : 0; /* a CRLFCRLF may straddle */
        size_t end = head_end(b + from, cap - from);
        f->scanned += end ? end : cap - from; /* the search stops at the CRLFCRLF */
        f->searched = cap;
        if (end == 0) {
            if (n >= SL__H1_MAX_HEAD)
                return fail(st, 431, "request head too large");
            return -2;
        }
        f->head = from + end;
        if ((r = frame_head(b, max_body, f, st)) != 0)
            return r;
    }
    if (f->chunked && (r = frame_chunks(b, n, max_body, f, st)) != 0)
        return r;
    if (f->need == 0 || n < f->need) {
        st->expect_continue = f->expect_continue;
        return -2;
    }
    f->scanned += f->need; /* the final parse reads it once */
    return (ssize_t)f->need;
}
