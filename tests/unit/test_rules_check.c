/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rules_check.c - sl_limiter_check over rules: replaces, unlimited,
 * shadow_mode, quota_mode and several limits on one descriptor, decided by
 * the real limiter with a deterministic clock.
 *
 * The algorithms' own traces are tested in test_algo_*.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"

#define T0 (INT64_C(1700000040) * SL_NS_PER_S) /* a minute boundary */

struct fx {
    sl_rules *r;
    sl_limiter *lim;
};

static const char rules_text[] =
    "domain: c\n"
    "descriptors:\n"
    "  - key: a\n"
    "    rate_limit: {unit: minute, requests_per_unit: 1, name: a,\n"
    "                 replaces: [{name: b}]}\n"
    "  - key: b\n"
    "    rate_limit: {unit: minute, requests_per_unit: 1, name: b}\n"
    "  - key: free\n"
    "    rate_limit: {unlimited: true}\n"
    "  - key: shadow\n"
    "    shadow_mode: true\n"
    "    rate_limit: {unit: minute, requests_per_unit: 1}\n"
    "  - key: q1\n"
    "    quota_mode: true\n"
    "    rate_limit: {unit: minute, requests_per_unit: 1}\n"
    "  - key: q2\n"
    "    quota_mode: true\n"
    "    rate_limit: {unit: minute, requests_per_unit: 2}\n"
    "  - key: banned\n"
    "    rate_limit: {unit: minute, requests_per_unit: 0, name: banned}\n"
    "  - key: qb\n"
    "    quota_mode: true\n"
    "    rate_limit: {unit: minute, requests_per_unit: 0}\n"
    "  - key: sb\n"
    "    shadow_mode: true\n"
    "    rate_limit: {unit: minute, requests_per_unit: 0}\n"
    "  - key: user\n"
    "    limits:\n"
    "      - {algorithm: fixed_window, requests: 10, period: 1m, name: per-minute}\n"
    "      - {algorithm: sliding_log, requests: 1, period: 2s, name: spacing}\n";

static int setup(void **st)
{
    static struct fx f;
    struct sl_limiter_config c;
    sl_rules_builder *b = sl_rules_builder_new();

    assert_int_equal(
        sl_rules_builder_add_yaml(b, rules_text, strlen(rules_text), "c.yaml", SL_SRC_FILE), SL_OK);
    assert_int_equal(sl_rules_build(b, &f.r), SL_OK);
    sl_rules_builder_free(b);
    sl_limiter_config_init(&c);
    c.table.max_bytes = 1 << 20;
    assert_int_equal(sl_limiter_new(&c, &f.lim), SL_OK);
    *st = &f;
    return 0;
}

static int teardown(void **st)
{
    struct fx *f = *st;

    sl_limiter_free(f->lim);
    sl_rules_unref(f->r);
    return 0;
}

/* Check one request whose descriptors are one entry each ("key=value"). */
static enum sl_verdict check(struct fx *f, int64_t t, const char *const *keys, size_t n,
                             struct sl_result *res)
{
    struct sl_entry e[8];
    struct sl_descriptor d[8];
    struct sl_request req = {.domain = {"c", 1}, .hits = 1, .now_ns = t};

    for (size_t i = 0; i < n; i++) {
        e[i].key = (struct sl_str){keys[i], strlen(keys[i])};
        e[i].value = (struct sl_str){"v", 1};
        d[i] = (struct sl_descriptor){.entries = &e[i], .n_entries = 1, .hits = -1};
    }
    req.descriptors = d;
    req.n_descriptors = n;
    assert_int_equal(sl_limiter_check(f->lim, f->r, &req, res), SL_OK);
    assert_int_equal(res->n_statuses, n);
    return res->verdict;
}

static void replaces_drops_the_named_limit(void **st)
{
    struct fx *f = *st;
    struct sl_result res;

    /* b alone is limited to one per minute */
    assert_int_equal(check(f, T0, (const char *[]){"b"}, 1, &res), SL_ALLOW);
    assert_int_equal(check(f, T0 + 1, (const char *[]){"b"}, 1, &res), SL_DENY);
    assert_string_equal(res.statuses[0].limit->name, "b");
    /* with a, b's limit is replaced: only a counts */
    assert_int_equal(check(f, T0 + 2, (const char *[]){"a", "b"}, 2, &res), SL_ALLOW);
    assert_null(res.statuses[1].limit);
    assert_string_equal(res.statuses[0].limit->name, "a");
    assert_int_equal(check(f, T0 + 3, (const char *[]){"b", "a"}, 2, &res), SL_DENY);
    assert_string_equal(res.statuses[1].limit->name, "a");
    assert_null(res.statuses[0].limit);
}

static void unlimited_always_allows(void **st)
{
    struct fx *f = *st;
    struct sl_result res;

    for (int i = 0; i < 100; i++) {
        assert_int_equal(check(f, T0 + i, (const char *[]){"free"}, 1, &res), SL_ALLOW);
        assert_null(res.statuses[0].limit);
    }
}

static void shadow_counts_but_never_denies(void **st)
{
    struct fx *f = *st;
    struct sl_result res;

    assert_int_equal(check(f, T0, (const char *[]){"shadow"}, 1, &res), SL_ALLOW);
    assert_false(res.statuses[0].shadow_denied);
    assert_int_equal(check(f, T0 + 1, (const char *[]){"shadow"}, 1, &res), SL_ALLOW);
    assert_true(res.statuses[0].shadow_denied);
    assert_int_equal(res.statuses[0].d.remaining, 0);
}

static void quota_mode_denies_when_all_quota_descriptors_do(void **st)
{
    struct fx *f = *st;
    struct sl_result res;
    const char *both[] = {"q1", "q2"};

    assert_int_equal(check(f, T0, both, 2, &res), SL_ALLOW);
    /* q1 is over, q2 is not: allowed, q1 reported as denied */
    assert_int_equal(check(f, T0 + 1, both, 2, &res), SL_ALLOW);
    assert_int_equal(res.statuses[0].d.verdict, SL_DENY);
    assert_int_equal(res.statuses[1].d.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[1].d.remaining, 0);
    /* now both are over */
    assert_int_equal(check(f, T0 + 2, both, 2, &res), SL_DENY);
    /* a normal descriptor over its limit denies whatever the quota ones say */
    assert_int_equal(check(f, T0 + 3, (const char *[]){"b"}, 1, &res), SL_ALLOW);
    assert_int_equal(check(f, T0 + 4, (const char *[]){"b"}, 1, &res), SL_DENY);
}

static void several_limits_on_one_descriptor(void **st)
{
    struct fx *f = *st;
    struct sl_result res;
    const char *u[] = {"user"};

    assert_int_equal(check(f, T0, u, 1, &res), SL_ALLOW);
    assert_int_equal(check(f, T0 + SL_NS_PER_S, u, 1, &res), SL_DENY);
    assert_string_equal(res.statuses[0].limit->name, "spacing");
    assert_int_equal(res.statuses[0].d.retry_after_ns, SL_NS_PER_S);
    /* ten every two seconds pass, the eleventh in the minute is denied by per-minute */
    for (int i = 1; i < 10; i++)
        assert_int_equal(check(f, T0 + 2 * i * SL_NS_PER_S, u, 1, &res), SL_ALLOW);
    assert_int_equal(check(f, T0 + 20 * SL_NS_PER_S, u, 1, &res), SL_DENY);
    assert_string_equal(res.statuses[0].limit->name, "per-minute");
}

/* Envoy's requests_per_unit: 0 denies every request and counts nothing. */
static void zero_requests_denies_everything(void **st)
{
    struct fx *f = *st;
    struct sl_result res;

    assert_int_equal(check(f, T0 + 5, (const char *[]){"banned"}, 1, &res), SL_DENY);
    assert_string_equal(res.statuses[0].limit->name, "banned");
    assert_int_equal(res.statuses[0].d.quota, 0);
    assert_int_equal(res.statuses[0].d.retry_after_ns, -1);
    assert_int_equal(res.statuses[0].d.reset_ns, 60 * SL_NS_PER_S - 5);
    /* b is not counted by the denied request: its one request is still there */
    assert_int_equal(check(f, T0 + 6, (const char *[]){"b", "banned"}, 2, &res), SL_DENY);
    assert_int_equal(res.statuses[0].d.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[0].d.remaining, 1);
    assert_int_equal(check(f, T0 + 7, (const char *[]){"b"}, 1, &res), SL_ALLOW);
    /* quota mode: denied only when every quota descriptor is */
    assert_int_equal(check(f, T0 + 8, (const char *[]){"qb", "q2"}, 2, &res), SL_ALLOW);
    assert_int_equal(res.statuses[0].d.verdict, SL_DENY);
    assert_int_equal(check(f, T0 + 9, (const char *[]){"qb"}, 1, &res), SL_DENY);
    /* shadow: reported, never enforced */
    assert_int_equal(check(f, T0 + 10, (const char *[]){"sb"}, 1, &res), SL_ALLOW);
    assert_true(res.statuses[0].shadow_denied);
    assert_non_null(res.statuses[0].limit);
}

static void errors(void **st)
{
    struct fx *f = *st;
    struct sl_result res;
    struct sl_request req = {
        .domain = {"c", 1}, .hits = 1, .n_descriptors = SL_MAX_DESCRIPTORS + 1};
    struct sl_descriptor d[SL_MAX_DESCRIPTORS + 1];

    memset(d, 0, sizeof(d));
    req.descriptors = d;
    assert_int_equal(sl_limiter_check(f->lim, f->r, &req, &res), SL_ETOOBIG);
    assert_int_equal(sl_limiter_check(f->lim, NULL, &req, &res), SL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(replaces_drops_the_named_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(unlimited_always_allows, setup, teardown),
        cmocka_unit_test_setup_teardown(shadow_counts_but_never_denies, setup, teardown),
        cmocka_unit_test_setup_teardown(quota_mode_denies_when_all_quota_descriptors_do, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(several_limits_on_one_descriptor, setup, teardown),
        cmocka_unit_test_setup_teardown(zero_requests_denies_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
