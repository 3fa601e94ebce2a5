/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_parse.c - the proxy's strict HTTP/1.1 head parser (proxy_parse.h):
 * lines must end in CRLF, header names are tokens followed directly by a
 * colon, values hold no control bytes, and the headers that frame a body
 * (Content-Length, Transfer-Encoding) or steer the connection
 * (Connection, Upgrade, Expect, Host) are checked as they are read.
 *
 * Written here rather than with Debian's http-parser because that parser,
 * as Debian builds it, accepts obs-fold and bare LF line ends (the two
 * readings a smuggling attack plays on), and the proxy needs the header
 * lines themselves to rewrite them. It does not decode bodies.
 */
#include <string.h>
#include <strings.h>

#include "proxy_parse.h"

#define MAX_CL_DIGITS 18 /* below 10^18 bytes: no overflow, and more than any body */

static ssize_t fail(struct sl__proxy_err *e, int status, const char *why)
{
    e->status = status;
    e->why = why;
    return -1;
}

static bool is_tchar(unsigned char ch)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";

    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
        return true;
    return ch != '\0' && strchr(extra, ch) != NULL;
}

bool sl__proxy_ieq(struct sl_str s, const char *lower)
{
    size_t n = strlen(lower);
    return s.len == n && strncasecmp(s.p, lower, n) == 0;
}

/* Trim spaces and tabs at both ends. */
static struct sl_str trim(struct sl_str s)
{
    while (s.len > 0 && (s.p[0] == ' ' || s.p[0] == '\t')) {
        s.p++;
        s.len--;
    }
    while (s.len > 0 && (s.p[s.len - 1] == ' ' || s.p[s.len - 1] == '\t'))
        s.len--;
    return s;
}

/* Call `fn` on each comma-separated token of v; stops when it returns
 * true, and returns whether it did. */
static bool each_token(struct sl_str v, bool (*fn)(struct sl_str tok, void *arg), void *arg)
{
    while (v.len > 0) {
        const char *comma = memchr(v.p, ',', v.len);
        size_t n = comma ? (size_t)(comma - v.p) : v.len;
        struct sl_str tok = trim((struct sl_str){v.p, n});
        if (tok.len > 0 && fn(tok, arg))
            return true;
        v.p += comma ? n + 1 : n;
        v.len -= comma ? n + 1 : n;
    }
    return false;
}

static bool same_token(struct sl_str tok, void *arg)
{
    const struct sl_str *name = arg;
    return tok.len == name->len && strncasecmp(tok.p, name->p, tok.len) == 0;
}

bool sl__proxy_conn_lists(struct sl_str conn_value, struct sl_str name)
{
    return each_token(conn_value, same_token, &name);
}

struct upgrade_names {
    char *const *names;
    size_t n;
};

/* true (stop) when tok's protocol, "name[/version]", is not listed */
static bool upgrade_unlisted(struct sl_str tok, void *arg)
{
    const struct upgrade_names *u = arg;
    const char *slash = memchr(tok.p, '/', tok.len);
    struct sl_str name = {tok.p, slash ? (size_t)(slash - tok.p) : tok.len};

    if (sl__proxy_ieq(name, "h2c"))
        return true;
    for (size_t i = 0; i < u->n; i++)
        if (sl__proxy_ieq(name, u->names[i]))
            return false;
    return true;
}

static bool any_token(struct sl_str tok, void *arg)
{
    (void)tok;
    (void)arg;
    return true;
}

bool sl__proxy_upgrade_allowed(struct sl_str value, char *const *names, size_t n)
{
    struct upgrade_names u = {names, n};

    return each_token(value, any_token, NULL) && !each_token(value, upgrade_unlisted, &u);
}

static bool conn_flag(struct sl_str tok, void *arg)
{
    unsigned *flags = arg;

    if (sl__proxy_ieq(tok, "close"))
        *flags |= SL__PH_CONN_CLOSE;
    else if (sl__proxy_ieq(tok, "keep-alive"))
        *flags |= SL__PH_CONN_KEEP;
    else if (sl__proxy_ieq(tok, "upgrade"))
        *flags |= SL__PH_CONN_UPGRADE;
    else
        *flags |= SL__PH_CONN_OTHER;
    return false;
}

/*
 * The line starting at b[i]: 1 with *eol at its CR, 0 when its end is not
 * in b[0..n) yet, -1 for a bare LF or a CR not followed by LF.
 */
static int next_line(const char *b, size_t n, size_t i, size_t *eol)
{
    for (size_t j = i; j < n; j++) {
        if (b[j] == '\n')
            return -1;
        if (b[j] == '\r') {
            if (j + 1 == n)
                return 0;
            if (b[j + 1] != '\n')
                return -1;
            *eol = j;
            return 1;
        }
    }
    return 0;
}

static int parse_version(const char *p, size_t len, int *minor)
{
    if (len != 8 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1'))
        return -1;
    *minor = p[7] - '0';
    return 0;
}

/* method SP origin-form SP HTTP/1.x */
static int request_line(const char *b, size_t len, struct sl__proxy_head *h)
{
    size_t i = 0, t;

    while (i < len && is_tchar((unsigned char)b[i]))
        i++;
    if (i == 0 || i == len || b[i] != ' ')
        return -1;
    h->method = (struct sl_str){b, i};
    t = ++i;
    while (i < len && (unsigned char)b[i] > 0x20 && (unsigned char)b[i] < 0x7f)
        i++;
    if (i == t || i == len || b[i] != ' ')
        return -1;
    h->target = (struct sl_str){b + t, i - t};
    if (b[t] != '/' && !(i - t == 1 && b[t] == '*'))
        return -1; /* origin-form only (and * for OPTIONS) */
    return parse_version(b + i + 1, len - i - 1, &h->minor);
}

/* HTTP/1.x SP 3DIGIT [SP reason] */
static int status_line(const char *b, size_t len, struct sl__proxy_head *h)
{
    if (len < 12 || parse_version(b, 8, &h->minor) != 0 || b[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++)
        if (b[i] < '0' || b[i] > '9')
            return -1;
    h->status = (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
    if (h->status < 100 || (len > 12 && b[12] != ' '))
        return -1;
    h->reason = len > 13 ? (struct sl_str){b + 13, len - 13} : (struct sl_str){b + len, 0};
    for (size_t i = 0; i < h->reason.len; i++)
        if ((unsigned char)h->reason.p[i] < 0x20 && h->reason.p[i] != '\t')
            return -1;
    return 0;
}

static int parse_cl(struct sl_str v, uint64_t *out)
{
    uint64_t n = 0;

    if (v.len == 0 || v.len > MAX_CL_DIGITS)
        return -1;
    for (size_t i = 0; i < v.len; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return -1;
        n = n * 10 + (uint64_t)(v.p[i] - '0');
    }
    *out = n;
    return 0;
}

/* What a header means for framing and the connection; NULL or why not. */
static const char *meaning(struct sl__proxy_head *h, struct sl_str name, struct sl_str v)
{
    uint64_t cl;

    if (sl__proxy_ieq(name, "content-length")) {
        if (parse_cl(v, &cl) != 0)
            return "Content-Length is not a number";
        if ((h->flags & SL__PH_CL) && cl != h->content_length)
            return "differing Content-Length headers";
        h->flags |= SL__PH_CL;
        h->content_length = cl;
    } else if (sl__proxy_ieq(name, "transfer-encoding")) {
        if (h->flags & SL__PH_CHUNKED)
            return "more than one Transfer-Encoding header";
        if (!sl__proxy_ieq(v, "chunked"))
            return "Transfer-Encoding other than chunked";
        h->flags |= SL__PH_CHUNKED;
    } else if (sl__proxy_ieq(name, "host")) {
        if (h->host.p != NULL)
            return "more than one Host header";
        h->host = v;
    } else if (sl__proxy_ieq(name, "connection")) {
        each_token(v, conn_flag, &h->flags);
    } else if (sl__proxy_ieq(name, "upgrade")) {
        h->flags |= SL__PH_UPGRADE;
        h->upgrade = v;
    } else if (sl__proxy_ieq(name, "expect")) {
        h->flags |= sl__proxy_ieq(v, "100-continue") ? SL__PH_EXPECT_100 : SL__PH_EXPECT_OTHER;
    }
    return NULL;
}

/* name ":" OWS value OWS, on b[0..len) */
static int header_line(struct sl__proxy_head *h, const char *b, size_t len, struct sl__proxy_err *e)
{
    size_t i = 0;
    struct sl_str name, v;
    const char *why;

    if (b[0] == ' ' || b[0] == '\t')
        return (int)fail(e, 400, "obs-fold (a header line starting with whitespace)");
    while (i < len && is_tchar((unsigned char)b[i]))
        i++;
    if (i < len && (b[i] == ' ' || b[i] == '\t'))
        return (int)fail(e, 400, "whitespace between a header name and its colon");
    if (i == 0 || i == len || b[i] != ':')
        return (int)fail(e, 400, "malformed header line");
    name = (struct sl_str){b, i};
    v = trim((struct sl_str){b + i + 1, len - i - 1});
    for (size_t j = 0; j < v.len; j++) {
        unsigned char ch = (unsigned char)v.p[j];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return (int)fail(e, 400, "control byte in a header value");
    }
    if (h->n_hdrs == SL__PROXY_MAX_HEADERS)
        return (int)fail(e, 431, "too many header lines");
    h->hdrs[h->n_hdrs++] = (struct sl__proxy_hdr){name, v};
    if ((why = meaning(h, name, v)) != NULL)
        return (int)fail(e, 400, why);
    return 0;
}

static ssize_t parse(const char *b, size_t n, size_t max_head, bool request,
                     struct sl__proxy_head *h, struct sl__proxy_err *e)
{
    size_t i = 0, eol;
    int r;

    h->flags = 0;
    h->n_hdrs = 0;
    h->host = h->upgrade = (struct sl_str){NULL, 0};
    if (max_head > SL__PROXY_MAX_HEAD)
        max_head = SL__PROXY_MAX_HEAD;
    for (bool first = true;; first = false) {
        r = next_line(b, n < max_head ? n : max_head, i, &eol);
        if (r < 0)
            return fail(e, 400, "a line not ended by CRLF (bare LF or stray CR)");
        if (r == 0)
            return n >= max_head ? fail(e, 431, "head too large") : -2;
        if (first) {
            if ((request ? request_line : status_line)(b, eol, h) != 0)
                return fail(e, 400, request ? "malformed request line" : "malformed status line");
        } else if (eol == i) {
            break; /* the blank line */
        } else if (header_line(h, b + i, eol - i, e) != 0) {
            return -1;
        }
        i = eol + 2;
    }
    if ((h->flags & SL__PH_CL) && (h->flags & SL__PH_CHUNKED))
        return fail(e, 400, "both Content-Length and Transfer-Encoding");
    if (request && h->minor == 1 && h->host.p == NULL)
        return fail(e, 400, "no Host header");
    if (request && (h->flags & SL__PH_EXPECT_OTHER))
        return fail(e, 417, "an expectation other than 100-continue");
    return (ssize_t)(eol + 2);
}

ssize_t sl__proxy_parse_request(const char *b, size_t n, size_t max_head, struct sl__proxy_head *h,
                                struct sl__proxy_err *e)
{
    return parse(b, n, max_head, true, h, e);
}

ssize_t sl__proxy_parse_response(const char *b, size_t n, size_t max_head, struct sl__proxy_head *h,
                                 struct sl__proxy_err *e)
{
    return parse(b, n, max_head, false, h, e);
}
