/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_parse.h - strict parsing of one HTTP/1.1 message head (a client's
 * request or an upstream's response) for the proxy (internal).
 *
 * Strict because a proxy that reads a message differently from the server
 * behind it can be made to smuggle a request past it. Refused, with the
 * reason: a bare LF, a CR not before LF, obs-fold (a line starting with
 * space or tab), whitespace or anything but a token before a colon,
 * control bytes in a value, Content-Length that is not digits or differs
 * between copies, Content-Length together with Transfer-Encoding, and any
 * Transfer-Encoding but a single `chunked`.
 *
 * Pure: no allocation, no I/O; the head's slices point into the caller's
 * bytes and live as long as they do. It does not parse bodies
 * (proxy_chunk.h) or rewrite heads (proxy_head.c, declared in proxy_int.h).
 */
#ifndef SL_PROXY_PARSE_H
#define SL_PROXY_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sluice.h"

/* Header lines kept per head; more is refused (431 / 502). */
#define SL__PROXY_MAX_HEADERS 100
/* The longest head parsed, whatever the listener allows. */
#define SL__PROXY_MAX_HEAD 65536

struct sl__proxy_hdr {
    struct sl_str name, value; /* value without surrounding whitespace */
};

enum sl__proxy_head_flag {
    SL__PH_CL = 1u << 0,           /* Content-Length present (content_length) */
    SL__PH_CHUNKED = 1u << 1,      /* Transfer-Encoding: chunked */
    SL__PH_CONN_CLOSE = 1u << 2,   /* Connection: close */
    SL__PH_CONN_KEEP = 1u << 3,    /* Connection: keep-alive */
    SL__PH_CONN_UPGRADE = 1u << 4, /* Connection: upgrade */
    SL__PH_UPGRADE = 1u << 5,      /* an Upgrade header (upgrade) */
    SL__PH_EXPECT_100 = 1u << 6,   /* Expect: 100-continue */
    SL__PH_EXPECT_OTHER = 1u << 7, /* an Expect this proxy cannot meet (417) */
    SL__PH_CONN_OTHER = 1u << 8,   /* Connection names other headers to drop */
};

struct sl__proxy_head {
    struct sl_str method, target; /* a request's */
    int status;                   /* a response's, 100..999 */
    struct sl_str reason;         /* a response's, may be empty */
    int minor;                    /* HTTP/1.minor: 0 or 1 */
    unsigned flags;               /* enum sl__proxy_head_flag */
    uint64_t content_length;      /* bytes, with SL__PH_CL */
    struct sl_str host;           /* the request's Host, len 0 if absent */
    struct sl_str upgrade;        /* the Upgrade header's value */
    unsigned n_hdrs;
    struct sl__proxy_hdr hdrs[SL__PROXY_MAX_HEADERS];
};

/* Why a head was refused: the status to answer (400, 417, 431, 501 for a
 * request; a response is refused with 502 whatever this says) and a
 * static sentence. */
struct sl__proxy_err {
    int status;
    const char *why;
};

/*
 * Parse the request head at b[0..n), at most max_head bytes. Returns the
 * head's length in bytes (through its blank line) with `h` filled, -2 when
 * the head is not complete yet (and may still be valid), or -1 with `e`
 * set. A head longer than max_head is -1 with status 431.
 */
ssize_t sl__proxy_parse_request(const char *b, size_t n, size_t max_head, struct sl__proxy_head *h,
                                struct sl__proxy_err *e);

/* The same for a response head (status line instead of request line). */
ssize_t sl__proxy_parse_response(const char *b, size_t n, size_t max_head, struct sl__proxy_head *h,
                                 struct sl__proxy_err *e);

/* Case-insensitive comparison of a slice with a lower-case literal. */
bool sl__proxy_ieq(struct sl_str s, const char *lower);

/* Whether `name` is listed in a Connection header value (comma-separated
 * tokens, case-insensitive). */
bool sl__proxy_conn_lists(struct sl_str conn_value, struct sl_str name);

/* Whether an Upgrade header value offers at least one protocol and only
 * protocols among names[0..n) (lower case; a "name/version" token is
 * compared by its name, case-insensitively). h2c is never allowed: its
 * tunnel would carry HTTP/2 requests past the proxy's routes and limits. */
bool sl__proxy_upgrade_allowed(struct sl_str value, char *const *names, size_t n);

#endif /* SL_PROXY_PARSE_H */
