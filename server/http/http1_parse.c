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

ssize_t sl__h1_parse(const char *b, size_t n, char *body, size_t max_body, struct sl__h1_req *r,
                     struct sl__h1_status *st)
{
    struct sl__wr w;
    struct parse x = {.r = r, .max_body = max_body, .body = &w};
    http_parser p;
    size_t head = head_end(b, n < SL__H1_MAX_HEAD ? n : SL__H1_MAX_HEAD), used;
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
