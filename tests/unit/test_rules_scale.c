/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rules_scale.c - building rules does O(n log n) work in sibling
 * descriptors: the library is compiled again for this test with
 * SL_RULES_COUNT_OPS, which counts comparisons of descriptor identities and
 * pointers moved when arrays grow (sl__rules_ops), and the count for 2N
 * siblings must stay near twice that for N (N^2 work would be four times),
 * within a bound of a few N log2 N. Counted for one text (the duplicate
 * check), for many database texts merged into one domain, and for many
 * domains in one file. Also: merging many texts keeps its meaning (a later
 * text wins, new descriptors keep the texts' order), and duplicates are
 * still found.
 *
 * It never measures time (bench_table's lib.rules.* lines do).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rules/rules_int.h"

/* A growable text. */
struct text {
    char *p;
    size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;

    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap ? 2 * t->cap : 4096;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
}

/* Value i of n, in an order that is not sorted (sorted input is the best
 * case of some sorts and the worst of others). */
static unsigned value_of(unsigned i)
{
    return (i * 2654435761u) % 1000003u;
}

static void build_ok(sl_rules_builder *b)
{
    sl_rules *r = NULL;

    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
        print_message("%s\n", sl_rules_builder_diag(b, i));
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    sl_rules_unref(r);
    sl_rules_builder_free(b);
}

/* Work to parse and build one domain of n sibling descriptors. */
static unsigned long long ops_siblings(unsigned n)
{
    struct text t = {0};
    sl_rules_builder *b = sl_rules_builder_new();

    put(&t, "domain: d\ndescriptors:\n");
    for (unsigned i = 0; i < n; i++)
        put(&t, "  - {key: user, value: u%u, rate_limit: {unit: hour, requests_per_unit: 5}}\n",
            value_of(i));
    sl__rules_ops = 0;
    assert_int_equal(sl_rules_builder_add_yaml(b, t.p, t.len, "t.yaml", SL_SRC_FILE), SL_OK);
    build_ok(b);
    free(t.p);
    return sl__rules_ops;
}

/* Work to merge n database texts of one descriptor each into a file domain
 * of n descriptors, half of them overriding the file's. */
static unsigned long long ops_db_merge(unsigned n)
{
    struct text t = {0};
    sl_rules_builder *b = sl_rules_builder_new();

    put(&t, "domain: d\ndescriptors:\n");
    for (unsigned i = 0; i < n; i++)
        put(&t, "  - {key: user, value: u%u, rate_limit: {unit: hour, requests_per_unit: 5}}\n",
            value_of(i));
    sl__rules_ops = 0;
    assert_int_equal(sl_rules_builder_add_yaml(b, t.p, t.len, "t.yaml", SL_SRC_FILE), SL_OK);
    for (unsigned i = 0; i < n; i++) {
        char row[160], origin[32];
        int len = snprintf(row, sizeof(row),
                           "domain: d\ndescriptors:\n  - {key: user, value: u%u, rate_limit: "
                           "{unit: hour, requests_per_unit: 9}}\n",
                           value_of(i % 2 ? i : n + i));
        snprintf(origin, sizeof(origin), "db:%u", i);
        assert_int_equal(sl_rules_builder_add_yaml(b, row, (size_t)len, origin, SL_SRC_DB), SL_OK);
    }
    build_ok(b);
    free(t.p);
    return sl__rules_ops;
}

/* Work for n domains (documents) in one file. */
static unsigned long long ops_domains(unsigned n)
{
    struct text t = {0};
    sl_rules_builder *b = sl_rules_builder_new();

    for (unsigned i = 0; i < n; i++)
        put(&t, "---\ndomain: d%u\ndescriptors:\n  - {key: k}\n", value_of(i));
    sl__rules_ops = 0;
    assert_int_equal(sl_rules_builder_add_yaml(b, t.p, t.len, "t.yaml", SL_SRC_FILE), SL_OK);
    build_ok(b);
    free(t.p);
    return sl__rules_ops;
}

/* ops(2N) / ops(N) near 2 (2.2 for N log N at these sizes; N^2 gives 4),
 * and ops(N) within 4 M log2 M for the M = per_n * N descriptors or
 * domains involved. */
static void assert_n_log_n(unsigned long long (*ops)(unsigned), unsigned per_n, const char *what)
{
    const unsigned n = 4000;
    unsigned long long one = ops(n), two = ops(2 * n);
    double ratio = (double)two / (double)(one ? one : 1), m = (double)per_n * n;

    print_message("%s: %llu ops for %u, %llu for %u (x%.2f)\n", what, one, n, two, 2 * n, ratio);
    assert_true(one > 0);
    assert_true(ratio < 2.6);
    assert_true((double)one <= 4.0 * m * log2(m));
}

static void test_siblings_n_log_n(void **st)
{
    (void)st;
    assert_n_log_n(ops_siblings, 1, "siblings in one text");
}

static void test_db_merge_n_log_n(void **st)
{
    (void)st;
    assert_n_log_n(ops_db_merge, 2, "database texts merged into a file domain");
}

static void test_domains_n_log_n(void **st)
{
    (void)st;
    assert_n_log_n(ops_domains, 1, "domains in one file");
}

/* The limit the rule of `value` (under key `k`, domain d) has, or 0. */
static uint64_t requests_of(const sl_rules *r, const char *key, const char *value)
{
    struct sl_entry e = {{key, strlen(key)}, {value, strlen(value)}};
    struct sl_descriptor desc = {.entries = &e, .n_entries = 1};
    struct sl_request req = {.domain = {"d", 1}, .descriptors = &desc, .n_descriptors = 1};
    struct sl_match m;

    assert_int_equal(sl_rules_match(r, &req, 0, &m), SL_OK);
    return m.n_limits ? m.limits[0]->requests : 0;
}

/* Three database texts over a file: the last one stating a policy wins
 * at each descriptor, children merge level by level, and descriptors new
 * to the file keep the order of the texts (wildcards are tried in it). */
static void test_merge_meaning(void **st)
{
    static const char file[] = "domain: d\ndescriptors:\n"
                               "  - {key: a, value: x, rate_limit: {unit: hour, "
                               "requests_per_unit: 1}}\n"
                               "  - key: b\n    descriptors:\n      - {key: c, rate_limit: "
                               "{unit: hour, requests_per_unit: 2}}\n";
    static const char *const db[] = {
        ("domain: d\ndescriptors:\n  - {key: a, value: x, rate_limit: {unit: hour, "
         "requests_per_unit: 10}}\n  - {key: w, value: 'p*', rate_limit: {unit: hour, "
         "requests_per_unit: 3}}\n"),
        ("domain: d\ndescriptors:\n  - {key: a, value: x, rate_limit: {unit: hour, "
         "requests_per_unit: 20}}\n  - {key: w, value: '*', rate_limit: {unit: hour, "
         "requests_per_unit: 4}}\n"),
        ("domain: d\ndescriptors:\n  - {key: a, value: x}\n  - key: b\n    descriptors:\n"
         "      - {key: e, rate_limit: {unit: hour, requests_per_unit: 5}}\n"),
    };
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    (void)st;
    assert_int_equal(sl_rules_builder_add_yaml(b, file, strlen(file), "f.yaml", SL_SRC_FILE),
                     SL_OK);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sl_rules_builder_add_yaml(b, db[i], strlen(db[i]), "db", SL_SRC_DB),
                         SL_OK);
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    assert_int_equal(requests_of(r, "a", "x"), 20); /* the third states no policy */
    assert_int_equal(requests_of(r, "w", "pq"), 3); /* 'p*' came first */
    assert_int_equal(requests_of(r, "w", "zz"), 4);

    struct sl_entry e2[2] = {{{"b", 1}, {"v", 1}}, {{"c", 1}, {"v", 1}}};
    struct sl_descriptor desc = {.entries = e2, .n_entries = 2};
    struct sl_request req = {.domain = {"d", 1}, .descriptors = &desc, .n_descriptors = 1};
    struct sl_match m;
    assert_int_equal(sl_rules_match(r, &req, 0, &m), SL_OK);
    assert_int_equal(m.n_limits, 1);
    assert_int_equal(m.limits[0]->requests, 2);
    e2[1].key = (struct sl_str){"e", 1};
    assert_int_equal(sl_rules_match(r, &req, 0, &m), SL_OK);
    assert_int_equal(m.n_limits, 1);
    assert_int_equal(m.limits[0]->requests, 5);
    sl_rules_unref(r);
    sl_rules_builder_free(b);
}

/* Duplicates among many siblings are all found, each against the first. */
static void test_duplicates_found(void **st)
{
    struct text t = {0};
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    (void)st;
    put(&t, "domain: d\ndescriptors:\n");
    for (unsigned i = 0; i < 1000; i++)
        put(&t, "  - {key: user, value: u%u}\n", value_of(i));
    put(&t, "  - {key: user, value: u%u}\n", value_of(10));  /* line 1003, as 13 */
    put(&t, "  - {key: user, value: u%u}\n", value_of(500)); /* line 1004, as 503 */
    put(&t, "  - {key: user}\n  - {key: user}\n");           /* lines 1005, 1006 */
    assert_int_equal(sl_rules_builder_add_yaml(b, t.p, t.len, "t.yaml", SL_SRC_FILE), SL_EPARSE);
    assert_int_equal(sl_rules_builder_ndiags(b), 3); /* in the text's order */
    assert_non_null(strstr(sl_rules_builder_diag(b, 0), "t.yaml:1003:5: duplicate descriptor"));
    assert_non_null(strstr(sl_rules_builder_diag(b, 0), "first defined at line 13)"));
    assert_non_null(strstr(sl_rules_builder_diag(b, 1), "t.yaml:1004:5: duplicate descriptor"));
    assert_non_null(strstr(sl_rules_builder_diag(b, 1), "first defined at line 503)"));
    assert_non_null(strstr(sl_rules_builder_diag(b, 2), "t.yaml:1006:5: duplicate descriptor"));
    assert_non_null(strstr(sl_rules_builder_diag(b, 2), "first defined at line 1005)"));
    assert_int_equal(sl_rules_build(b, &r), SL_EPARSE);
    sl_rules_builder_free(b);
    free(t.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siblings_n_log_n), cmocka_unit_test(test_db_merge_n_log_n),
        cmocka_unit_test(test_domains_n_log_n),  cmocka_unit_test(test_merge_meaning),
        cmocka_unit_test(test_duplicates_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
