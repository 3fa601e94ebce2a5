/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_http_json.c - the JSON bodies: Envoy RateLimitRequest parsing (both
 * field spellings, hits_addend rules, overrides), the native check body,
 * every error path (malformed JSON, wrong types, missing fields, caps,
 * ranges), the arena (no spill for a normal body, spill still correct), and
 * the answers (Envoy response, native answer, denial message, unit mapping).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "http_json.h"

static _Alignas(16) char arena_mem[64 * 1024];
static struct sl__json_arena arena;
static struct sl__json_req req;

static int envoy(const char *body)
{
    sl__json_arena_init(&arena, arena_mem, sizeof(arena_mem));
    return sl__json_parse_envoy(&req, &arena, body, strlen(body));
}

static int native(const char *body)
{
    sl__json_arena_init(&arena, arena_mem, sizeof(arena_mem));
    return sl__json_parse_check(&req, &arena, body, strlen(body));
}

static void assert_str(struct sl_str s, const char *want)
{
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.p, want, s.len);
}

static int teardown(void **st)
{
    sl__json_req_release(&req);
    (void)st;
    return 0;
}

static void test_envoy_snake_case(void **st)
{
    assert_int_equal(
        envoy("{\"domain\":\"api\",\"descriptors\":[{\"entries\":["
              "{\"key\":\"user\",\"value\":\"alice\"},{\"key\":\"path\",\"value\":\"/x\"}]},"
              "{\"entries\":[{\"key\":\"ip\",\"value\":\"1.2.3.4\"}],\"hits_addend\":0}],"
              "\"hits_addend\":3}"),
        SL_OK);
    assert_str(req.req.domain, "api");
    assert_int_equal(req.req.n_descriptors, 2);
    assert_int_equal(req.req.hits, 3);
    assert_int_equal(req.req.descriptors[0].n_entries, 2);
    assert_str(req.req.descriptors[0].entries[0].key, "user");
    assert_str(req.req.descriptors[0].entries[0].value, "alice");
    assert_str(req.req.descriptors[0].entries[1].key, "path");
    assert_str(req.req.descriptors[0].entries[1].value, "/x");
    assert_int_equal(req.req.descriptors[0].hits, -1); /* the request's */
    assert_int_equal(req.req.descriptors[1].hits, 0);  /* a peek */
    assert_false(req.overrides[0].set);
    /* A normal body lives wholly in the arena. */
    assert_true(arena.used > 0);
    assert_int_equal(arena.spill, 0);
    (void)st;
}

static void test_envoy_camel_case_strings_and_default_hits(void **st)
{
    assert_int_equal(envoy("{\"domain\":\"d\",\"hitsAddend\":0,\"descriptors\":[{\"entries\":["
                           "{\"key\":\"k\",\"value\":\"v\"}],\"hitsAddend\":\"7\","
                           "\"limit\":{\"requestsPerUnit\":\"42\",\"unit\":\"MINUTE\"}}]}"),
                     SL_OK);
    assert_int_equal(req.req.hits, 1); /* request-level 0 means 1 */
    assert_int_equal(req.req.descriptors[0].hits, 7);
    assert_true(req.overrides[0].set);
    assert_int_equal(req.overrides[0].requests_per_unit, 42);
    assert_int_equal(req.overrides[0].unit_ns, 60 * SL_NS_PER_S);
    sl__json_req_release(&req);

    assert_int_equal(envoy("{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\"}],"
                           "\"limit\":{\"requests_per_unit\":5,\"unit\":3}}]}"),
                     SL_OK);
    assert_int_equal(req.req.hits, 1); /* absent means 1 */
    assert_str(req.req.descriptors[0].entries[0].value, "");
    assert_int_equal(req.overrides[0].unit_ns, 3600 * SL_NS_PER_S);
    (void)st;
}

struct bad_case {
    const char *body;
    int rc;
    const char *error_part;
};

/* Envoy's service answers a descriptor without entries (none, or an empty
 * list) OK: it parses, with no entries, and matches no rule. */
static void test_envoy_descriptor_without_entries(void **st)
{
    static const char *const bodies[] = {
        "{\"domain\":\"d\",\"descriptors\":[{}]}",
        "{\"domain\":\"d\",\"descriptors\":[{\"entries\":[]}]}",
        "{\"domain\":\"d\",\"descriptors\":[{\"entries\":null}]}",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        assert_int_equal(envoy(bodies[i]), SL_OK);
        assert_int_equal(req.req.n_descriptors, 1);
        assert_int_equal(req.req.descriptors[0].n_entries, 0);
        sl__json_req_release(&req);
    }
    (void)st;
}

static void run_bad(int (*parse)(const char *), const struct bad_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = parse(c[i].body);
        if (rc != c[i].rc || strstr(req.error, c[i].error_part) == NULL)
            fail_msg("case %zu: %s -> rc %d error '%s'", i, c[i].body, rc, req.error);
        sl__json_req_release(&req);
    }
}

static void test_envoy_errors(void **st)
{
    static const struct bad_case cases[] = {
        {"", SL_EPARSE, "not valid JSON"},
        {"{\"domain\":", SL_EPARSE, "not valid JSON"},
        {"[1,2]", SL_EINVAL, "expected a JSON object"},
        {"{\"descriptors\":[]}", SL_EINVAL, "domain: missing"},
        {"{\"domain\":5,\"descriptors\":[]}", SL_EINVAL, "domain: expected a string"},
        {"{\"domain\":\"\",\"descriptors\":[]}", SL_EINVAL, "domain: must not be empty"},
        {"{\"domain\":\"d\"}", SL_EINVAL, "descriptors: missing"},
        {"{\"domain\":\"d\",\"descriptors\":{}}", SL_EINVAL, "descriptors: expected an array"},
        {"{\"domain\":\"d\",\"descriptors\":[]}", SL_EINVAL, "descriptors: must not be empty"},
        {"{\"domain\":\"d\",\"descriptors\":[7]}", SL_EINVAL, "descriptors[0]: expected an object"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"value\":\"v\"}]}]}", SL_EINVAL,
         "descriptors[0].entries[0]: key must be"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\",\"value\":1}]}]}",
         SL_EINVAL, "value must be a string"},
        {"{\"domain\":\"d\",\"hits_addend\":-1,\"descriptors\":[{\"entries\":[{\"key\":\"k\"}]}]}",
         SL_EINVAL, "hits_addend: expected a non-negative integer"},
        {"{\"domain\":\"d\",\"hits_addend\":1.5,\"descriptors\":[{\"entries\":[{\"key\":\"k\"}]}]}",
         SL_EINVAL, "hits_addend"},
        {"{\"domain\":\"d\",\"hits_addend\":4294967296,\"descriptors\":[{\"entries\":[{\"key\":"
         "\"k\"}]}]}",
         SL_ERANGE, "hits_addend: number out of range"},
        {"{\"domain\":\"d\",\"hits_addend\":\"12x\",\"descriptors\":[{\"entries\":[{\"key\":"
         "\"k\"}]}]}",
         SL_EINVAL, "hits_addend"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\"}],\"hits_addend\":"
         "\"99999999999999999999\"}]}",
         SL_ERANGE, "descriptors[0].hits_addend"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\"}],\"limit\":{\"unit\":"
         "\"FORTNIGHT\"}}]}",
         SL_EINVAL, "descriptors[0].limit: unit must be"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\"}],\"limit\":{\"unit\":9}}"
         "]}",
         SL_EINVAL, "unit must be"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\"}],\"limit\":[]}]}",
         SL_EINVAL, "descriptors[0].limit: expected an object"},
    };
    run_bad(envoy, cases, sizeof(cases) / sizeof(cases[0]));
    (void)st;
}

/* A body with n descriptors of m entries each, in the given format. */
static void make_many(char *buf, size_t cap, size_t n, size_t m, bool is_envoy)
{
    size_t len = (size_t)snprintf(buf, cap, "{\"domain\":\"d\",\"descriptors\":[");
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "",
                                is_envoy ? "{\"entries\":[" : "{");
        for (size_t j = 0; j < m; j++) {
            if (is_envoy)
                len += (size_t)snprintf(buf + len, cap - len,
                                        "%s{\"key\":\"k%zu\",\"value\":\"v\"}", j ? "," : "", j);
            else
                len += (size_t)snprintf(buf + len, cap - len, "%s\"k%zu\":\"v\"", j ? "," : "", j);
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s", is_envoy ? "]}" : "}");
    }
    snprintf(buf + len, cap - len, "]}");
}

static void test_caps(void **st)
{
    static char body[65536];

    make_many(body, sizeof(body), SL_MAX_DESCRIPTORS, SL_MAX_ENTRIES, true);
    assert_int_equal(envoy(body), SL_OK);
    assert_int_equal(req.req.n_descriptors, SL_MAX_DESCRIPTORS);
    assert_int_equal(req.req.descriptors[31].n_entries, SL_MAX_ENTRIES);
    assert_str(req.req.descriptors[31].entries[15].key, "k15");
    sl__json_req_release(&req);

    make_many(body, sizeof(body), SL_MAX_DESCRIPTORS + 1, 1, true);
    assert_int_equal(envoy(body), SL_ETOOBIG);
    assert_non_null(strstr(req.error, "descriptors: too many"));
    sl__json_req_release(&req);

    make_many(body, sizeof(body), 1, SL_MAX_ENTRIES + 1, true);
    assert_int_equal(envoy(body), SL_ETOOBIG);
    assert_non_null(strstr(req.error, "descriptors[0].entries: too many"));
    sl__json_req_release(&req);

    make_many(body, sizeof(body), SL_MAX_DESCRIPTORS, SL_MAX_ENTRIES, false);
    assert_int_equal(native(body), SL_OK);
    assert_int_equal(req.req.descriptors[31].n_entries, SL_MAX_ENTRIES);
    sl__json_req_release(&req);

    make_many(body, sizeof(body), SL_MAX_DESCRIPTORS + 1, 1, false);
    assert_int_equal(native(body), SL_ETOOBIG);
    sl__json_req_release(&req);

    make_many(body, sizeof(body), 1, SL_MAX_ENTRIES + 1, false);
    assert_int_equal(native(body), SL_ETOOBIG);
    assert_non_null(strstr(req.error, "descriptors[0]: too many entries"));
    (void)st;
}

static void test_arena_spill_and_no_arena(void **st)
{
    static _Alignas(16) char tiny[64];
    static char body[65536];
    struct sl__json_arena a;

    make_many(body, sizeof(body), SL_MAX_DESCRIPTORS, SL_MAX_ENTRIES, true);
    sl__json_arena_init(&a, tiny, sizeof(tiny));
    assert_int_equal(sl__json_parse_envoy(&req, &a, body, strlen(body)), SL_OK);
    assert_true(a.spill > 0);
    assert_str(req.req.descriptors[20].entries[3].key, "k3");
    sl__json_req_release(&req);
    assert_int_equal(a.used, 0);
    assert_int_equal(a.spill, 0);

    const char *small = "{\"domain\":\"x\",\"descriptors\":[{\"a\":\"b\"}]}";
    assert_int_equal(sl__json_parse_check(&req, NULL, small, strlen(small)), SL_OK);
    assert_str(req.req.descriptors[0].entries[0].value, "b");
    sl__json_req_release(&req);

    /* Outside sl__json_* calls, cJSON allocates from malloc as before. */
    cJSON *obj = cJSON_CreateObject();
    assert_non_null(obj);
    cJSON_AddStringToObject(obj, "k", "v");
    cJSON_Delete(obj);
    (void)st;
}

static void test_native_ok(void **st)
{
    assert_int_equal(
        native("{\"domain\":\"api\",\"descriptors\":[{\"user\":\"bob\",\"path\":\"/a\"},"
               "{\"ip\":\"::1\"}],\"hits\":0,\"t_ms\":5}"),
        SL_OK);
    assert_str(req.req.domain, "api");
    assert_int_equal(req.req.hits, 0);
    assert_int_equal(req.req.n_descriptors, 2);
    assert_str(req.req.descriptors[0].entries[0].key, "user");
    assert_str(req.req.descriptors[0].entries[1].key, "path");
    assert_str(req.req.descriptors[1].entries[0].value, "::1");
    assert_int_equal(req.req.descriptors[1].hits, -1);
    sl__json_req_release(&req);

    assert_int_equal(native("{\"domain\":\"api\",\"descriptors\":[{\"u\":\"b\"}]}"), SL_OK);
    assert_int_equal(req.req.hits, 1);
    sl__json_req_release(&req);
    assert_int_equal(native("{\"domain\":\"api\",\"descriptors\":[{\"u\":\"b\"}],\"hits\":"
                            "\"18446744073709551615\"}"),
                     SL_OK);
    assert_int_equal(req.req.hits, UINT64_MAX);
    (void)st;
}

static void test_native_errors(void **st)
{
    static const struct bad_case cases[] = {
        {"{\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}]", SL_EPARSE, "not valid JSON"},
        {"\"str\"", SL_EINVAL, "expected a JSON object"},
        {"{\"domain\":null,\"descriptors\":[{\"a\":\"b\"}]}", SL_EINVAL,
         "domain: expected a string"},
        {"{\"domain\":\"d\",\"descriptors\":[[\"a\"]]}", SL_EINVAL,
         "descriptors[0]: expected an object"},
        {"{\"domain\":\"d\",\"descriptors\":[{}]}", SL_EINVAL, "descriptors[0]: must not be empty"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"},{\"n\":1}]}", SL_EINVAL,
         "descriptors[1].n: value must be a string"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"\":\"b\"}]}", SL_EINVAL, "keys must not be empty"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":true}", SL_EINVAL,
         "hits: expected a non-negative integer"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":\"18446744073709551616\"}",
         SL_ERANGE, "hits: number out of range"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"a\":\"b\"}],\"hits\":1e300}", SL_ERANGE, "hits"},
    };
    run_bad(native, cases, sizeof(cases) / sizeof(cases[0]));
    (void)st;
}

/* A body is one JSON value, read one way: nothing after it, no repeated
 * member name anywhere (cJSON would take the first, other readers the
 * last), no proto3 field given by both of its names. */
static void test_one_reading_only(void **st)
{
    static const struct bad_case envoy_cases[] = {
        {"{\"domain\":\"d\",\"descriptors\":[{}]}garbage", SL_EPARSE,
         "something follows the value"},
        {"{\"domain\":\"d\",\"descriptors\":[{}]} {}", SL_EPARSE, "something follows"},
        {"{\"domain\":\"d\",\"domain\":\"e\",\"descriptors\":[{}]}", SL_EPARSE,
         "repeats a member name"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\",\"key\":\"j\"}]}]}",
         SL_EPARSE, "repeats a member name"},
        {"{\"domain\":\"d\",\"hits_addend\":1,\"hitsAddend\":9,\"descriptors\":[{}]}", SL_EINVAL,
         "hits_addend: given twice"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"hits_addend\":1,\"hitsAddend\":0}]}", SL_EINVAL,
         "descriptors[0]: given twice"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"limit\":{\"unit\":\"SECOND\","
         "\"requests_per_unit\":1,\"requestsPerUnit\":5}}]}",
         SL_EINVAL, "descriptors[0].limit: given twice"},
    };
    static const struct bad_case native_cases[] = {
        {"{\"domain\":\"d\",\"descriptors\":[{\"u\":\"a\",\"u\":\"b\"}]}", SL_EPARSE,
         "repeats a member name"},
        {"{\"domain\":\"d\",\"descriptors\":[{\"u\":\"a\"}]}\n{}", SL_EPARSE,
         "something follows the value"},
    };
    char big[8192];
    size_t len =
        (size_t)snprintf(big, sizeof(big), "{\"domain\":\"d\",\"descriptors\":[{\"u\":\"a\"}]");

    run_bad(envoy, envoy_cases, sizeof(envoy_cases) / sizeof(envoy_cases[0]));
    run_bad(native, native_cases, sizeof(native_cases) / sizeof(native_cases[0]));
    /* trailing whitespace is fine */
    assert_int_equal(native("{\"domain\":\"d\",\"descriptors\":[{\"u\":\"a\"}]} \r\n\t"), SL_OK);
    sl__json_req_release(&req);
    /* many members (checked by sorting): unique is fine, one repeat is not */
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(big + len, sizeof(big) - len, ",\"x%d\":%d", i, i);
    snprintf(big + len, sizeof(big) - len, "}");
    assert_int_equal(native(big), SL_OK);
    sl__json_req_release(&req);
    snprintf(big + len, sizeof(big) - len, ",\"x7\":0}");
    assert_int_equal(native(big), SL_EPARSE);
    assert_non_null(strstr(req.error, "repeats a member name"));
    (void)st;
}

/* ---------------------------------------------------------- answers */

static struct sl_limit lim;

static void one_status(struct sl_result *r, enum sl_verdict v, const char *name, uint64_t requests,
                       int64_t period_ns)
{
    memset(r, 0, sizeof(*r));
    sl_limit_init(&lim);
    lim.algo = SL_ALGO_FIXED_WINDOW;
    lim.requests = requests;
    lim.period_ns = period_ns;
    lim.name = name;
    lim.named = true; /* as a rule with `name:` (Envoy's API reports only those) */
    r->verdict = v;
    r->n_statuses = 1;
    r->statuses[0].limit = &lim;
    r->statuses[0].d.verdict = v;
    r->statuses[0].d.quota = (int64_t)requests;
}

static void test_envoy_units(void **st)
{
    static const struct {
        uint64_t requests;
        int64_t period_ns;
        const char *unit;
        uint32_t per_unit;
    } cases[] = {
        {100, 60 * SL_NS_PER_S, "MINUTE", 100},
        {10, SL_NS_PER_S, "SECOND", 10},
        {7, 86400 * SL_NS_PER_S, "DAY", 7},
        {5, 365 * 86400 * SL_NS_PER_S, "YEAR", 5},
        {300, 5 * 60 * SL_NS_PER_S, "MINUTE", 60},       /* 300 per 5m = 60/min */
        {90, 90 * SL_NS_PER_S, "MINUTE", 60},            /* 1/s over 90 s */
        {1, 90 * SL_NS_PER_S, "HOUR", 40},               /* 0.67/min is 0: next unit */
        {5, 500 * SL_NS_PER_MS, "SECOND", 10},           /* under a second: per second */
        {70, 7 * 86400 * SL_NS_PER_S, "DAY", 10},        /* a week: per day */
        {UINT64_MAX, SL_NS_PER_S, "SECOND", UINT32_MAX}, /* saturates */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *unit;
        uint32_t per;
        sl_limit_init(&lim);
        lim.algo = SL_ALGO_FIXED_WINDOW;
        lim.requests = cases[i].requests;
        lim.period_ns = cases[i].period_ns;
        sl__json_envoy_unit(&lim, &unit, &per);
        assert_string_equal(unit, cases[i].unit);
        assert_int_equal(per, cases[i].per_unit);
    }
    (void)st;
}

static void test_build_envoy(void **st)
{
    struct sl_result r;
    char buf[1024];
    size_t len;

    one_status(&r, SL_DENY, "api.user", 100, 60 * SL_NS_PER_S);
    r.statuses[0].d.remaining = 0;
    r.statuses[0].d.reset_ns = 11 * SL_NS_PER_S + 1;
    r.n_statuses = 2; /* the second descriptor matched nothing */
    assert_int_equal(sl__json_build_envoy(&r, buf, sizeof(buf), &len), SL_OK);
    assert_string_equal(buf,
                        "{\"overallCode\":\"OVER_LIMIT\",\"statuses\":[{\"code\":\"OVER_LIMIT\","
                        "\"currentLimit\":{\"name\":\"api.user\",\"requestsPerUnit\":100,"
                        "\"unit\":\"MINUTE\"},\"limitRemaining\":0,\"durationUntilReset\":"
                        "\"12s\"},{\"code\":\"OK\"}]}");
    assert_int_equal(len, strlen(buf));

    /* A delay is OK for Envoy. */
    one_status(&r, SL_DELAY, "q\"x", 2, SL_NS_PER_S);
    r.statuses[0].d.remaining = 5000000000LL;
    assert_int_equal(sl__json_build_envoy(&r, buf, sizeof(buf), &len), SL_OK);
    assert_non_null(strstr(buf, "{\"overallCode\":\"OK\",\"statuses\":[{\"code\":\"OK\""));
    assert_non_null(strstr(buf, "\"name\":\"q\\\"x\""));
    assert_non_null(strstr(buf, "\"limitRemaining\":4294967295"));
    assert_int_equal(sl__json_build_envoy(&r, buf, len - 1, &len), SL_ETOOBIG);

    /* What we write, cJSON reads back. */
    one_status(&r, SL_ALLOW, "n", 3, SL_NS_PER_S);
    assert_int_equal(sl__json_build_envoy(&r, buf, sizeof(buf), &len), SL_OK);
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc);
    assert_string_equal(cJSON_GetObjectItem(doc, "overallCode")->valuestring, "OK");
    cJSON_Delete(doc);
    (void)st;
}

static void test_build_check_and_message(void **st)
{
    struct sl_result r;
    char buf[1024], msg[256];
    size_t len;

    one_status(&r, SL_DENY, "api.user", 100, 60 * SL_NS_PER_S);
    r.statuses[0].d.remaining = 0;
    r.statuses[0].d.reset_ns = 30 * SL_NS_PER_S;
    r.statuses[0].d.retry_after_ns = 11 * SL_NS_PER_S + 500 * SL_NS_PER_MS;
    sl__json_deny_message(&r, msg, sizeof(msg));
    assert_string_equal(msg, "rate limit 'api.user' exceeded: 100 per 1m; retry in 12 s");
    assert_int_equal(sl__json_build_check(&r, buf, sizeof(buf), &len), SL_OK);
    assert_string_equal(buf, "{\"decision\":\"deny\",\"delay_ms\":0,\"statuses\":[{\"decision\":"
                             "\"deny\",\"limit\":\"api.user\",\"quota\":100,\"remaining\":0,"
                             "\"reset_ms\":30000,\"retry_after_ms\":11500}],\"message\":"
                             "\"rate limit 'api.user' exceeded: 100 per 1m; retry in 12 s\"}");

    r.statuses[0].d.retry_after_ns = -1;
    lim.period_ns = 1500 * SL_NS_PER_MS;
    sl__json_deny_message(&r, msg, sizeof(msg));
    assert_string_equal(msg, "rate limit 'api.user' exceeded: 100 per 1500ms; this request can "
                             "never pass (its cost is above the limit)");
    assert_int_equal(sl__json_build_check(&r, buf, sizeof(buf), &len), SL_OK);
    assert_non_null(strstr(buf, "\"retry_after_ms\":-1"));

    one_status(&r, SL_DELAY, "shape", 10, SL_NS_PER_S);
    r.delay_ns = 1500001;
    r.statuses[0].d.delay_ns = r.delay_ns;
    r.n_statuses = 2;
    assert_int_equal(sl__json_build_check(&r, buf, sizeof(buf), &len), SL_OK);
    assert_non_null(strstr(buf, "{\"decision\":\"delay\",\"delay_ms\":2,"));
    assert_non_null(strstr(buf, ",{\"decision\":\"allow\",\"limit\":null}]}"));
    assert_null(strstr(buf, "message"));
    sl__json_deny_message(&r, msg, sizeof(msg));
    assert_string_equal(msg, "");
    assert_int_equal(sl__json_build_check(&r, buf, 10, &len), SL_ETOOBIG);
    (void)st;
}

/* on_unmatched: deny - a denial without a limit, said as such in both APIs. */
static void test_build_unmatched(void **st)
{
    struct sl_result r;
    char buf[1024], msg[256];
    size_t len;

    one_status(&r, SL_DENY, "api.user", 100, 60 * SL_NS_PER_S);
    r.statuses[0].d.verdict = SL_ALLOW; /* peeked: it would have allowed */
    r.statuses[0].d.remaining = 7;
    r.n_statuses = 2;
    r.statuses[1].d.verdict = SL_DENY;
    r.statuses[1].d.retry_after_ns = -1;
    r.statuses[1].unmatched = true;
    sl__json_deny_message(&r, msg, sizeof(msg));
    assert_string_equal(msg, "descriptors[1] matches no rule, and its domain denies what no rule "
                             "matches (on_unmatched: deny)");
    assert_int_equal(sl__json_build_check(&r, buf, sizeof(buf), &len), SL_OK);
    assert_non_null(strstr(buf, ",{\"decision\":\"deny\",\"limit\":null,\"unmatched\":true}]"));
    assert_int_equal(sl__json_build_envoy(&r, buf, sizeof(buf), &len), SL_OK);
    assert_non_null(strstr(buf, "{\"overallCode\":\"OVER_LIMIT\",\"statuses\":[{\"code\":\"OK\""));
    assert_non_null(strstr(buf, ",{\"code\":\"OVER_LIMIT\"}]}"));
    (void)st;
}

/* An answer a failure policy made says which one; the store's own answers
 * carry no policy field, and Envoy's answer never does. */
static void test_build_check_policy(void **st)
{
    struct sl_result r;
    char buf[1024];
    size_t len;

    one_status(&r, SL_ALLOW, "api.user", 100, 60 * SL_NS_PER_S);
    r.statuses[0].d.remaining = 100;
    assert_int_equal(sl__json_build_check_by(&r, "allow", buf, sizeof(buf), &len), SL_OK);
    assert_string_equal(buf, "{\"decision\":\"allow\",\"delay_ms\":0,\"statuses\":[{\"decision\":"
                             "\"allow\",\"limit\":\"api.user\",\"quota\":100,\"remaining\":100,"
                             "\"reset_ms\":0,\"retry_after_ms\":0}],\"policy\":\"allow\"}");
    assert_int_equal(len, strlen(buf));
    assert_int_equal(sl__json_build_envoy(&r, buf, sizeof(buf), &len), SL_OK);
    assert_null(strstr(buf, "policy"));
    assert_int_equal(sl__json_build_check_by(&r, "local", buf, sizeof(buf), &len), SL_OK);
    assert_non_null(strstr(buf, "],\"policy\":\"local\"}"));
    one_status(&r, SL_DENY, "api.user", 100, 60 * SL_NS_PER_S);
    assert_int_equal(sl__json_build_check_by(&r, "deny", buf, sizeof(buf), &len), SL_OK);
    assert_non_null(strstr(buf, "],\"policy\":\"deny\",\"message\":"));
    assert_int_equal(sl__json_build_check_by(&r, NULL, buf, sizeof(buf), &len), SL_OK);
    assert_null(strstr(buf, "policy"));
    (void)st;
}

static void test_build_error(void **st)
{
    char buf[64];
    size_t len;

    assert_int_equal(sl__json_build_error("bad \"x\"\n", buf, sizeof(buf), &len), SL_OK);
    assert_string_equal(buf, "{\"error\":\"bad \\\"x\\\"\\n\"}");
    assert_int_equal(sl__json_build_error("bad", buf, 5, &len), SL_ETOOBIG);
    (void)st;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_envoy_snake_case, teardown),
        cmocka_unit_test_teardown(test_envoy_camel_case_strings_and_default_hits, teardown),
        cmocka_unit_test_teardown(test_envoy_errors, teardown),
        cmocka_unit_test_teardown(test_envoy_descriptor_without_entries, teardown),
        cmocka_unit_test_teardown(test_caps, teardown),
        cmocka_unit_test_teardown(test_arena_spill_and_no_arena, teardown),
        cmocka_unit_test_teardown(test_native_ok, teardown),
        cmocka_unit_test_teardown(test_native_errors, teardown),
        cmocka_unit_test_teardown(test_one_reading_only, teardown),
        cmocka_unit_test(test_envoy_units),
        cmocka_unit_test(test_build_envoy),
        cmocka_unit_test(test_build_check_and_message),
        cmocka_unit_test(test_build_unmatched),
        cmocka_unit_test(test_build_check_policy),
        cmocka_unit_test(test_build_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
