/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http1.h - HTTP/1.1 for sluiced (internal): one parsed request as the
 * endpoints see it, and how they answer. The protocol itself (sniffing,
 * framing with Debian's http-parser, keep-alive, pipelining, limits) is in
 * http1.c; the endpoints are in http_api.c.
 *
 * Ownership: every slice of a struct sl__h1_req points into the connection's
 * input buffer or a per-thread scratch buffer and is valid only during the
 * handler call. Threads: everything runs on the connection's worker thread.
 */
#ifndef SL_SERVER_HTTP1_H
#define SL_SERVER_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct sl__conn;
struct sl__buf;

/* The protocol (http1.c), for the server's registration. */
struct sl__proto;
extern const struct sl__proto sl__proto_http1;

/* Longest request head (request line and headers); beyond it: 431. */
#define SL__H1_MAX_HEAD 16384

struct sl__h1_req {
    int method;                  /* enum http_method of http_parser.h */
    struct sl_str path;          /* without the query, as sent (not decoded) */
    struct sl_str query;         /* after '?', not decoded; len 0 when absent */
    struct sl_str body;          /* de-chunked */
    struct sl_str authorization; /* the Authorization header, len 0 if absent */
    struct sl_str headers;       /* the header lines, each with its CRLF (sl__h1_header) */
    bool keep_alive;             /* the connection stays open after the answer */
    int64_t start_ns;            /* CLOCK_MONOTONIC when the request was parsed */
};

/* The value of header `name` (any case) in `r`, trimmed, and true; or an
 * empty value and false. The first one when a header repeats (the framing
 * refuses a repeated Host, Content-Length, Transfer-Encoding,
 * Authorization, Content-Type or Origin). */
bool sl__h1_header(const struct sl__h1_req *r, const char *name, struct sl_str *value);

/* Walk r's headers: from offset `at` (0 first), the next header's name and
 * trimmed value, and the offset after it; 0 when there is none. */
size_t sl__h1_header_next(const struct sl__h1_req *r, size_t at, struct sl_str *name,
                          struct sl_str *value);

/* Answer a request: status, extra header lines (each ending in CRLF, may be
 * NULL), a JSON or text body. Content-Type is application/json when the
 * body starts with '{', text/plain otherwise (Prometheus text for
 * /metrics is text/plain too). Writes at once, or into slot `slot` when it
 * is >= 0 (an answer that came back from the store). */
void sl__h1_respond(struct sl__conn *c, int64_t slot, bool keep_alive, int status,
                    const char *headers, size_t headers_len, const char *body, size_t body_len);

/* The bytes sl__h1_respond() would send, in a per-thread buffer valid until
 * the next call on this thread (for answers held back, e.g. a delay). */
const struct sl__buf *sl__h1_build(bool keep_alive, int status, const char *headers,
                                   size_t headers_len, const char *body, size_t body_len);

/* The endpoint table's entry point (http_api.c): route `r` and answer it,
 * now or through a reply slot. */
void sl__http_api_dispatch(struct sl__conn *c, const struct sl__h1_req *r);

#endif /* SL_SERVER_HTTP1_H */
