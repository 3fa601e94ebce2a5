/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rules_parse.c - the rules compiler on valid and broken YAML: an
 * Envoy file loads unchanged, every validation error is reported with its
 * file:line:column and a fix, all at once, and nothing is half-loaded.
 *
 * Matching and decisions are tested in test_rules_match.c / test_rules_check.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"

/* Add one text as FILE "t.yaml" and build; returns the build result. */
static int load(sl_rules_builder *b, const char *text, sl_rules **out)
{
    sl_rules_builder_add_yaml(b, text, strlen(text), "t.yaml", SL_SRC_FILE);
    return sl_rules_build(b, out);
}

/* True when some diagnostic starts with `prefix` and contains `needle`. */
static bool has_diag(const sl_rules_builder *b, const char *prefix, const char *needle)
{
    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++) {
        const char *d = sl_rules_builder_diag(b, i);
        if (strncmp(d, prefix, strlen(prefix)) == 0 && strstr(d, needle) != NULL)
            return true;
    }
    return false;
}

static void print_diags(const sl_rules_builder *b)
{
    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
        fprintf(stderr, "  diag: %s\n", sl_rules_builder_diag(b, i));
}

static const char envoy_file[] = "domain: mongo_cps\n"
                                 "descriptors:\n"
                                 "  - key: database\n"
                                 "    value: users\n"
                                 "    rate_limit:\n"
                                 "      unit: second\n"
                                 "      requests_per_unit: 500\n"
                                 "  - key: database\n"
                                 "    value: default\n"
                                 "    rate_limit:\n"
                                 "      unit: SECOND\n"
                                 "      requests_per_unit: 500\n"
                                 "  - key: remote_address\n"
                                 "    shadow_mode: true\n"
                                 "    detailed_metric: true\n"
                                 "    value_to_metric: true\n"
                                 "    metadata: {tier: gold, n: 3}\n"
                                 "    rate_limit: {unit: month, requests_per_unit: 10, name: m,\n"
                                 "                 replaces: [{name: other}]}\n"
                                 "  - key: service\n"
                                 "    value: files/*\n"
                                 "    share_threshold: true\n"
                                 "    quota_mode: true\n"
                                 "    descriptors:\n"
                                 "      - key: qux\n"
                                 "        rate_limit: {unlimited: true}\n";

static void envoy_file_loads(void **st)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;
    int rc = load(b, envoy_file, &r);

    print_diags(b);
    assert_int_equal(rc, SL_OK);
    assert_non_null(r);
    assert_true(sl_rules_has_domain(r, (struct sl_str){"mongo_cps", 9}));
    assert_false(sl_rules_has_domain(r, (struct sl_str){"mongo", 5}));
    sl_rules_unref(r);
    sl_rules_builder_free(b);
}

/* One table row per error: the text, the position and a word of the fix. */
struct bad_case {
    const char *text;
    const char *where;
    const char *what;
};

static const struct bad_case bad[] = {
    {"domain: d\ndescriptors:\n  - key: a\n    colour: red\n",
     "t.yaml:4:5:", "unknown key 'colour'"},
    {"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: x}\n",
     "t.yaml:4:51:", "whole number"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: gcra, requests: 5, "
     "period: 1s, burst: -1}\n",
     "t.yaml:5:59:", "burst must be >= 0"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: token_bucket, "
     "requests: 5, period: 1s, burst: 3, warmup: 4s}\n",
     "t.yaml:5:", "warmup cannot be combined with burst"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: gcra, requests: 5, "
     "period: 60}\n",
     "t.yaml:5:48:", "has no unit"},
    {"domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a\n    value: b\n",
     "t.yaml:5:5:", "duplicate descriptor 'd.a_b'"},
    {"domain: d\ndescriptors:\n  - key: a\n    key: b\n", "t.yaml:4:5:", "duplicate key 'key'"},
    {"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: "
     "1}\n",
     "t.yaml:4:24:", "invalid unit 'fortnight'"},
    {"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, unlimited: true}\n",
     "t.yaml:4:24:", "takes no unit"},
    {"domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n",
     "t.yaml:5:22:", "needs a wildcard"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {requests: 5, period: 1s}\n",
     "t.yaml:5:9:", "needs algorithm"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: quantum, requests: 5, "
     "period: 1s}\n",
     "t.yaml:5:21:", "unknown algorithm"},
    {"domain: d\ndescriptors: [\n", "t.yaml:", "invalid YAML"},
    {"descriptors: []\n", "t.yaml:1:1:", "needs a non-empty domain"},
    {"domain: d\ndescriptors:\n  - value: x\n", "t.yaml:3:5:", "needs a key"},
    {"domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n",
     "t.yaml:4:18:", "true or false"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: gcra, requests: 0, "
     "period: 1s}\n",
     "t.yaml:5:9:", "requests must be at least 1"},
    {"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour}\n",
     "t.yaml:4:17:", "rate_limit needs requests_per_unit"},
    {"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 1, "
     "replaces: [{}]}\n",
     "t.yaml:4:", "non-empty name"},
    {"domain: d\ndescriptors:\n  - &x {key: a}\n  - *x\n", "t.yaml:4:", "aliases"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: fixed_window, "
     "requests: 5, period: 1s, buckets: 3}\n",
     "t.yaml:5:", "buckets applies to algorithm sliding_window only"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: sliding_window, "
     "requests: 5, period: 1s, buckets: 0}\n",
     "t.yaml:5:", "buckets must be from 1 to 1024, not 0"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: sliding_window, "
     "requests: 5, period: 1s, buckets: 1025}\n",
     "t.yaml:5:", "buckets is too large (at most 1024)"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: sliding_window, "
     "requests: 5, period: 1s, buckets: many}\n",
     "t.yaml:5:", "buckets must be a whole number"},
    {"domain: d\ndescriptors:\n  - key: a\n    limits:\n      - {algorithm: sliding_window, "
     "requests: 5, period: 1m, buckets: 7}\n",
     "t.yaml:5:9:", "period a multiple of buckets"},
    {"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 1, "
     "name: s, replaces: [{name: s}]}\n",
     "t.yaml:4:17:", "replaces itself"},
    {"domain: d\nrlqs: true\ndescriptors:\n  - key: a\n"
     "    limits: [{algorithm: concurrency, requests: 3, lease: 1s, name: cc}]\n",
     "t.yaml:4:5:", "limit 'cc' of domain 'd' is concurrency, which a rate limit quota"},
    {"domain: d\nrlqs: yes\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n"
     "        limits: [{algorithm: sliding_log, requests: 3, period: 1s, min_interval: 100ms, "
     "name: sp}]\n",
     "t.yaml:6:9:", "is sliding_log with min_interval"},
    {"domain: d\nrlqs: maybe\ndescriptors: []\n", "t.yaml:2:7:", "rlqs must be true or false"},
};

static void each_error_has_position(void **st)
{
    size_t failures = 0;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_rules_builder *b = sl_rules_builder_new();
        sl_rules *r = NULL;
        int rc = load(b, bad[i].text, &r);
        if (!has_diag(b, bad[i].where, bad[i].what)) {
            fprintf(stderr, "case %zu: want %s ... %s\n", i, bad[i].where, bad[i].what);
            print_diags(b);
            failures++;
        }
        assert_int_equal(rc, SL_EPARSE);
        assert_null(r);
        sl_rules_builder_free(b);
    }
    assert_int_equal(failures, 0);
}

static void all_errors_at_once(void **st)
{
    const char *text = "domain: d\n"
                       "descriptors:\n"
                       "  - key: a\n"
                       "    colour: red\n"
                       "    limits:\n"
                       "      - {algorithm: gcra, requests: 5, period: 10}\n"
                       "  - key: b\n"
                       "    rate_limit: {unit: minute, requests_per_unit: -3}\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    assert_int_equal(load(b, text, &r), SL_EPARSE);
    assert_int_equal(sl_rules_builder_ndiags(b), 3);
    assert_true(has_diag(b, "t.yaml:4:5:", "colour"));
    assert_true(has_diag(b, "t.yaml:6:48:", "no unit"));
    assert_true(has_diag(b, "t.yaml:8:51:", ">= 0"));
    sl_rules_builder_free(b);
}

/* rlqs: true takes rates of every kind, and a requests_per_unit: 0 (a
 * ban, sent as DENY_ALL); rlqs: false takes anything. */
static void rlqs_domain_with_rates_loads(void **st)
{
    const char *text = "domain: d\nrlqs: true\ndescriptors:\n"
                       "  - key: a\n    rate_limit: {unit: second, requests_per_unit: 5}\n"
                       "  - key: b\n    limits: [{algorithm: gcra, requests: 5, period: 1s},\n"
                       "             {algorithm: sliding_log, requests: 5, period: 1m}]\n"
                       "  - key: c\n    rate_limit: {unit: second, requests_per_unit: 0}\n"
                       "---\ndomain: e\nrlqs: false\ndescriptors:\n  - key: a\n"
                       "    limits: [{algorithm: concurrency, requests: 3, lease: 1s}]\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    if (load(b, text, &r) != SL_OK)
        print_diags(b);
    assert_non_null(r);
    sl_rules_unref(r);
    sl_rules_builder_free(b);
    (void)st;
}

static void empty_descriptors_and_zero_requests_load(void **st)
{
    const char *text = "domain: d\ndescriptors:\n---\ndomain: e\ndescriptors:\n  - key: a\n"
                       "    rate_limit: {unit: minute, requests_per_unit: 0}\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    assert_int_equal(load(b, text, &r), SL_OK);
    assert_true(sl_rules_has_domain(r, (struct sl_str){"d", 1}));
    sl_rules_unref(r);
    sl_rules_builder_free(b);
}

static void nothing_half_loaded(void **st)
{
    const char *good = "domain: ok\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, "
                       "requests_per_unit: 1}\n";
    const char *mixed = "domain: fine\n---\ndomain: broken\ndescriptors: 7\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    assert_int_equal(sl_rules_builder_add_yaml(b, good, strlen(good), "g.yaml", SL_SRC_FILE),
                     SL_OK);
    assert_int_equal(sl_rules_builder_add_yaml(b, mixed, strlen(mixed), "m.yaml", SL_SRC_FILE),
                     SL_EPARSE);
    assert_true(has_diag(b, "m.yaml:4:14:", "must be a list"));
    assert_int_equal(sl_rules_build(b, &r), SL_EPARSE);
    assert_null(r);
    sl_rules_builder_free(b);
}

static void duplicate_domain_across_files(void **st)
{
    const char *t = "domain: d\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    assert_int_equal(sl_rules_builder_add_yaml(b, t, strlen(t), "a.yaml", SL_SRC_FILE), SL_OK);
    assert_int_equal(sl_rules_builder_add_yaml(b, t, strlen(t), "b.yaml", SL_SRC_FILE), SL_EPARSE);
    assert_true(has_diag(b, "b.yaml:1:1:", "already defined at a.yaml:1:1"));
    assert_int_equal(sl_rules_build(b, &r), SL_EPARSE);
    sl_rules_builder_free(b);
}

static void every_algorithm_and_extension_key(void **st)
{
    const char *text = "domain: x\n"
                       "descriptors:\n"
                       "  - key: user\n"
                       "    limits:\n"
                       "      - {algorithm: token_bucket, requests: 10, period: 1m, burst: 20}\n"
                       "      - {algorithm: token_bucket, requests: 2, period: 1s, warmup: 4s}\n"
                       "      - {algorithm: gcra, requests: 10, period: 1s, burst: 5}\n"
                       "      - {algorithm: leaky_bucket, requests: 10, period: 1s, burst: 5, "
                       "delay: 2}\n"
                       "      - {algorithm: fixed_window, requests: 10, period: 90s, "
                       "count_rejected: true}\n"
                       "      - {algorithm: sliding_window, requests: 10, period: 5m, "
                       "buckets: 60}\n"
                       "      - {algorithm: sliding_log, requests: 10, period: 1m, "
                       "min_interval: 2s, shadow_mode: true}\n"
                       "      - {algorithm: concurrency, requests: 3, lease: 30s, name: conc}\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;
    int rc = load(b, text, &r);

    print_diags(b);
    assert_int_equal(rc, SL_OK);
    sl_rules_unref(r);
    sl_rules_builder_free(b);
}

/* ids[0]: the id of the sliding_window with one bucket, ids[1] with 60. */
static void note_buckets(void *arg, const char *path, const struct sl_limit *l, bool quota_mode,
                         bool unlimited)
{
    uint64_t *ids = arg;

    (void)path;
    (void)quota_mode;
    (void)unlimited;
    if (l != NULL && l->algo == SL_ALGO_SLIDING_WINDOW && l->buckets == 1)
        ids[0] = l->id;
    if (l != NULL && l->algo == SL_ALGO_SLIDING_WINDOW && l->buckets == 60)
        ids[1] = l->id;
}

/* buckets reaches the limit, and is part of its identity. */
static void sliding_window_buckets(void **st)
{
    const char *text = "domain: x\n"
                       "descriptors:\n"
                       "  - key: user\n"
                       "    limits:\n"
                       "      - {algorithm: sliding_window, requests: 10, period: 5m, buckets: 1}\n"
                       "      - {algorithm: sliding_window, requests: 10, period: 5m, "
                       "buckets: 60}\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;
    uint64_t ids[2] = {0, 0};
    int rc = load(b, text, &r);

    (void)st;
    print_diags(b);
    assert_int_equal(rc, SL_OK);
    sl_rules_foreach_limit(r, note_buckets, ids);
    assert_true(ids[0] != 0 && ids[1] != 0);
    assert_true(ids[0] != ids[1]);
    sl_rules_unref(r);
    sl_rules_builder_free(b);
}

static void too_many_limits(void **st)
{
    char text[2048];
    size_t off = (size_t)snprintf(text, sizeof(text),
                                  "domain: x\ndescriptors:\n  - key: u\n"
                                  "    limits:\n");
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    for (int i = 0; i <= SL_MAX_LIMITS; i++)
        off += (size_t)snprintf(text + off, sizeof(text) - off,
                                "      - {algorithm: gcra, requests: %d, period: 1s}\n", i + 1);
    assert_int_equal(load(b, text, &r), SL_EPARSE);
    assert_true(has_diag(b, "t.yaml:13:9:", "at most"));
    sl_rules_builder_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(envoy_file_loads),
        cmocka_unit_test(each_error_has_position),
        cmocka_unit_test(all_errors_at_once),
        cmocka_unit_test(empty_descriptors_and_zero_requests_load),
        cmocka_unit_test(rlqs_domain_with_rates_loads),
        cmocka_unit_test(nothing_half_loaded),
        cmocka_unit_test(duplicate_domain_across_files),
        cmocka_unit_test(every_algorithm_and_extension_key),
        cmocka_unit_test(sliding_window_buckets),
        cmocka_unit_test(too_many_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
