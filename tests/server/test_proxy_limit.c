/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_proxy_limit.c - the proxy's limiting pieces that need no server:
 * addresses as forwarding headers write them, CIDR ranges and prefix
 * masks (an IPv6 /64 and an IPv4 /24), the client found behind trusted
 * proxies in X-Forwarded-For and Forwarded (spoofed entries on the left
 * ignored), the descriptors Envoy's actions build from a request head,
 * and the wait a denial's sentence names. Tables of cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy_addr.h"
#include "proxy_deny.h"
#include "proxy_descr.h"
#include "proxy_parse.h"

static struct sl__proxy_head head;
static struct sl__proxy_descr descr;

static const char *text_of(const struct sl__proxy_ip *ip, int bits)
{
    static char t[SL__PROXY_ADDR_TEXT];
    return sl__proxy_ip_text(ip, bits, t, sizeof(t)) > 0 ? t : "(none)";
}

static void parse_head(const char *req)
{
    struct sl__proxy_err e;
    assert_int_equal(sl__proxy_parse_request(req, strlen(req), 65536, &head, &e),
                     (ssize_t)strlen(req));
}

/* ------------------------------------------------------------ addresses */

static void test_ip_parse(void **state)
{
    static const struct {
        const char *in, *want; /* NULL: not an address */
    } cases[] = {
        {"192.0.2.1", "192.0.2.1"},
        {" 192.0.2.1\t", "192.0.2.1"},
        {"192.0.2.1:4711", "192.0.2.1"},
        {"2001:db8::1", "2001:db8::1"},
        {"[2001:db8::1]", "2001:db8::1"},
        {"[2001:db8::1]:443", "2001:db8::1"},
        {"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
        {"::ffff:10.1.2.3", "10.1.2.3"},
        {"unknown", NULL},
        {"_hidden", NULL},
        {"1.2.3", NULL},
        {"[::1", NULL},
        {"[::1]x", NULL},
        {"1.2.3.4:http", NULL},
        {"", NULL},
        {"fe80::1%eth0", NULL},
    };
    struct sl__proxy_ip ip;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool ok = sl__proxy_ip_parse(cases[i].in, strlen(cases[i].in), &ip);
        if (cases[i].want == NULL) {
            assert_false(ok);
            continue;
        }
        assert_true(ok);
        assert_string_equal(text_of(&ip, -1), cases[i].want);
    }
}

static void test_cidr(void **state)
{
    static const struct {
        const char *in, *want; /* NULL: refused */
    } cases[] = {
        {"10.0.0.0/8", "10.0.0.0/8"},
        {"10.1.2.3/8", "10.0.0.0/8"},
        {"192.0.2.7", "192.0.2.7/32"},
        {"0.0.0.0/0", "0.0.0.0/0"},
        {"2001:db8::/32", "2001:db8::/32"},
        {"2001:db8:1:2:3:4:5:6/64", "2001:db8:1:2::/64"},
        {"::1", "::1/128"},
        {"1.2.3.4/33", NULL},
        {"::/129", NULL},
        {"1.2.3.4/", NULL},
        {"1.2.3.4/x", NULL},
        {"1.2.3.4:80", NULL},
        {"[::1]", NULL},
        {"example.com", NULL},
        {"", NULL},
    };
    struct sl__proxy_cidr c;
    const char *why;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool ok = sl__proxy_cidr_parse(cases[i].in, &c, &why);
        if (cases[i].want == NULL) {
            assert_false(ok);
            assert_non_null(why);
            continue;
        }
        assert_true(ok);
        assert_string_equal(text_of(&c.ip, c.bits), cases[i].want);
    }
}

static void test_cidr_has_and_mask(void **state)
{
    struct sl__proxy_cidr set[2];
    struct sl__proxy_ip ip;
    const char *why;

    (void)state;
    assert_true(sl__proxy_cidr_parse("10.0.0.0/8", &set[0], &why));
    assert_true(sl__proxy_cidr_parse("2001:db8:aa::/48", &set[1], &why));
    assert_true(sl__proxy_ip_parse("10.255.0.1", 10, &ip));
    assert_true(sl__proxy_cidr_has(set, 2, &ip));
    assert_true(sl__proxy_ip_parse("11.0.0.1", 8, &ip));
    assert_false(sl__proxy_cidr_has(set, 2, &ip));
    assert_true(sl__proxy_ip_parse("2001:db8:aa:ffff::9", 19, &ip));
    assert_true(sl__proxy_cidr_has(set, 2, &ip));
    assert_true(sl__proxy_ip_parse("2001:db8:ab::9", 14, &ip));
    assert_false(sl__proxy_cidr_has(set, 2, &ip));
    assert_true(sl__proxy_ip_parse("::ffff:10.0.0.1", 15, &ip)); /* mapped: IPv4 */
    assert_true(sl__proxy_cidr_has(set, 2, &ip));
    /* an IPv6 client controls its /64: two addresses of one /64 mask alike */
    assert_true(sl__proxy_ip_parse("2001:db8:1:2:aaaa::1", 20, &ip));
    sl__proxy_ip_mask(&ip, 64);
    assert_string_equal(text_of(&ip, 64), "2001:db8:1:2::/64");
    assert_true(sl__proxy_ip_parse("2001:db8:1:2:ffff:ffff:ffff:ffff", 32, &ip));
    sl__proxy_ip_mask(&ip, 64);
    assert_string_equal(text_of(&ip, 64), "2001:db8:1:2::/64");
    assert_true(sl__proxy_ip_parse("2001:db8:1:3::1", 15, &ip));
    sl__proxy_ip_mask(&ip, 64);
    assert_string_equal(text_of(&ip, 64), "2001:db8:1:3::/64");
    assert_true(sl__proxy_ip_parse("2001:db8:1:2:aaaa::1", 20, &ip));
    sl__proxy_ip_mask(&ip, 61);
    assert_string_equal(text_of(&ip, 61), "2001:db8:1::/61");
    assert_true(sl__proxy_ip_parse("192.0.2.77", 10, &ip));
    sl__proxy_ip_mask(&ip, 24);
    assert_string_equal(text_of(&ip, 24), "192.0.2.0/24");
    sl__proxy_ip_mask(&ip, 0);
    assert_string_equal(text_of(&ip, 0), "0.0.0.0/0");
    assert_true(sl__proxy_ip_parse("192.0.2.77", 10, &ip));
    sl__proxy_ip_mask(&ip, 32);
    assert_string_equal(text_of(&ip, 32), "192.0.2.77/32");
}

/* ------------------------------------------------------------ the client */

struct client_case {
    const char *peer;
    const char *headers; /* header lines of the request */
    enum sl__proxy_client_header which;
    const char *want;
};

static const struct client_case clients[] = {
    /* an untrusted peer: its headers are not read */
    {"203.0.113.9", "X-Forwarded-For: 198.51.100.1\r\n", SL__PROXY_XFF, "203.0.113.9"},
    {"10.0.0.1", "", SL__PROXY_XFF, "10.0.0.1"},
    {"10.0.0.1", "X-Forwarded-For: 198.51.100.1\r\n", SL__PROXY_XFF, "198.51.100.1"},
    /* a spoofed entry on the left is not the client */
    {"10.0.0.1", "X-Forwarded-For: 6.6.6.6, 198.51.100.1\r\n", SL__PROXY_XFF, "198.51.100.1"},
    {"10.0.0.1", "X-Forwarded-For: 6.6.6.6, 198.51.100.1, 10.0.0.7\r\n", SL__PROXY_XFF,
     "198.51.100.1"},
    {"10.0.0.1", "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 198.51.100.1\r\n", SL__PROXY_XFF,
     "198.51.100.1"},
    /* every entry trusted: the left-most */
    {"10.0.0.1", "X-Forwarded-For: 10.0.0.3, 10.0.0.2\r\n", SL__PROXY_XFF, "10.0.0.3"},
    /* what is not an address ends the walk at the proxy that wrote it */
    {"10.0.0.1", "X-Forwarded-For: 198.51.100.1, junk\r\n", SL__PROXY_XFF, "10.0.0.1"},
    {"10.0.0.1", "X-Forwarded-For: 198.51.100.1, , 10.0.0.2\r\n", SL__PROXY_XFF, "198.51.100.1"},
    {"10.0.0.1", "X-Forwarded-For: 198.51.100.1:5555\r\n", SL__PROXY_XFF, "198.51.100.1"},
    /* the other header is not read */
    {"10.0.0.1", "Forwarded: for=198.51.100.1\r\n", SL__PROXY_XFF, "10.0.0.1"},
    {"10.0.0.1", "X-Forwarded-For: 198.51.100.1\r\n", SL__PROXY_FORWARDED, "10.0.0.1"},
    /* Forwarded, RFC 7239 */
    {"10.0.0.1", "Forwarded: for=192.0.2.60;proto=http;by=203.0.113.43\r\n", SL__PROXY_FORWARDED,
     "192.0.2.60"},
    {"10.0.0.1", "Forwarded: For=\"[2001:db8:cafe::17]:4711\"\r\n", SL__PROXY_FORWARDED,
     "2001:db8:cafe::17"},
    {"10.0.0.1", "Forwarded: for=6.6.6.6, for=198.51.100.2;proto=https, for=10.0.0.9\r\n",
     SL__PROXY_FORWARDED, "198.51.100.2"},
    {"10.0.0.1", "Forwarded: for=\"6.6.6.6, for=10.0.0.2\"\r\n", SL__PROXY_FORWARDED, "10.0.0.1"},
    {"10.0.0.1", "Forwarded: proto=http;for=198.51.100.3\r\n", SL__PROXY_FORWARDED, "198.51.100.3"},
    {"10.0.0.1", "Forwarded: for=unknown\r\n", SL__PROXY_FORWARDED, "10.0.0.1"},
    {"10.0.0.1", "Forwarded: for=_hidden, for=10.0.0.2\r\n", SL__PROXY_FORWARDED, "10.0.0.2"},
    /* IPv6: the trusted ::1 in front of clients of one /64 */
    {"::1", "X-Forwarded-For: 2001:db8:1:2::a\r\n", SL__PROXY_XFF, "2001:db8:1:2::a"},
    {"::1", "X-Forwarded-For: 2001:db8:1:2::a, [2001:db8:1:2::b]:80\r\n", SL__PROXY_XFF,
     "2001:db8:1:2::b"},
    {"2001:db8::1", "X-Forwarded-For: 198.51.100.1\r\n", SL__PROXY_XFF, "2001:db8::1"},
};

static void test_client_behind_proxies(void **state)
{
    struct sl__proxy_cidr trusted[2];
    const char *why;
    char req[512];

    (void)state;
    assert_true(sl__proxy_cidr_parse("10.0.0.0/8", &trusted[0], &why));
    assert_true(sl__proxy_cidr_parse("::1", &trusted[1], &why));
    for (size_t i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
        struct sl__proxy_ip peer, got;
        snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: a\r\n%s\r\n", clients[i].headers);
        parse_head(req);
        assert_true(sl__proxy_ip_parse(clients[i].peer, strlen(clients[i].peer), &peer));
        sl__proxy_client_ip(&peer, &head, clients[i].which, trusted, 2, &got);
        if (strcmp(text_of(&got, -1), clients[i].want) != 0)
            fail_msg("case %zu: %s from %s: got %s, want %s", i, clients[i].headers,
                     clients[i].peer, text_of(&got, -1), clients[i].want);
    }
    /* nothing trusted: never read */
    {
        struct sl__proxy_ip peer, got;
        parse_head("GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.1.1.1\r\n\r\n");
        assert_true(sl__proxy_ip_parse("10.0.0.1", 8, &peer));
        sl__proxy_client_ip(&peer, &head, SL__PROXY_XFF, trusted, 0, &got);
        assert_string_equal(text_of(&got, -1), "10.0.0.1");
    }
}

/* ------------------------------------------------------------ descriptors */

static struct sl__proxy_hmatch m_tier = {.name = "x-tier", .kind = SL__PM_EXACT, .value = "free"};
static struct sl__proxy_hmatch m_post = {.name = ":method", .kind = SL__PM_EXACT, .value = "POST"};
static struct sl__proxy_hmatch m_admin = {
    .name = ":path", .kind = SL__PM_PREFIX, .value = "/ADMIN", .ignore_case = true};
static struct sl__proxy_hmatch m_no_debug = {
    .name = "x-debug", .kind = SL__PM_PRESENT, .present = true, .invert = true};

static struct sl__proxy_action a_remote = {.kind = SL__PA_REMOTE_ADDRESS, .key = "remote_address"};
static struct sl__proxy_action a_masked = {
    .kind = SL__PA_MASKED_REMOTE, .key = "masked_remote_address", .v4_bits = 24, .v6_bits = 64};
static struct sl__proxy_action a_key = {
    .kind = SL__PA_REQUEST_HEADERS, .key = "api_key", .header = "x-api-key"};
static struct sl__proxy_action a_key_opt = {.kind = SL__PA_REQUEST_HEADERS,
                                            .key = "api_key",
                                            .header = "x-api-key",
                                            .skip_if_absent = true};
static struct sl__proxy_action a_generic = {
    .kind = SL__PA_GENERIC_KEY, .key = "generic_key", .value = "edge"};
static struct sl__proxy_action a_free = {.kind = SL__PA_HEADER_VALUE_MATCH,
                                         .key = "header_match",
                                         .value = "free",
                                         .expect_match = true,
                                         .matchers = &m_tier,
                                         .n_matchers = 1};
static struct sl__proxy_action a_not_free = {.kind = SL__PA_HEADER_VALUE_MATCH,
                                             .key = "header_match",
                                             .value = "paid",
                                             .expect_match = false,
                                             .matchers = &m_tier,
                                             .n_matchers = 1};
static struct sl__proxy_hmatch m_both[2];
static struct sl__proxy_action a_post_admin = {.kind = SL__PA_HEADER_VALUE_MATCH,
                                               .key = "kind",
                                               .value = "admin_write",
                                               .expect_match = true,
                                               .matchers = m_both,
                                               .n_matchers = 2};
static struct sl__proxy_action a_no_debug = {.kind = SL__PA_HEADER_VALUE_MATCH,
                                             .key = "debug",
                                             .value = "no",
                                             .expect_match = true,
                                             .matchers = &m_no_debug,
                                             .n_matchers = 1};
static struct sl__proxy_action a_path = {.kind = SL__PA_PATH, .key = "path"};
static struct sl__proxy_action a_method = {.kind = SL__PA_METHOD, .key = "method"};

/* The descriptors as "k=v,k=v|k=v". */
static const char *render(size_t n)
{
    static char out[1024];
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        for (size_t e = 0; e < descr.d[i].n_entries; e++) {
            const struct sl_entry *en = &descr.d[i].entries[e];
            len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%.*s=%.*s", e ? "," : "",
                                    (int)en->key.len, en->key.p, (int)en->value.len, en->value.p);
        }
        if (i + 1 < n)
            len += (size_t)snprintf(out + len, sizeof(out) - len, "|");
    }
    return out;
}

static const char *build(struct sl__proxy_action *const *acts, const size_t *counts, size_t n_rls,
                         const char *req, const char *client)
{
    static struct sl__proxy_action acts_of[8][SL_MAX_ENTRIES];
    struct sl__proxy_rate_limit rls[8];
    struct sl__proxy_limits l = {.domain = "edge", .rls = rls, .n_rls = n_rls};
    struct sl__proxy_ip ip = {0};
    size_t k = 0;

    for (size_t r = 0; r < n_rls; r++) {
        rls[r].actions = acts_of[r];
        rls[r].n_actions = counts[r];
        for (size_t i = 0; i < counts[r]; i++)
            rls[r].actions[i] = *acts[k++];
    }
    if (client != NULL)
        assert_true(sl__proxy_ip_parse(client, strlen(client), &ip));
    parse_head(req);
    return render(sl__proxy_descr_build(&l, &head, &ip, &descr));
}

#define ONE(...) ((struct sl__proxy_action *const[]){__VA_ARGS__})
#define N(...)   ((const size_t[]){__VA_ARGS__})
#define GET      "GET /v1/items?x=1 HTTP/1.1\r\nHost: api.example\r\n"

static void test_descriptors(void **state)
{
    (void)state;
    m_both[0] = m_post;
    m_both[1] = m_admin;
    /* each action kind alone */
    assert_string_equal(build(ONE(&a_remote), N(1), 1, GET "\r\n", "192.0.2.7"),
                        "remote_address=192.0.2.7");
    assert_string_equal(build(ONE(&a_masked), N(1), 1, GET "\r\n", "192.0.2.7"),
                        "masked_remote_address=192.0.2.0/24");
    assert_string_equal(build(ONE(&a_masked), N(1), 1, GET "\r\n", "2001:db8:1:2:3::9"),
                        "masked_remote_address=2001:db8:1:2::/64");
    assert_string_equal(
        build(ONE(&a_key), N(1), 1, GET "X-API-Key: k1\r\nx-api-key: k2\r\n\r\n", NULL),
        "api_key=k1");
    assert_string_equal(build(ONE(&a_generic), N(1), 1, GET "\r\n", NULL), "generic_key=edge");
    assert_string_equal(build(ONE(&a_path), N(1), 1, GET "\r\n", NULL), "path=/v1/items");
    assert_string_equal(build(ONE(&a_method), N(1), 1, GET "\r\n", NULL), "method=GET");
    /* a missing header drops the descriptor, or only its entry with skip_if_absent */
    assert_string_equal(build(ONE(&a_generic, &a_key), N(2), 1, GET "\r\n", NULL), "");
    assert_string_equal(build(ONE(&a_generic, &a_key_opt), N(2), 1, GET "\r\n", NULL),
                        "generic_key=edge");
    assert_string_equal(build(ONE(&a_key_opt), N(1), 1, GET "\r\n", NULL), "");
    /* several descriptors, the dropped one left out */
    assert_string_equal(
        build(ONE(&a_remote, &a_key, &a_generic, &a_method), N(1, 1, 2), 3, GET "\r\n", "10.1.1.1"),
        "remote_address=10.1.1.1|generic_key=edge,method=GET");
    /* no address (a peer that is not IP): remote_address drops its descriptor */
    assert_string_equal(build(ONE(&a_remote, &a_generic), N(1, 1), 2, GET "\r\n", NULL),
                        "generic_key=edge");
    /* header_value_match */
    assert_string_equal(build(ONE(&a_free), N(1), 1, GET "X-Tier: free\r\n\r\n", NULL),
                        "header_match=free");
    assert_string_equal(build(ONE(&a_free), N(1), 1, GET "X-Tier: gold\r\n\r\n", NULL), "");
    assert_string_equal(build(ONE(&a_free), N(1), 1, GET "\r\n", NULL), "");
    assert_string_equal(build(ONE(&a_not_free), N(1), 1, GET "X-Tier: gold\r\n\r\n", NULL),
                        "header_match=paid");
    assert_string_equal(build(ONE(&a_not_free), N(1), 1, GET "X-Tier: free\r\n\r\n", NULL), "");
    /* repeated headers are matched joined with "," (as Envoy) */
    assert_string_equal(
        build(ONE(&a_free), N(1), 1, GET "X-Tier: free\r\nX-Tier: free\r\n\r\n", NULL), "");
    assert_string_equal(
        build(ONE(&a_post_admin), N(1), 1, "POST /admin/x HTTP/1.1\r\nHost: a\r\n\r\n", NULL),
        "kind=admin_write");
    assert_string_equal(
        build(ONE(&a_post_admin), N(1), 1, "GET /admin/x HTTP/1.1\r\nHost: a\r\n\r\n", NULL), "");
    assert_string_equal(build(ONE(&a_no_debug), N(1), 1, GET "\r\n", NULL), "debug=no");
    assert_string_equal(build(ONE(&a_no_debug), N(1), 1, GET "X-Debug: 1\r\n\r\n", NULL), "");
}

static void test_wait_text(void **state)
{
    static const struct {
        int64_t ns;
        const char *want;
    } cases[] = {
        {0, "1 second"},
        {1, "1 second"},
        {SL_NS_PER_S, "1 second"},
        {SL_NS_PER_S + 1, "2 seconds"},
        {119 * SL_NS_PER_S, "119 seconds"},
        {120 * SL_NS_PER_S, "2 minutes"},
        {150 * SL_NS_PER_S, "3 minutes"},
        {7199 * SL_NS_PER_S, "120 minutes"},
        {7200 * SL_NS_PER_S, "2 hours"},
        {47 * 3600 * SL_NS_PER_S + 1, "48 hours"},
        {48 * 3600 * SL_NS_PER_S, "2 days"},
    };
    char t[48];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sl__proxy_wait_text(cases[i].ns, t, sizeof(t));
        assert_string_equal(t, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ip_parse),          cmocka_unit_test(test_cidr),
        cmocka_unit_test(test_cidr_has_and_mask), cmocka_unit_test(test_client_behind_proxies),
        cmocka_unit_test(test_descriptors),       cmocka_unit_test(test_wait_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
