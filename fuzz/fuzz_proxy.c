/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_proxy.c - libFuzzer driver for the proxy's request handling: the
 * input is parsed as a request head (and as a response head); a head
 * taken is rewritten for the other side, and the rewrite must parse again
 * with the same framing; the bytes after it are decoded as a chunked body
 * whole and in small pieces, which must agree. A request's client is
 * walked out of X-Forwarded-For and Forwarded behind proxies trusting
 * everything, and its descriptors built by every kind of action. It opens
 * no connection.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_addr.h"
#include "proxy_descr.h"
#include "proxy_int.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

/* The one piece of the core the rewriter needs (conn.c's, without libuv):
 * the growth behind conn.h's inline sl__buf_append. */
void sl__buf_grow(struct sl__buf *b, size_t len)
{
    b->cap = (b->len + len) * 2;
    b->p = realloc(b->p, b->cap);
    CHECK(b->p != NULL);
}

static struct sl__proxy_head h, again;
static struct sl__buf out;
static struct sl__proxy_descr descr;

static struct sl__proxy_hmatch matchers[] = {
    {.name = "x-tier", .kind = SL__PM_EXACT, .value = "free"},
    {.name = ":path", .kind = SL__PM_PREFIX, .value = "/A", .ignore_case = true},
    {.name = "x-b", .kind = SL__PM_CONTAINS, .value = "ab", .invert = true},
    {.name = "x-c", .kind = SL__PM_PRESENT, .present = false},
};
static struct sl__proxy_action actions[] = {
    {.kind = SL__PA_REMOTE_ADDRESS, .key = "remote_address"},
    {.kind = SL__PA_MASKED_REMOTE, .key = "m", .v4_bits = 20, .v6_bits = 61},
    {.kind = SL__PA_REQUEST_HEADERS, .key = "k", .header = "x-api-key", .skip_if_absent = true},
    {.kind = SL__PA_HEADER_VALUE_MATCH,
     .key = "t",
     .value = "v",
     .expect_match = true,
     .matchers = matchers,
     .n_matchers = 4},
    {.kind = SL__PA_PATH, .key = "path"},
    {.kind = SL__PA_METHOD, .key = "method"},
    {.kind = SL__PA_REQUEST_HEADERS, .key = "k", .header = ":authority"},
};
static struct sl__proxy_rate_limit rls[] = {{actions, 7}, {actions + 2, 2}, {actions + 5, 2}};
static const struct sl__proxy_limits lim = {.domain = "d", .rls = rls, .n_rls = 3};

/* The client behind proxies trusting everything (the whole walk), and the
 * descriptors of every kind of action. */
static void limiting(void)
{
    struct sl__proxy_cidr all[2];
    struct sl__proxy_ip peer, client;
    const char *why;
    char text[SL__PROXY_ADDR_TEXT];
    size_t nd;

    CHECK(sl__proxy_cidr_parse("0.0.0.0/0", &all[0], &why));
    CHECK(sl__proxy_cidr_parse("::/0", &all[1], &why));
    CHECK(sl__proxy_ip_parse("10.0.0.1", 8, &peer));
    for (int which = 0; which < 2; which++) {
        sl__proxy_client_ip(&peer, &h, (enum sl__proxy_client_header)which, all, 2, &client);
        CHECK(client.family == 4 || client.family == 6);
        CHECK(sl__proxy_ip_text(&client, client.family == 4 ? 32 : 128, text, sizeof(text)) > 0);
    }
    nd = sl__proxy_descr_build(&lim, &h, &client, &descr);
    CHECK(nd <= 3);
    for (size_t i = 0; i < nd; i++)
        CHECK(descr.d[i].n_entries >= 1 && descr.d[i].n_entries <= 7);
}
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
    ssize_t r = sl__proxy_parse_request(p, n, 16384, &h, &e), r2;

    CHECK(r == -2 || (r == -1 && e.status >= 400 && e.why != NULL) || (r > 0 && (size_t)r <= n));
    if (r <= 0)
        return;
    limiting();
    f.framing = (h.flags & SL__PH_CHUNKED) ? SL__PF_CHUNKED
                : (h.flags & SL__PH_CL)    ? SL__PF_LENGTH
                                           : SL__PF_NONE;
    f.length = h.content_length;
    f.upgrade = (h.flags & SL__PH_UPGRADE) && (h.flags & SL__PH_CONN_UPGRADE);
    out.len = 0;
    sl__proxy_req_head(&out, &h, &f);
    r2 = sl__proxy_parse_request(out.p, out.len, 1 << 20, &again, &e);
    /* the forwarding headers (4 lines at most) may take a head that had
     * nearly the most lines over the parser's cap */
    CHECK(r2 == (ssize_t)out.len || (h.n_hdrs > SL__PROXY_MAX_HEADERS - 4 && e.status == 431));
    if (r2 == (ssize_t)out.len) {
        CHECK((again.flags & (SL__PH_CL | SL__PH_CHUNKED)) ==
              (h.flags & (SL__PH_CL | SL__PH_CHUNKED)));
        CHECK(again.content_length == h.content_length || !(h.flags & SL__PH_CL));
    }
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
