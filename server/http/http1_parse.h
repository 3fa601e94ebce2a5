/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http1_parse.h - framing of one HTTP/1.1 request (internal), separate from
 * the connection so that it can be tested and fuzzed on its own.
 */
#ifndef SL_SERVER_HTTP1_PARSE_H
#define SL_SERVER_HTTP1_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http1.h"
#include "buf.h"

/* Why a request was refused, or what an incomplete one asks for. */
struct sl__h1_status {
    int status;           /* -1 result: 400, 413 or 431 */
    const char *why;      /* -1 result: a static sentence for the body */
    bool expect_continue; /* -2 result: the client waits for 100 Continue */
};

/*
 * Frame the request at b[0..n). Returns the bytes it takes (> 0) with `r`
 * filled (slices into b and body; r->start_ns left 0), -2 when it is not
 * complete yet, or -1 when it must be refused (st->status and st->why). The
 * de-chunked body goes into body[0..max_body); more is 413. A head longer
 * than SL__H1_MAX_HEAD is 431.
 */
ssize_t sl__h1_parse(const char *b, size_t n, char *body, size_t max_body, struct sl__h1_req *r,
                     struct sl__h1_status *st);

/*
 * Where the framing of a request that is still arriving stands, so that
 * each byte is looked at once whatever the reads it comes in: the end of
 * the head is searched only in new bytes, the head is parsed once, a
 * Content-Length body is waited for by its length, and a chunked body's
 * chunk headers are read once each while their data is skipped. Zeroed:
 * nothing seen yet. `scanned` adds up the bytes looked at (the metrics).
 */
struct sl__h1_framing {
    size_t searched;  /* bytes searched for the end of the head so far */
    size_t head;      /* the head's length, 0 until its end is found */
    size_t need;      /* the whole request's length once known, 0 before */
    bool chunked;     /* the body is chunked: `at` walks its chunk headers */
    bool in_trailers; /* past the last chunk: `at` walks the trailer lines */
    size_t at;        /* offset of the next chunk header (or trailer line) */
    size_t body;      /* chunk data bytes so far (bounded by max_body) */
    bool expect_continue;
    uint64_t scanned;
    /* The strict check of the head is done (frame_head): where it found
     * the header lines and Authorization, as offsets from the request's
     * first byte (the buffer may move between reads; SIZE_MAX: none), so that
     * sl__h1_parse_framed() does not read the head strictly again. */
    bool checked;
    size_t hdr_off, hdr_len, auth_off, auth_len;
};

/*
 * Find where the request at b[0..n) ends, going on from `f`: > 0 its
 * length (call sl__h1_parse() on exactly that many bytes, then zero f for
 * the next request), -2 more bytes are needed (st->expect_continue says
 * whether the client waits for 100 Continue), -1 refused (st->status and
 * st->why). Bodies above max_body are refused as soon as their size shows.
 */
ssize_t sl__h1_frame(const char *b, size_t n, size_t max_body, struct sl__h1_framing *f,
                     struct sl__h1_status *st);

/*
 * sl__h1_parse() for a request sl__h1_frame() has just framed with `f`
 * (n: what it returned): the end of the head and its strict check are
 * taken from `f` instead of being found again. Same results.
 */
ssize_t sl__h1_parse_framed(const char *b, size_t n, const struct sl__h1_framing *f, char *body,
                            size_t max_body, struct sl__h1_req *r, struct sl__h1_status *st);

/*
 * The strict reading of a head (http1_head.c), before http-parser sees it.
 * sl__h1_check_line: the request line b[0..n) without its CRLF.
 * sl__h1_check_head: the complete head b[0..head) (the blank line
 * included); sets r->headers and r->authorization and says whether the
 * client waits for 100 Continue. Both return 0, or -1 with st (a 400).
 */
int sl__h1_check_line(const char *b, size_t n, struct sl__h1_status *st);
int sl__h1_check_head(const char *b, size_t head, struct sl__h1_req *r, bool *expect_continue,
                      struct sl__h1_status *st);

#endif /* SL_SERVER_HTTP1_PARSE_H */
