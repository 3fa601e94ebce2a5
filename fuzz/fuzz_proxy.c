/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_proxy.c - libFuzzer driver for the proxy's request handling: the
 * input is parsed as a request head (and as a response head); a head
 * taken is rewritten for the other side, and the rewrite must parse again
 * with the same framing; the bytes after it are decoded as a chunked body
 * whole and in small pieces, which must agree. It opens no connection.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_int.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

/* The one piece of the core the rewriter needs (conn.c's, without libuv). */
void sl__buf_append(struct sl__buf *b, const void *p, size_t len)
{
    if (b->cap - b->len < len) {
        b->cap = (b->len + len) * 2;
        b->p = realloc(b->p, b->cap);
        CHECK(b->p != NULL);
    }
    memcpy(b->p + b->len, p, len);
    b->len += len;
}

static struct sl__proxy_head h, again;
static struct sl__buf out;
static char data1[1 << 16], data2[1 << 16];

/* Decode a chunked body in pieces of `cut` bytes: data length, or -1. */
static ssize_t dechunk(const char *p, size_t n, size_t cut, char *dst)
{
    struct sl__proxy_chunk st;
    size_t off = 0, len = 0;

    sl__proxy_chunk_init(&st);
    while (off < n && !sl__proxy_chunk_done(&st)) {
        const char *d;
        size_t dl, piece = n - off < cut ? n - off : cut;
        ssize_t k = sl__proxy_chunk_step(&st, p + off, piece, &d, &dl);
        if (k < 0)
            return -1;
        CHECK((size_t)k <= piece && dl <= (size_t)k && (dl == 0 || d >= p + off));
        if (dl > 0)
            memcpy(dst + len, d, dl);
        len += dl;
        off += (size_t)k;
    }
    return (ssize_t)len;
}

static void request(const char *p, size_t n)
{
    struct sl__proxy_err e;
    struct sl__proxy_fwd f = {.client = "192.0.2.1", .via = "sluice", .host = "up:80"};
    ssize_t r = sl__proxy_parse_request(p, n, 16384, &h, &e);

    CHECK(r == -2 || (r == -1 && e.status >= 400 && e.why != NULL) || (r > 0 && (size_t)r <= n));
    if (r <= 0)
        return;
    f.framing = (h.flags & SL__PH_CHUNKED) ? SL__PF_CHUNKED
                : (h.flags & SL__PH_CL)    ? SL__PF_LENGTH
                                           : SL__PF_NONE;
    f.length = h.content_length;
    f.upgrade = (h.flags & SL__PH_UPGRADE) && (h.flags & SL__PH_CONN_UPGRADE);
    out.len = 0;
    sl__proxy_req_head(&out, &h, &f);
    CHECK(sl__proxy_parse_request(out.p, out.len, 1 << 20, &again, &e) == (ssize_t)out.len);
    CHECK((again.flags & (SL__PH_CL | SL__PH_CHUNKED)) == (h.flags & (SL__PH_CL | SL__PH_CHUNKED)));
    CHECK(again.content_length == h.content_length || !(h.flags & SL__PH_CL));
    if (h.flags & SL__PH_CHUNKED) {
        size_t rest = n - (size_t)r < sizeof(data1) ? n - (size_t)r : sizeof(data1);
        ssize_t a = dechunk(p + r, rest, rest, data1), b = dechunk(p + r, rest, 3, data2);
        CHECK(a == b && (a < 0 || memcmp(data1, data2, (size_t)a) == 0));
    }
}

static void response(const char *p, size_t n)
{
    struct sl__proxy_err e;
    struct sl__proxy_rfwd f = {.via = "sluice", .framing = SL__PF_CHUNKED};
    ssize_t r = sl__proxy_parse_response(p, n, 16384, &h, &e);

    if (r <= 0)
        return;
    out.len = 0;
    sl__proxy_resp_head(&out, &h, &f);
    CHECK(sl__proxy_parse_response(out.p, out.len, 1 << 20, &again, &e) == (ssize_t)out.len);
    CHECK(again.status == h.status && (again.flags & SL__PH_CHUNKED));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    request((const char *)data, size);
    response((const char *)data, size);
    return 0;
}
