/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rules_match.c - descriptor matching as envoyproxy/ratelimit does it
 * (exact > wildcard > key-only, same depth, nested), counter keys, the
 * flags carried in sl_match, and database rules overriding file rules.
 *
 * Decisions over matched limits are in test_rules_check.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"
#include "sluice_int.h"

static const char rules_text[] = "domain: m\n"
                                 "descriptors:\n"
                                 "  - key: k\n"
                                 "    value: exact\n"
                                 "    rate_limit: {unit: second, requests_per_unit: 1}\n"
                                 "  - key: k\n"
                                 "    value: ex*\n"
                                 "    rate_limit: {unit: second, requests_per_unit: 2}\n"
                                 "  - key: k\n"
                                 "    rate_limit: {unit: second, requests_per_unit: 3}\n"
                                 "  - key: files\n"
                                 "    value: f/*\n"
                                 "    share_threshold: true\n"
                                 "    rate_limit: {unit: minute, requests_per_unit: 4}\n"
                                 "  - key: a\n"
                                 "    descriptors:\n"
                                 "      - key: b\n"
                                 "        value: x\n"
                                 "        rate_limit: {unit: hour, requests_per_unit: 5}\n"
                                 "      - key: b\n"
                                 "        descriptors:\n"
                                 "          - key: c\n"
                                 "            rate_limit: {unit: day, requests_per_unit: 6}\n"
                                 "  - key: free\n"
                                 "    rate_limit: {unlimited: true}\n"
                                 "  - key: user\n"
                                 "    shadow_mode: true\n"
                                 "    quota_mode: true\n"
                                 "    detailed_metric: true\n"
                                 "    metadata: {plan: \"gold\"}\n"
                                 "    limits:\n"
                                 "      - {algorithm: gcra, requests: 10, period: 1m}\n"
                                 "      - {algorithm: sliding_log, requests: 1, period: 2s, "
                                 "name: spacing}\n";

static sl_rules *build(const char *file, const char *db)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    assert_int_equal(sl_rules_builder_add_yaml(b, file, strlen(file), "f.yaml", SL_SRC_FILE),
                     SL_OK);
    if (db != NULL)
        assert_int_equal(sl_rules_builder_add_yaml(b, db, strlen(db), "db:1", SL_SRC_DB), SL_OK);
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    sl_rules_builder_free(b);
    return r;
}

#define S(x)                                                                                       \
    {                                                                                              \
        (x), sizeof(x) - 1                                                                         \
    }

/* Match one descriptor of up to three entries (NULL-terminated pairs). */
static int match(const sl_rules *r, const char *domain, const char *const *kv, struct sl_match *m)
{
    struct sl_entry e[4];
    size_t n = 0;
    struct sl_descriptor d;
    struct sl_request req = {0};

    for (; kv[2 * n] != NULL; n++) {
        e[n].key = (struct sl_str){kv[2 * n], strlen(kv[2 * n])};
        e[n].value = (struct sl_str){kv[2 * n + 1], strlen(kv[2 * n + 1])};
    }
    d = (struct sl_descriptor){.entries = e, .n_entries = n, .hits = -1};
    req.domain = (struct sl_str){domain, strlen(domain)};
    req.descriptors = &d;
    req.n_descriptors = 1;
    req.hits = 1;
    return sl_rules_match(r, &req, 0, m);
}

/* requests of the single matched limit, 0 when nothing matched. */
static uint64_t matched_requests(const sl_rules *r, const char *const *kv)
{
    struct sl_match m;

    assert_int_equal(match(r, "m", kv, &m), SL_OK);
    if (m.n_limits == 0)
        return 0;
    assert_int_equal(m.n_limits, 1);
    return m.limits[0]->requests;
}

static void precedence(void **st)
{
    sl_rules *r = build(rules_text, NULL);
    struct sl_match m;

    assert_int_equal(matched_requests(r, (const char *[]){"k", "exact", NULL}), 1);
    assert_int_equal(matched_requests(r, (const char *[]){"k", "extra", NULL}), 2);
    assert_int_equal(matched_requests(r, (const char *[]){"k", "other", NULL}), 3);
    assert_int_equal(matched_requests(r, (const char *[]){"k", "", NULL}), 3);
    assert_int_equal(matched_requests(r, (const char *[]){"nokey", "x", NULL}), 0);
    assert_int_equal(match(r, "m", (const char *[]){"k", "exact", NULL}, &m), SL_OK);
    assert_string_equal(m.limits[0]->name, "m.k_exact");
    assert_int_equal(m.limits[0]->algo, SL_ALGO_FIXED_WINDOW);
    assert_int_equal(m.limits[0]->period_ns, SL_NS_PER_S);
    sl_rules_unref(r);
}

static void depth_and_nesting(void **st)
{
    sl_rules *r = build(rules_text, NULL);

    assert_int_equal(matched_requests(r, (const char *[]){"a", "1", "b", "x", NULL}), 5);
    assert_int_equal(matched_requests(r, (const char *[]){"a", "1", "b", "y", "c", "z", NULL}), 6);
    /* no limit at b=y itself; b=x has no children; a alone has no limit */
    assert_int_equal(matched_requests(r, (const char *[]){"a", "1", "b", "y", NULL}), 0);
    assert_int_equal(matched_requests(r, (const char *[]){"a", "1", "b", "x", "c", "z", NULL}), 0);
    assert_int_equal(matched_requests(r, (const char *[]){"a", "1", NULL}), 0);
    /* deeper than the rule */
    assert_int_equal(matched_requests(r, (const char *[]){"k", "exact", "k", "x", NULL}), 0);
    sl_rules_unref(r);
}

static void counter_keys(void **st)
{
    sl_rules *r = build(rules_text, NULL);
    struct sl_match m1, m2, m3;

    /* key-only: one counter per value */
    match(r, "m", (const char *[]){"k", "other1", NULL}, &m1);
    match(r, "m", (const char *[]){"k", "other2", NULL}, &m2);
    match(r, "m", (const char *[]){"k", "other1", NULL}, &m3);
    assert_true(m1.key_len > 0);
    assert_false(m1.key_len == m2.key_len && memcmp(m1.key, m2.key, m1.key_len) == 0);
    assert_memory_equal(m1.key, m3.key, m1.key_len);
    /* wildcard without share_threshold: one counter per value */
    match(r, "m", (const char *[]){"k", "exa", NULL}, &m1);
    match(r, "m", (const char *[]){"k", "exb", NULL}, &m2);
    assert_false(m1.key_len == m2.key_len && memcmp(m1.key, m2.key, m1.key_len) == 0);
    /* share_threshold: one counter for all values */
    match(r, "m", (const char *[]){"files", "f/a.pdf", NULL}, &m1);
    match(r, "m", (const char *[]){"files", "f/b.csv", NULL}, &m2);
    assert_int_equal(m1.n_limits, 1);
    assert_int_equal(m1.key_len, m2.key_len);
    assert_memory_equal(m1.key, m2.key, m1.key_len);
    sl_rules_unref(r);
}

static void flags_and_unlimited(void **st)
{
    sl_rules *r = build(rules_text, NULL);
    struct sl_match m;

    assert_int_equal(match(r, "m", (const char *[]){"free", "x", NULL}, &m), SL_OK);
    assert_true(m.unlimited);
    assert_int_equal(m.n_limits, 0);
    assert_int_equal(match(r, "m", (const char *[]){"user", "u1", NULL}, &m), SL_OK);
    assert_int_equal(m.n_limits, 2);
    assert_true(m.limits[0]->shadow && m.limits[1]->shadow);
    assert_string_equal(m.limits[0]->name, "m.user#1");
    assert_string_equal(m.limits[1]->name, "spacing");
    assert_true(m.quota_mode);
    assert_string_equal(m.detailed_metric, "m.user");
    assert_string_equal(m.metadata_json, "{\"plan\":\"gold\"}");
    assert_int_equal(match(r, "nodomain", (const char *[]){"k", "x", NULL}, &m), SL_OK);
    assert_int_equal(m.n_limits, 0);
    assert_false(m.unlimited);
    sl_rules_unref(r);
}

static void caps(void **st)
{
    sl_rules *r = build(rules_text, NULL);
    struct sl_match m;
    char big[SL_KEY_MAX + 10];
    struct sl_request req = {.domain = S("m")};

    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(match(r, "m", (const char *[]){"k", big, NULL}, &m), SL_ETOOBIG);
    assert_int_equal(m.n_limits, 0);
    assert_int_equal(sl_rules_match(r, &req, 0, &m), SL_EINVAL);
    sl_rules_unref(r);
}

static void database_overrides_file(void **st)
{
    const char *db = "domain: m\n"
                     "descriptors:\n"
                     "  - key: k\n"
                     "    value: exact\n"
                     "    rate_limit: {unit: second, requests_per_unit: 100}\n"
                     "  - key: a\n"
                     "    descriptors:\n"
                     "      - key: b\n"
                     "        value: new\n"
                     "        rate_limit: {unit: hour, requests_per_unit: 7}\n"
                     "---\n"
                     "domain: only_db\n"
                     "descriptors:\n"
                     "  - key: q\n"
                     "    rate_limit: {unit: second, requests_per_unit: 9}\n";
    const char *db2 = "domain: m\n"
                      "descriptors:\n"
                      "  - key: k\n"
                      "    value: exact\n"
                      "    rate_limit: {unit: second, requests_per_unit: 200}\n";
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;
    struct sl_match m;

    sl_rules_builder_add_yaml(b, db2, strlen(db2), "db:late", SL_SRC_DB); /* added first... */
    sl_rules_builder_add_yaml(b, rules_text, strlen(rules_text), "f.yaml", SL_SRC_FILE);
    sl_rules_builder_add_yaml(b, db, strlen(db), "db:1", SL_SRC_DB); /* ...so this one wins */
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    assert_int_equal(matched_requests(r, (const char *[]){"k", "exact", NULL}), 100);
    /* the file's siblings stay, the database's new ones join */
    assert_int_equal(matched_requests(r, (const char *[]){"k", "extra", NULL}), 2);
    assert_int_equal(matched_requests(r, (const char *[]){"a", "1", "b", "x", NULL}), 5);
    assert_int_equal(matched_requests(r, (const char *[]){"a", "1", "b", "new", NULL}), 7);
    assert_int_equal(match(r, "only_db", (const char *[]){"q", "1", NULL}, &m), SL_OK);
    assert_int_equal(m.limits[0]->requests, 9);
    sl_rules_unref(r);
    sl_rules_builder_free(b);
}

static void glob(void **st)
{
    const char *t = "domain: g\ndescriptors:\n"
                    "  - key: p\n    value: \"/api/*/users/*\"\n"
                    "    rate_limit: {unit: second, requests_per_unit: 1}\n";
    sl_rules *r = build(t, NULL);
    struct sl_match m;

    match(r, "g", (const char *[]){"p", "/api/v1/users/42", NULL}, &m);
    assert_int_equal(m.n_limits, 1);
    match(r, "g", (const char *[]){"p", "/api/v1/groups/42", NULL}, &m);
    assert_int_equal(m.n_limits, 0);
    match(r, "g", (const char *[]){"p", "/api//users/", NULL}, &m);
    assert_int_equal(m.n_limits, 1);
    sl_rules_unref(r);
}

/* Entries of a map (a rate limit quota bucket id): matched in whichever
 * order is a path of the tree, with the key and limits sl_rules_match()
 * gives that order; a partial path or a missing level matches nothing. */
static void unordered(void **st)
{
    sl_rules *r = build(rules_text, NULL);
    struct sl_match ordered, any;
    struct sl_entry e[3] = {{S("c"), S("3")}, {S("b"), S("y")}, {S("a"), S("1")}};

    assert_int_equal(match(r, "m", (const char *[]){"a", "1", "b", "y", "c", "3", NULL}, &ordered),
                     SL_OK);
    assert_int_equal(ordered.n_limits, 1);
    assert_int_equal(sl__rules_match_unordered(r, (struct sl_str)S("m"), e, 3, &any), SL_OK);
    assert_int_equal(any.n_limits, 1);
    assert_ptr_equal(any.limits[0], ordered.limits[0]);
    assert_int_equal(any.key_len, ordered.key_len);
    assert_memory_equal(any.key, ordered.key, ordered.key_len);
    assert_string_equal(any.rule_path, ordered.rule_path);
    /* two of the three levels: no rule ends there */
    assert_int_equal(sl__rules_match_unordered(r, (struct sl_str)S("m"), e + 1, 2, &any), SL_OK);
    assert_int_equal(any.n_limits, 0);
    /* b=x ends at a rule after a */
    struct sl_entry bx[2] = {{S("b"), S("x")}, {S("a"), S("1")}};
    assert_int_equal(sl__rules_match_unordered(r, (struct sl_str)S("m"), bx, 2, &any), SL_OK);
    assert_int_equal(any.n_limits, 1);
    assert_int_equal(any.limits[0]->requests, 5);
    /* an entry no rule knows: nothing */
    struct sl_entry extra[2] = {{S("k"), S("exact")}, {S("zzz"), S("1")}};
    assert_int_equal(sl__rules_match_unordered(r, (struct sl_str)S("m"), extra, 2, &any), SL_OK);
    assert_int_equal(any.n_limits, 0);
    /* one entry: as sl_rules_match; unknown domain: nothing */
    assert_int_equal(sl__rules_match_unordered(r, (struct sl_str)S("m"), extra, 1, &any), SL_OK);
    assert_int_equal(any.limits[0]->requests, 1);
    assert_int_equal(sl__rules_match_unordered(r, (struct sl_str)S("nope"), extra, 1, &any), SL_OK);
    assert_int_equal(any.n_limits, 0);
    assert_int_equal(sl__rules_match_unordered(r, (struct sl_str)S("m"), extra, 0, &any),
                     SL_EINVAL);
    sl_rules_unref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(precedence),   cmocka_unit_test(depth_and_nesting),
        cmocka_unit_test(counter_keys), cmocka_unit_test(flags_and_unlimited),
        cmocka_unit_test(caps),         cmocka_unit_test(database_overrides_file),
        cmocka_unit_test(glob),         cmocka_unit_test(unordered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
