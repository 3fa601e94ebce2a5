/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_http1.c - libFuzzer driver for HTTP/1.1 request framing: the input is
 * a byte stream on one connection, framed request after request as sluiced
 * does: sl__h1_frame() over reads of a few bytes at a time (as a slow
 * client's arrive), then sl__h1_parse() once on the complete request. A
 * taken request must lie inside the input and keep the body cap; a
 * refusal must carry its status; and framing in pieces must end where one
 * whole read ends; every header of a taken
 * request lies inside it. It does not route requests.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http1_parse.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

static char body[1024];

/* Frame p[0..size) as reads of `step` bytes; the result of the last call. */
static ssize_t frame_in_pieces(const char *p, size_t size, size_t step, struct sl__h1_status *st)
{
    struct sl__h1_framing f;
    ssize_t r = -2;

    memset(&f, 0, sizeof(f));
    for (size_t have = step < size ? step : size;; have = have + step < size ? have + step : size) {
        r = sl__h1_frame(p, have, sizeof(body), &f, st);
        if (r != -2 || have == size)
            return r;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    size_t step = size > 0 ? (size_t)data[0] % 13 + 1 : 1;
    struct sl__h1_framing whole;
    struct sl__h1_status st, st2;
    struct sl__h1_req r;
    struct sl_str hn, hv;
    ssize_t n = 0;

    while (size > 0) {
        memset(&whole, 0, sizeof(whole));
        n = sl__h1_frame(p, size, sizeof(body), &whole, &st);
        CHECK(frame_in_pieces(p, size, step, &st2) == n);
        if (n <= 0)
            break;
        CHECK((size_t)n <= size);
        {
            /* the server's parse (the head's check taken from the
             * framing) must equal the parse from scratch */
            static char body2[sizeof(body)];
            struct sl__h1_req r2;
            struct sl__h1_status st3;
            ssize_t n2 = sl__h1_parse_framed(p, (size_t)n, &whole, body2, sizeof(body2), &r2, &st3);
            n = sl__h1_parse(p, (size_t)n, body, sizeof(body), &r, &st);
            CHECK(n2 == n);
            CHECK(n <= 0 ||
                  (r2.method == r.method && r2.keep_alive == r.keep_alive &&
                   r2.path.p == r.path.p && r2.path.len == r.path.len &&
                   r2.query.len == r.query.len && r2.headers.p == r.headers.p &&
                   r2.headers.len == r.headers.len && r2.authorization.len == r.authorization.len &&
                   r2.body.len == r.body.len && memcmp(body2, body, r.body.len) == 0));
        }
        if (n <= 0)
            break;
        CHECK(r.body.len <= sizeof(body));
        CHECK(r.path.p >= p && r.path.p + r.path.len <= p + n);
        for (size_t at = 0; (at = sl__h1_header_next(&r, at, &hn, &hv)) != 0;)
            CHECK(hn.p >= p && hn.len > 0 && hv.p + hv.len <= p + n);
        p += n;
        size -= (size_t)n;
    }
    CHECK(size == 0 || n == -2 || (n == -1 && st.why != NULL && st.status >= 400));
    return 0;
}
