/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http1_head.c - the strict reading of a request head, before http-parser
 * frames it. Debian's http-parser is built lenient: it takes a space
 * before a header's colon, folded lines, bare LF line ends, any
 * HTTP/1.x version and the last of two Transfer-Encoding headers. A proxy
 * in front of sluiced may read such a head otherwise (the body's length,
 * the next request's start), so whatever two readers could disagree on is
 * refused here with a 400, as RFC 9112 allows:
 *
 *  - the request line is METHOD SP target SP HTTP/1.1 (or HTTP/1.0), the
 *    method in capitals, single spaces, a visible-ASCII target;
 *  - every line ends in CRLF (no bare LF, no bare CR);
 *  - a header name is a token right before its colon; no folded lines;
 *    values hold no control bytes but HTAB;
 *  - Host, Content-Length, Transfer-Encoding, Authorization, Content-Type
 *    and Origin appear at most once; Transfer-Encoding is exactly
 *    "chunked" and never comes with Content-Length; Content-Length is
 *    digits.
 *
 * Also the lookups of a checked head (http1.h). Pure: no connection, no
 * allocation. It does not frame bodies (http-parser does, http1_parse.c).
 */
#include <string.h>
#include <strings.h>

#include "http1_parse.h"

static int fail(struct sl__h1_status *st, const char *why)
{
    st->status = 400;
    st->why = why;
    return -1;
}

/* RFC 9110 tchar. */
static bool tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool same_name(struct sl_str name, const char *want)
{
    return name.len == strlen(want) && strncasecmp(name.p, want, name.len) == 0;
}

static struct sl_str trim(const char *p, size_t n)
{
    while (n > 0 && (p[0] == ' ' || p[0] == '\t')) {
        p++;
        n--;
    }
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return (struct sl_str){p, n};
}

int sl__h1_check_line(const char *b, size_t n, struct sl__h1_status *st)
{
    size_t m = 0, t;

    while (m < n && b[m] != ' ') {
        if (b[m] >= 'a' && b[m] <= 'z')
            return fail(st, "methods are case-sensitive: write them in capitals (GET, POST)");
        if (b[m] < 'A' || b[m] > 'Z')
            return fail(st, "malformed request line");
        m++;
    }
    if (m == 0 || m == n)
        return fail(st, "malformed request line");
    for (t = m + 1; t < n && b[t] != ' '; t++)
        if ((unsigned char)b[t] <= 0x20 || (unsigned char)b[t] >= 0x7f)
            return fail(st, "malformed request target");
    if (t == m + 1 || t == n)
        return fail(st, "malformed request line: METHOD TARGET HTTP/1.1");
    if (n - t - 1 != 8 ||
        (memcmp(b + t + 1, "HTTP/1.1", 8) != 0 && memcmp(b + t + 1, "HTTP/1.0", 8) != 0))
        return fail(st, "unsupported HTTP version: HTTP/1.1 and HTTP/1.0 are served");
    return 0;
}

/* The headers that may appear once, and what a second one says. */
enum once { ONCE_HOST, ONCE_CL, ONCE_TE, ONCE_AUTH, ONCE_CTYPE, ONCE_ORIGIN, ONCE_N };
static const char *const once_names[ONCE_N] = {
    "host", "content-length", "transfer-encoding", "authorization", "content-type", "origin"};

/* One header line b[0..n) (without its CRLF): name and trimmed value. */
static int split_field(const char *b, size_t n, struct sl_str *name, struct sl_str *value,
                       struct sl__h1_status *st)
{
    size_t i = 0;

    if (n > 0 && (b[0] == ' ' || b[0] == '\t'))
        return fail(st, "folded header lines (obs-fold) are not accepted");
    while (i < n && tchar((unsigned char)b[i]))
        i++;
    if (i < n && (b[i] == ' ' || b[i] == '\t'))
        return fail(st, "no whitespace is allowed between a header name and its colon");
    if (i == 0 || i == n || b[i] != ':')
        return fail(st, "malformed header line: NAME: value");
    for (size_t k = i + 1; k < n; k++) {
        unsigned char c = (unsigned char)b[k];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(st, "control bytes in a header value");
    }
    *name = (struct sl_str){b, i};
    *value = trim(b + i + 1, n - i - 1);
    return 0;
}

static bool all_digits(struct sl_str v)
{
    if (v.len == 0)
        return false;
    for (size_t i = 0; i < v.len; i++)
        if (v.p[i] < '0' || v.p[i] > '9')
            return false;
    return true;
}

/* What the framing must agree on: one length, given one way. */
static int check_framing(const struct sl_str *seen, const bool *have, struct sl__h1_status *st)
{
    if (have[ONCE_TE] && have[ONCE_CL])
        return fail(st, "both Content-Length and Transfer-Encoding");
    if (have[ONCE_TE] && !same_name(seen[ONCE_TE], "chunked"))
        return fail(st, "Transfer-Encoding other than chunked is not accepted");
    if (have[ONCE_CL] && !all_digits(seen[ONCE_CL]))
        return fail(st, "malformed Content-Length");
    return 0;
}

int sl__h1_check_head(const char *b, size_t head, struct sl__h1_req *r, bool *expect_continue,
                      struct sl__h1_status *st)
{
    struct sl_str seen[ONCE_N] = {{0}}, name, value; /* read only where have[] says */
    bool have[ONCE_N] = {false};
    size_t at = 0, first = 0;

    *expect_continue = false;
    for (;;) {
        const char *nl = memchr(b + at, '\n', head - at);
        size_t end = nl != NULL ? (size_t)(nl - b) : head;
        if (end == head || end == at || b[end - 1] != '\r' ||
            memchr(b + at, '\r', end - 1 - at) != NULL)
            return fail(st, "every line of a request head ends in CRLF");
        if (at == 0) {
            if (sl__h1_check_line(b, end - 1, st) != 0)
                return -1;
            first = end + 1;
        } else if (end - 1 == at) {
            break; /* the blank line */
        } else if (split_field(b + at, end - 1 - at, &name, &value, st) != 0) {
            return -1;
        } else {
            for (int k = 0; k < ONCE_N; k++) {
                if (!same_name(name, once_names[k]))
                    continue;
                if (have[k])
                    return fail(st, "a header that may appear once appears twice (Host, "
                                    "Content-Length, Transfer-Encoding, Authorization, "
                                    "Content-Type, Origin)");
                have[k] = true;
                seen[k] = value;
            }
            if (same_name(name, "expect") && same_name(value, "100-continue"))
                *expect_continue = true;
        }
        at = end + 1;
    }
    if (check_framing(seen, have, st) != 0)
        return -1;
    r->headers = (struct sl_str){b + first, at - first}; /* each line with its CRLF */
    if (have[ONCE_AUTH])
        r->authorization = seen[ONCE_AUTH];
    return 0;
}

/* ------------------------------------------------------------ lookups */

size_t sl__h1_header_next(const struct sl__h1_req *r, size_t at, struct sl_str *name,
                          struct sl_str *value)
{
    const char *b = r->headers.p, *colon, *nl;
    size_t n = r->headers.len, end;

    if (at >= n)
        return 0;
    nl = memchr(b + at, '\n', n - at);
    if (nl == NULL || nl == b + at) /* not from a checked head */
        return 0;
    end = (size_t)(nl - b) - 1; /* the CR */
    colon = memchr(b + at, ':', end - at);
    if (colon == NULL)
        return 0;
    *name = (struct sl_str){b + at, (size_t)(colon - (b + at))};
    *value = trim(colon + 1, (size_t)(b + end - colon - 1));
    return end + 2;
}

bool sl__h1_header(const struct sl__h1_req *r, const char *name, struct sl_str *value)
{
    struct sl_str n, v;

    for (size_t at = 0; (at = sl__h1_header_next(r, at, &n, &v)) != 0;) {
        if (same_name(n, name)) {
            *value = v;
            return true;
        }
    }
    *value = (struct sl_str){"", 0};
    return false;
}
