/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_proxy_parse.c - the proxy's strict head parser and chunked decoder:
 * a table of request and response heads with what each must give (its
 * length, or the refusal and its status), including every request
 * smuggling shape; and chunked bodies decoded whole, byte by byte and in
 * random cuts, which must give the same data; and which Upgrade values a
 * route's list lets through (h2c never).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy_chunk.h"
#include "proxy_parse.h"

struct head_case {
    const char *text;
    int want; /* 0: parsed whole; -2: incomplete; else the refusal status */
};

static const struct head_case requests[] = {
    {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
    {"GET / HTTP/1.0\r\n\r\n", 0},
    {"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 0},
    {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 0},
    {"GET / HTTP/1.1\r\nHost: a\r\n", -2},
    {"GET / HTTP/1.1\r\nHost: a\r", -2},
    {"GET / HTTP/1.1\nHost: a\n\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX : b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX\t: b\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9999999999999999999\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: chunked\r\n\r\n",
     400},
    {"GET / HTTP/1.1\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
    {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 400},
    {"GET / HTTP/0.9\r\nHost: a\r\n\r\n", 400},
    {"GET /\r\n\r\n", 400}, /* HTTP/0.9's request line */
    {"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n", 417},
};

static void test_request_heads(void **state)
{
    static struct sl__proxy_head h;
    struct sl__proxy_err e;

    for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
        const char *t = requests[i].text;
        ssize_t r = sl__proxy_parse_request(t, strlen(t), 16384, &h, &e);
        if (requests[i].want == 0)
            assert_int_equal(r, (ssize_t)strlen(t));
        else if (requests[i].want == -2)
            assert_int_equal(r, -2);
        else if (r != -1 || e.status != requests[i].want)
            fail_msg("case %zu (%s): got %zd status %d", i, t, r, r == -1 ? e.status : 0);
    }
}

static void test_request_fields(void **state)
{
    static struct sl__proxy_head h;
    struct sl__proxy_err e;
    const char *t = "PUT /a?b HTTP/1.1\r\nHost: ex:81\r\nContent-Length: 12\r\n"
                    "Connection: keep-alive, Upgrade, X-Drop\r\nUpgrade: websocket\r\n"
                    "Expect: 100-Continue\r\nX-Pad:   v  \r\n\r\nbody";

    assert_int_equal(sl__proxy_parse_request(t, strlen(t), 16384, &h, &e), strlen(t) - 4);
    assert_true(sl__proxy_ieq(h.method, "put"));
    assert_int_equal(h.target.len, 4);
    assert_int_equal(h.minor, 1);
    assert_int_equal(h.content_length, 12);
    assert_int_equal(h.flags & (SL__PH_CL | SL__PH_CONN_KEEP | SL__PH_CONN_UPGRADE |
                                SL__PH_CONN_OTHER | SL__PH_UPGRADE | SL__PH_EXPECT_100),
                     SL__PH_CL | SL__PH_CONN_KEEP | SL__PH_CONN_UPGRADE | SL__PH_CONN_OTHER |
                         SL__PH_UPGRADE | SL__PH_EXPECT_100);
    assert_true(sl__proxy_ieq(h.host, "ex:81"));
    assert_true(sl__proxy_ieq(h.hdrs[h.n_hdrs - 1].value, "v"));
    assert_true(sl__proxy_conn_lists(h.hdrs[2].value, (struct sl_str){"x-drop", 6}));
    assert_false(sl__proxy_conn_lists(h.hdrs[2].value, (struct sl_str){"x-dro", 5}));
}

static void test_head_too_large(void **state)
{
    static struct sl__proxy_head h;
    static char big[2000];
    struct sl__proxy_err e;

    memset(big, 'a', sizeof(big));
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    assert_int_equal(sl__proxy_parse_request(big, sizeof(big), 1000, &h, &e), -1);
    assert_int_equal(e.status, 431);
    assert_int_equal(sl__proxy_parse_request(big, 999, 1000, &h, &e), -2);
}

static const struct head_case responses[] = {
    {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", 0},
    {"HTTP/1.1 204\r\n\r\n", 0},
    {"HTTP/1.0 200 OK\r\n\r\n", 0},
    {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
    {"HTTP/1.1 200 OK\nContent-Length: 2\n\n", 400},
    {"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", 400},
    {"HTTP/1.1 2000 OK\r\n\r\n", 400},
    {"HTTP/1.1 099 OK\r\n\r\n", 400},
    {"HELLO\r\n\r\n", 400},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
};

static void test_response_heads(void **state)
{
    static struct sl__proxy_head h;
    struct sl__proxy_err e;

    for (size_t i = 0; i < sizeof(responses) / sizeof(responses[0]); i++) {
        const char *t = responses[i].text;
        ssize_t r = sl__proxy_parse_response(t, strlen(t), 16384, &h, &e);
        if (responses[i].want == 0)
            assert_int_equal(r, (ssize_t)strlen(t));
        else if (r != -1 || e.status != responses[i].want)
            fail_msg("case %zu (%s): got %zd", i, t, r);
    }
}

/* Decode `t` fed in pieces of `cut` bytes (0: random); the data, or
 * "ERROR", in out. Returns the bytes taken when done. */
static size_t decode(const char *t, size_t n, size_t cut, char *out, size_t cap)
{
    struct sl__proxy_chunk st;
    size_t off = 0, len = 0;

    sl__proxy_chunk_init(&st);
    while (off < n && !sl__proxy_chunk_done(&st)) {
        size_t piece = cut ? cut : 1 + (size_t)rand() % 7;
        const char *d;
        size_t dl;
        if (piece > n - off)
            piece = n - off;
        ssize_t k = sl__proxy_chunk_step(&st, t + off, piece, &d, &dl);
        if (k < 0) {
            strcpy(out, "ERROR");
            return 0;
        }
        assert_true(dl <= len + dl && len + dl < cap);
        if (dl > 0)
            memcpy(out + len, d, dl);
        len += dl;
        off += (size_t)k;
    }
    out[len] = '\0';
    return sl__proxy_chunk_done(&st) ? off : 0;
}

static void test_chunked(void **state)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"5\r\nhello\r\n0\r\n\r\n", "hello"},
        {"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n", "hello world"},
        {"A\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
        {"zz\r\nhello\r\n0\r\n\r\n", "ERROR"},
        {"5 \r\nhello\r\n0\r\n\r\n", "ERROR"},
        {"\r\nhello\r\n0\r\n\r\n", "ERROR"},
        {"5\nhello\r\n0\r\n\r\n", "ERROR"},
        {"5\r\nhelloX\r\n0\r\n\r\n", "ERROR"},
        {"1000000000000000\r\n", "ERROR"},
        {"0\r\nX: a\r\n b\r\n\r\n", "ERROR"},
        {"0\r\n\n", "ERROR"},
    };
    char out[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *in = cases[i].in;
        for (size_t cut = 0; cut <= 3; cut++) {
            size_t took = decode(in, strlen(in), cut, out, sizeof(out));
            if (strcmp(out, cases[i].want) != 0)
                fail_msg("case %zu cut %zu: got %s", i, cut, out);
            if (strcmp(cases[i].want, "ERROR") != 0)
                assert_int_equal(took, strlen(in));
        }
    }
}

static void test_chunked_stops_at_the_end(void **state)
{
    const char *t = "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    char out[16];

    assert_int_equal(decode(t, strlen(t), 100, out, sizeof(out)), 13);
    assert_string_equal(out, "abc");
}

static struct sl_str S(const char *s) {
    return (struct sl_str){s, strlen(s)};
}

/* Which Upgrade values a route's `upgrades:` lets through. */
static void
test_upgrade_allowed(void **state)
{
    char ws[] = "websocket", foo[] = "foo", h2c[] = "h2c";
    char *const route[] = {ws, foo}, *const with_h2c[] = {ws, h2c};

    (void)state;
    assert_true(sl__proxy_upgrade_allowed(S("websocket"), route, 2));
    assert_true(sl__proxy_upgrade_allowed(S("WebSocket"), route, 2));
    assert_true(sl__proxy_upgrade_allowed(S("foo/2, websocket"), route, 2));
    assert_false(sl__proxy_upgrade_allowed(S("websocket"), route, 0)); /* upgrades: [] */
    assert_false(sl__proxy_upgrade_allowed(S("h2c"), route, 2));
    assert_false(sl__proxy_upgrade_allowed(S("websocket, h2c"), route, 2)); /* one unlisted */
    assert_false(sl__proxy_upgrade_allowed(S("H2C"), with_h2c, 2));         /* h2c never */
    assert_false(sl__proxy_upgrade_allowed(S("h2c/1"), with_h2c, 2));
    assert_false(sl__proxy_upgrade_allowed(S("HTTP/2.0"), route, 2));
    assert_false(sl__proxy_upgrade_allowed(S("websockets"), route, 2));
    assert_false(sl__proxy_upgrade_allowed(S(""), route, 2));
    assert_false(sl__proxy_upgrade_allowed(S(" , "), route, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_heads),   cmocka_unit_test(test_request_fields),
        cmocka_unit_test(test_head_too_large),  cmocka_unit_test(test_response_heads),
        cmocka_unit_test(test_chunked),         cmocka_unit_test(test_chunked_stops_at_the_end),
        cmocka_unit_test(test_upgrade_allowed),
    };
    srand(7);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
