/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_check_body.c - POST /v1/check's body parser (server/http) and
 * `sluice simulate`'s line parser (cli/sim_line.c) accept and refuse the
 * same bodies, with the same request: both read the fields through
 * checkbody/check_body.c. Each case runs through both; a simulate line is
 * the body with "t_ms" in front.
 *
 * It does not test the JSON text parsers (each side has its own tests);
 * only what the two sides share.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http_json.h"
#include "sim_line.h"

struct agree_case {
    const char *members; /* the body's members, without braces */
    int rc;              /* both parsers' result */
    uint64_t hits;       /* when SL_OK */
    const char *error;   /* when not: a part of both messages */
};

static const struct agree_case cases[] = {
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}]", SL_OK, 1, NULL},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":0", SL_OK, 0, NULL},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":\"18446744073709551615\"", SL_OK,
     UINT64_MAX, NULL},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":\"18446744073709551616\"",
     SL_ERANGE, 0, "hits: number out of range"},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":1e300", SL_ERANGE, 0, "hits"},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":-1", SL_EINVAL, 0,
     "hits: expected a non-negative integer"},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":\"1x\"", SL_EINVAL, 0, "hits"},
    {"\"domain\":\"d\",\"descriptors\":[{\"\":\"b\"}]", SL_EINVAL, 0, "keys must not be empty"},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\",\"\":\"c\"}]", SL_EINVAL, 0,
     "keys must not be empty"},
    {"\"domain\":\"\",\"descriptors\":[{\"a\":\"b\"}]", SL_EINVAL, 0, "domain: must not be empty"},
    {"\"descriptors\":[{\"a\":\"b\"}]", SL_EINVAL, 0, "domain: missing"},
    {"\"domain\":\"d\",\"descriptors\":[]", SL_EINVAL, 0, "descriptors: must not be empty"},
    {"\"domain\":\"d\",\"descriptors\":[{}]", SL_EINVAL, 0, "descriptors[0]: must not be empty"},
    {"\"domain\":\"d\",\"descriptors\":[{\"a\":1}]", SL_EINVAL, 0, "value must be a string"},
};

static _Alignas(16) char mem[8192];

static void run_case(const struct agree_case *c)
{
    static struct sl__json_req http;
    static struct sl__sim_line sim;
    struct sl__json_arena arena;
    char body[512], line[512], err[256];
    int rc_http, rc_sim;

    snprintf(body, sizeof(body), "{%s}", c->members);
    snprintf(line, sizeof(line), "{\"t_ms\":1000,%s}", c->members);
    sl__json_arena_init(&arena, mem, sizeof(mem));
    rc_http = sl__json_parse_check(&http, &arena, body, strlen(body));
    rc_sim = sl__sim_line_parse(&sim, line, strlen(line), err, sizeof(err));
    print_message("%s: http %d (%s), simulate %d (%s)\n", body, rc_http, http.error, rc_sim,
                  rc_sim == SL_OK ? "" : err);
    assert_int_equal(rc_http, c->rc);
    assert_int_equal(rc_sim, c->rc);
    if (c->rc == SL_OK) {
        assert_int_equal(http.req.hits, c->hits);
        assert_int_equal(sim.req.hits, c->hits);
        assert_int_equal(http.req.n_descriptors, sim.req.n_descriptors);
        assert_int_equal(http.req.descriptors[0].n_entries, sim.req.descriptors[0].n_entries);
        assert_int_equal(sim.req.now_ns, 1000 * SL_NS_PER_MS);
    } else {
        assert_non_null(strstr(http.error, c->error));
        assert_non_null(strstr(err, c->error));
        assert_string_equal(http.error, err); /* one message, whichever path */
    }
    sl__json_req_release(&http);
    sl__sim_line_free(&sim);
}

static void test_both_parsers_agree(void **st)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
    (void)st;
}

/* What only the simulate line has: t_ms, and one JSON object per line. */
static void test_simulate_only(void **st)
{
    static struct sl__sim_line sim;
    char err[256];
    const char *no_t = "{\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}]}";
    const char *list = "[1]";

    assert_int_equal(sl__sim_line_parse(&sim, no_t, strlen(no_t), err, sizeof(err)), SL_ERANGE);
    assert_non_null(strstr(err, "t_ms"));
    sl__sim_line_free(&sim);
    assert_int_equal(sl__sim_line_parse(&sim, list, strlen(list), err, sizeof(err)), SL_EPARSE);
    sl__sim_line_free(&sim);
    (void)st;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_parsers_agree),
        cmocka_unit_test(test_simulate_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
