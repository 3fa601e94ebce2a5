/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_http_h1parse.c - framing of one HTTP/1.1 request: complete and
 * incomplete heads and bodies, pipelined requests taken one at a time,
 * chunked bodies, keep-alive rules, Expect: 100-continue, the limits (413,
 * 431) and malformed input (400).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <http_parser.h>

#include "http1_parse.h"

static char body[64];
static struct sl__h1_req req;
static struct sl__h1_status st;

static ssize_t parse(const char *text)
{
    return sl__h1_parse(text, strlen(text), body, sizeof(body), &req, &st);
}

/* Frame, then parse as the server does (the head's strict check taken
 * from the framing): the same as the parse from scratch. */
static void assert_framed_same(const char *t)
{
    struct sl__h1_framing f;
    struct sl__h1_req a;
    struct sl__h1_status sa;
    static char b2[sizeof(body)];
    ssize_t n, m;

    memset(&f, 0, sizeof(f));
    n = sl__h1_frame(t, strlen(t), sizeof(body), &f, &sa);
    assert_true(n > 0);
    m = sl__h1_parse_framed(t, (size_t)n, &f, b2, sizeof(b2), &a, &sa);
    assert_int_equal(m, sl__h1_parse(t, (size_t)n, body, sizeof(body), &req, &st));
    assert_int_equal(a.method, req.method);
    assert_true(a.path.p == req.path.p && a.path.len == req.path.len);
    assert_true(a.query.p == req.query.p && a.query.len == req.query.len);
    assert_true(a.headers.p == req.headers.p && a.headers.len == req.headers.len);
    assert_true(a.authorization.p == req.authorization.p &&
                a.authorization.len == req.authorization.len);
    assert_int_equal(a.body.len, req.body.len);
    assert_memory_equal(b2, body, req.body.len);
    assert_int_equal(a.keep_alive, req.keep_alive);
}

static void test_parse_framed_same(void **s)
{
    assert_framed_same("GET /v1/auth?domain=api&user=a HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer t0k\r\n\r\n");
    assert_framed_same("POST /v1/check HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
    assert_framed_same("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "3\r\nabc\r\n0\r\n\r\n");
    assert_framed_same("GET / HTTP/1.0\r\n\r\n");
    assert_framed_same("GET /h HTTP/1.1\r\nConnection: close\r\nAuthorization: x\r\n\r\n");
    (void)s;
}

static void assert_str(struct sl_str s, const char *want)
{
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.p, want, s.len);
}

static void test_get_with_query(void **s)
{
    const char *t = "GET /v1/auth?domain=api&user=a HTTP/1.1\r\nHost: x\r\n"
                    "Authorization: Bearer t0k\r\n\r\n";
    assert_int_equal(parse(t), strlen(t));
    assert_int_equal(req.method, HTTP_GET);
    assert_str(req.path, "/v1/auth");
    assert_str(req.query, "domain=api&user=a");
    assert_str(req.authorization, "Bearer t0k");
    assert_int_equal(req.body.len, 0);
    assert_true(req.keep_alive);
    (void)s;
}

static void test_post_body_and_pipelining(void **s)
{
    const char *first = "POST /v1/check HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
    char two[256];

    snprintf(two, sizeof(two), "%sGET /healthz HTTP/1.1\r\n\r\n", first);
    assert_int_equal(parse(two), strlen(first)); /* only the first request */
    assert_int_equal(req.method, HTTP_POST);
    assert_str(req.body, "hello");
    assert_int_equal(parse(two + strlen(first)), strlen(two) - strlen(first));
    assert_str(req.path, "/healthz");
    (void)s;
}

static void test_incomplete(void **s)
{
    assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost: x\r\n"), -2);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"), -2);
    assert_false(st.expect_continue);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"),
                     -2);
    assert_true(st.expect_continue);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nExpect: other\r\nContent-Length: 3\r\n\r\n"), -2);
    assert_false(st.expect_continue);
    (void)s;
}

static void test_chunked(void **s)
{
    const char *t = "POST /v1/check HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    assert_int_equal(parse(t), strlen(t));
    assert_str(req.body, "abcde");
    assert_int_equal(parse("POST /v1/check HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "3\r\nabc\r\n"),
                     -2);
    (void)s;
}

static void test_keep_alive_rules(void **s)
{
    assert_true(parse("GET / HTTP/1.0\r\n\r\n") > 0);
    assert_false(req.keep_alive);
    assert_true(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") > 0);
    assert_true(req.keep_alive);
    assert_true(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n") > 0);
    assert_false(req.keep_alive);
    (void)s;
}

static void test_limits(void **s)
{
    static char big[SL__H1_MAX_HEAD + 64];

    assert_int_equal(parse("POST /x HTTP/1.1\r\nContent-Length: 65\r\n\r\n"), -1);
    assert_int_equal(st.status, 413);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "41\r\n0123456789012345678901234567890123456789012345678901234567890123"
                           "4\r\n0\r\n\r\n"),
                     -1);
    assert_int_equal(st.status, 413);
    /* exactly the cap of body is fine */
    assert_true(parse("POST /x HTTP/1.1\r\nContent-Length: 64\r\n\r\n"
                      "0123456789012345678901234567890123456789012345678901234567890123") > 0);
    assert_int_equal(req.body.len, 64);

    memset(big, 'a', sizeof(big) - 1);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    assert_int_equal(sl__h1_parse(big, SL__H1_MAX_HEAD - 1, body, sizeof(body), &req, &st), -2);
    assert_int_equal(sl__h1_parse(big, SL__H1_MAX_HEAD, body, sizeof(body), &req, &st), -1);
    assert_int_equal(st.status, 431);
    (void)s;
}

static void test_malformed(void **s)
{
    static const char *const bad[] = {
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        "BREW /pot HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i]) != -1 || st.status != 400 || st.why == NULL)
            fail_msg("case %zu accepted: %s", i, bad[i]);
    }
    (void)s;
}

/* What a proxy in front may read otherwise is refused, each with a 400
 * that says why: the framing has one reading or none. */
static void test_one_reading_only(void **s)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"POST / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", "colon"},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n"
         "0\r\n\r\n",
         "appears twice"},
        {"POST / HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", "obs-fold"},
        {"POST / HTTP/1.1\r\nX-A: b\r\n\tc\r\n\r\n", "obs-fold"},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
         "other than chunked"},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
         "0\r\n\r\n",
         "both Content-Length and Transfer-Encoding"},
        {"POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello", "Content-Length"},
        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "appears twice"},
        {"GET / HTTP/1.1\r\nOrigin: a\r\norigin: b\r\n\r\n", "appears twice"},
        {"GET / HTTP/1.1\nHost: a\n\n", "CRLF"},
        {"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", "CRLF"},
        {"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", "CRLF"},
        {"GET / HTTP/1.1\r\nX: a\001b\r\n\r\n", "control bytes"},
        {"get / HTTP/1.1\r\n\r\n", "capitals"},
        {"Get / HTTP/1.1\r\n\r\n", "capitals"},
        {"GET / HTTP/2.0\r\n\r\n", "HTTP version"},
        {"GET / HTTP/1.2\r\n\r\n", "HTTP version"},
        {"GET / http/1.1\r\n\r\n", "HTTP version"},
        {"GET /\r\n\r\n", "request line"},
        {"GET  / HTTP/1.1\r\n\r\n", "request line"},
        {"GET / HTTP/1.1 \r\n\r\n", "HTTP version"},
        {"GET /a b HTTP/1.1\r\n\r\n", "HTTP version"},
        {"GET /\x7f HTTP/1.1\r\n\r\n", "request target"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i].text) != -1 || st.status != 400 || strstr(st.why, bad[i].why) == NULL)
            fail_msg("case %zu: %s -> %d %s", i, bad[i].text, st.status, st.why ? st.why : "");
    }
    /* what stays accepted: HTTP/1.0, tabs and obs-text in values, OWS trimmed */
    assert_true(parse("GET / HTTP/1.0\r\nX-A:\t v\xe9\tw \r\n\r\n") > 0);
    (void)s;
}

static void test_header_lookup(void **s)
{
    struct sl_str v, n;
    size_t at = 0, count = 0;

    assert_true(parse("GET / HTTP/1.1\r\nHost: a:1\r\nX-Sluice-Entry-user:  c&x \r\n"
                      "x-sluice-entry-path:/p\r\n\r\n") > 0);
    assert_true(sl__h1_header(&req, "HOST", &v));
    assert_str(v, "a:1");
    assert_true(sl__h1_header(&req, "x-sluice-entry-user", &v));
    assert_str(v, "c&x");
    assert_false(sl__h1_header(&req, "origin", &v));
    assert_int_equal(v.len, 0);
    while ((at = sl__h1_header_next(&req, at, &n, &v)) != 0)
        count++;
    assert_int_equal(count, 3);
    assert_str(n, "x-sluice-entry-path");
    assert_str(v, "/p");
    assert_true(parse("GET / HTTP/1.1\r\n\r\n") > 0);
    assert_int_equal(sl__h1_header_next(&req, 0, &n, &v), 0);
    (void)s;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_with_query),   cmocka_unit_test(test_post_body_and_pipelining),
        cmocka_unit_test(test_incomplete),       cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_keep_alive_rules), cmocka_unit_test(test_limits),
        cmocka_unit_test(test_malformed),        cmocka_unit_test(test_one_reading_only),
        cmocka_unit_test(test_header_lookup),    cmocka_unit_test(test_parse_framed_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
