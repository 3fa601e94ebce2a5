/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rules_check.c - sl_limiter_check over rules: replaces, unlimited,
 * shadow_mode, quota_mode, several limits on one descriptor and a domain's
 * on_unmatched, decided by the real limiter with a deterministic clock.
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

/* ------------------------------------------------------------ on_unmatched */

static const char unmatched_text[] = "domain: u\n"
                                     "on_unmatched: deny\n"
                                     "descriptors:\n"
                                     "  - key: user\n"
                                     "    rate_limit: {unit: minute, requests_per_unit: 3}\n"
                                     "    descriptors:\n"
                                     "      - key: path\n"
                                     "        rate_limit: {unit: minute, requests_per_unit: 1}\n"
                                     "  - key: free\n"
                                     "    rate_limit: {unlimited: true}\n"
                                     "  - key: group\n"
                                     "    descriptors:\n"
                                     "      - key: member\n"
                                     "        rate_limit: {unit: minute, requests_per_unit: 5}\n";

static sl_rules *build(const char *file, const char *db)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    assert_int_equal(sl_rules_builder_add_yaml(b, file, strlen(file), "u.yaml", SL_SRC_FILE),
                     SL_OK);
    if (db != NULL)
        assert_int_equal(sl_rules_builder_add_yaml(b, db, strlen(db), "db:row", SL_SRC_DB), SL_OK);
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    sl_rules_builder_free(b);
    return r;
}

/* Check one request of domain u: descriptors separated by "|", each a
 * list of "key=value" entries separated by "&" ("" is no entry). */
static enum sl_verdict check_u(struct fx *f, const sl_rules *r, int64_t t, const char *spec,
                               struct sl_result *res)
{
    static char buf[256];
    struct sl_entry e[8][4];
    struct sl_descriptor d[8];
    struct sl_request req = {.domain = {"u", 1}, .hits = 1, .now_ns = t, .descriptors = d};
    char *desc, *save_d, *ent, *save_e;

    snprintf(buf, sizeof(buf), "%s", spec);
    for (desc = strtok_r(buf, "|", &save_d); desc != NULL; desc = strtok_r(NULL, "|", &save_d)) {
        size_t i = req.n_descriptors++, n = 0;
        for (ent = strtok_r(desc, "&", &save_e); ent != NULL; ent = strtok_r(NULL, "&", &save_e)) {
            char *eq = strchr(ent, '=');
            if (eq == NULL)
                continue; /* "-": a descriptor without entries */
            e[i][n].key = (struct sl_str){ent, (size_t)(eq - ent)};
            e[i][n].value = (struct sl_str){eq + 1, strlen(eq + 1)};
            n++;
        }
        d[i] = (struct sl_descriptor){.entries = e[i], .n_entries = n, .hits = -1};
    }
    assert_int_equal(sl_limiter_check(f->lim, r, &req, res), SL_OK);
    return res->verdict;
}

/* What a client gets for shaping its descriptor until no rule matches:
 * nothing under on_unmatched: deny, and nothing of the request counted. */
static void unmatched_descriptors_are_denied(void **st)
{
    struct fx *f = *st;
    struct sl_result res;
    sl_rules *r = build(unmatched_text, NULL);

    assert_int_equal(check_u(f, r, T0, "user=carol", &res), SL_ALLOW);
    assert_int_equal(res.statuses[0].d.remaining, 2);
    assert_false(res.statuses[0].unmatched);
    /* an extra entry: no rule has that shape */
    assert_int_equal(check_u(f, r, T0 + 1, "user=carol&x=", &res), SL_DENY);
    assert_true(res.statuses[0].unmatched);
    assert_null(res.statuses[0].limit);
    assert_int_equal(res.statuses[0].d.retry_after_ns, -1);
    /* one unmatched descriptor denies the request; the others only peek */
    assert_int_equal(check_u(f, r, T0 + 2, "user=carol|nope=1", &res), SL_DENY);
    assert_int_equal(res.n_statuses, 2);
    assert_false(res.statuses[0].unmatched);
    assert_int_equal(res.statuses[0].d.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[0].d.remaining, 2); /* not consumed */
    assert_true(res.statuses[1].unmatched);
    assert_int_equal(check_u(f, r, T0 + 3, "user=carol", &res), SL_ALLOW);
    assert_int_equal(res.statuses[0].d.remaining, 1);
    /* matched: unlimited, nested; unmatched: a rule without limits, no entries */
    assert_int_equal(check_u(f, r, T0 + 4, "free=x", &res), SL_ALLOW);
    assert_int_equal(check_u(f, r, T0 + 5, "group=g&member=m", &res), SL_ALLOW);
    assert_int_equal(check_u(f, r, T0 + 6, "group=g", &res), SL_DENY);
    assert_true(res.statuses[0].unmatched);
    assert_int_equal(check_u(f, r, T0 + 7, "-", &res), SL_DENY);
    assert_true(res.statuses[0].unmatched);
    /* a domain without on_unmatched lets them through, as Envoy does */
    assert_int_equal(check(f, T0 + 8, (const char *[]){"nope"}, 1, &res), SL_ALLOW);
    assert_false(res.statuses[0].unmatched);
    assert_null(res.statuses[0].limit);
    sl_rules_unref(r);
}

/* The last text that states on_unmatched wins (database rows after files);
 * a value other than allow or deny is refused where it is written. */
static void unmatched_merges_and_validates(void **st)
{
    struct fx *f = *st;
    struct sl_result res;
    sl_rules *r = build(unmatched_text, "domain: u\non_unmatched: allow\n");
    sl_rules_builder *b = sl_rules_builder_new();
    static const char bad[] = "domain: u\non_unmatched: maybe\n";

    assert_int_equal(check_u(f, r, T0, "nope=1", &res), SL_ALLOW);
    sl_rules_unref(r);
    r = build("domain: u\ndescriptors:\n  - key: user\n"
              "    rate_limit: {unit: minute, requests_per_unit: 3}\n",
              "domain: u\non_unmatched: deny\n");
    assert_int_equal(check_u(f, r, T0, "nope=1", &res), SL_DENY);
    assert_int_equal(check_u(f, r, T0, "user=u", &res), SL_ALLOW);
    sl_rules_unref(r);
    assert_int_equal(sl_rules_builder_add_yaml(b, bad, strlen(bad), "bad.yaml", SL_SRC_FILE),
                     SL_EPARSE);
    assert_int_equal(sl_rules_builder_ndiags(b), 1);
    assert_non_null(strstr(sl_rules_builder_diag(b, 0), "bad.yaml:2:15: on_unmatched must be"));
    sl_rules_builder_free(b);
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
        cmocka_unit_test_setup_teardown(unmatched_descriptors_are_denied, setup, teardown),
        cmocka_unit_test_setup_teardown(unmatched_merges_and_validates, setup, teardown),
        cmocka_unit_test_setup_teardown(errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
