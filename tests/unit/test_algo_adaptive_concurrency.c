/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_algo_adaptive_concurrency.c - `algorithm: adaptive_concurrency`
 * (lib/algo/adaptive_concurrency.c, lib/rules/policy.c): the rules refuse
 * what does not fit (unknown controller, another controller's parameter,
 * no lease, keys of other algorithms) with a message saying so; through the
 * limiter, one slot per lease up to the controller's limit, a release with
 * a latency feeds the controller (aimd: above the timeout shrinks, below
 * grows), one without frees the slot only, an expired lease is a drop, an
 * unknown lease is SL_ENOENT, a cost above 1 is never admitted; the same
 * secret and trace give the same limits; the bare sl_adaptive_limit API
 * validates and finishes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice.h"
#include "sluice_adaptive.h"

#define T0 (INT64_C(1700000000) * SL_NS_PER_S)
#define MS SL_NS_PER_MS

/* ------------------------------------------------------------- rules */

static bool has_diag(const sl_rules_builder *b, const char *needle)
{
    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
        if (strstr(sl_rules_builder_diag(b, i), needle) != NULL)
            return true;
    return false;
}

static void print_diags(const sl_rules_builder *b)
{
    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
        fprintf(stderr, "  diag: %s\n", sl_rules_builder_diag(b, i));
}

/* A domain "d" with one descriptor key "k" whose one limit has `fields`. */
static int build(const char *fields, sl_rules_builder **bo, sl_rules **out)
{
    char text[1024];
    sl_rules_builder *b = sl_rules_builder_new();

    snprintf(text, sizeof(text),
             "domain: d\n"
             "descriptors:\n"
             "  - key: k\n"
             "    limits:\n"
             "      - {%s}\n",
             fields);
    sl_rules_builder_add_yaml(b, text, strlen(text), "t.yaml", SL_SRC_FILE);
    *out = NULL;
    *bo = b;
    return sl_rules_build(b, out);
}

static void refused(const char *fields, const char *needle)
{
    sl_rules_builder *b;
    sl_rules *r;

    assert_int_equal(build(fields, &b, &r), SL_EPARSE);
    if (!has_diag(b, needle)) {
        fprintf(stderr, "fields: %s; expected a diagnostic with: %s\n", fields, needle);
        print_diags(b);
        fail();
    }
    assert_null(r);
    sl_rules_builder_free(b);
}

static void rules_refuse_what_does_not_fit(void **st)
{
    (void)st;
    refused("algorithm: adaptive_concurrency, controller: bbr, lease: 30s",
            "unknown controller 'bbr'; use gradient, gradient2, vegas or aimd");
    refused("algorithm: adaptive_concurrency, controller: aimd, rtt_tolerance: 2, lease: 30s",
            "rtt_tolerance is a parameter of controller gradient2, not of aimd");
    refused("algorithm: adaptive_concurrency, controller: gradient, smoothing: 0.5, lease: 30s",
            "smoothing is a parameter of controller vegas and gradient2, not of gradient");
    /* the default controller is gradient2 */
    refused("algorithm: adaptive_concurrency, backoff_ratio: 0.8, lease: 30s",
            "backoff_ratio is a parameter of controller aimd, not of gradient2");
    refused("algorithm: adaptive_concurrency, controller: aimd",
            "adaptive_concurrency needs lease");
    refused("algorithm: adaptive_concurrency, requests: 10, lease: 30s",
            "requests does not apply to algorithm adaptive_concurrency");
    refused("algorithm: adaptive_concurrency, period: 1s, lease: 30s",
            "period does not apply to algorithm adaptive_concurrency");
    refused("algorithm: concurrency, requests: 10, lease: 30s, controller: aimd",
            "controller applies to algorithm adaptive_concurrency only");
    refused("algorithm: gcra, requests: 10, period: 1s, max_limit: 5",
            "max_limit applies to algorithm adaptive_concurrency only");
    /* sl_adaptive_config_validate's sentences */
    refused("algorithm: adaptive_concurrency, controller: aimd, min_limit: 10, max_limit: 5, "
            "initial_limit: 5, lease: 30s",
            "adaptive: max_limit must be at least min_limit");
    refused("algorithm: adaptive_concurrency, controller: aimd, backoff_ratio: 1.5, lease: 30s",
            "backoff_ratio must be at least 0.5 and below 1");
    refused("algorithm: adaptive_concurrency, controller: aimd, backoff_ratio: x, lease: 30s",
            "backoff_ratio must be a number");
    refused("algorithm: adaptive_concurrency, controller: aimd, max_limit: 20000, lease: 30s",
            "max_limit must be at most 10000");
}

static void rules_accept_each_controller(void **st)
{
    static const char *const ok[] = {
        "algorithm: adaptive_concurrency, lease: 30s",
        "algorithm: adaptive_concurrency, controller: aimd, initial_limit: 4, min_limit: 2, "
        "max_limit: 8, backoff_ratio: 0.5, timeout: 100ms, lease: 30s",
        "algorithm: adaptive_concurrency, controller: vegas, smoothing: 0.5, "
        "probe_multiplier: 10, lease: 1m",
        "algorithm: adaptive_concurrency, controller: gradient2, smoothing: 0.2, "
        "rtt_tolerance: 2.5, long_window: 100, queue_size: 2, lease: 1m",
        "algorithm: adaptive_concurrency, controller: gradient, percentile: 90, interval: 50ms, "
        "min_rtt_interval: 30s, min_rtt_requests: 20, jitter: 10, buffer: 20, lease: 1m",
    };

    (void)st;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        sl_rules_builder *b;
        sl_rules *r;
        if (build(ok[i], &b, &r) != SL_OK) {
            print_diags(b);
            fail_msg("refused: %s", ok[i]);
        }
        sl_rules_unref(r);
        sl_rules_builder_free(b);
    }
}

/* ------------------------------------------------------------ limiter */

struct fx {
    sl_rules_builder *b;
    sl_rules *r;
    sl_limiter *lim;
};

static void fx_open(struct fx *f, const char *fields)
{
    struct sl_limiter_config c;

    if (build(fields, &f->b, &f->r) != SL_OK) {
        print_diags(f->b);
        fail_msg("refused: %s", fields);
    }
    sl_limiter_config_init(&c);
    c.table.max_bytes = (size_t)4 << 20;
    memset(c.table.secret, 5, sizeof(c.table.secret));
    assert_int_equal(sl_limiter_new(&c, &f->lim), SL_OK);
}

static void fx_close(struct fx *f)
{
    sl_limiter_free(f->lim);
    sl_rules_unref(f->r);
    sl_rules_builder_free(f->b);
}

/* One request of descriptor k=v at t with cost `hits`. */
static void acquire(struct fx *f, const char *v, int64_t t, uint64_t hits, struct sl_result *res)
{
    struct sl_entry e = {{"k", 1}, {v, strlen(v)}};
    struct sl_descriptor d = {&e, 1, -1, NULL};
    struct sl_request req = {{"d", 1}, &d, 1, hits, t};

    assert_int_equal(sl_limiter_check(f->lim, f->r, &req, res), SL_OK);
}

#define AIMD                                                                                       \
    "algorithm: adaptive_concurrency, controller: aimd, initial_limit: 4, min_limit: 2, "          \
    "max_limit: 8, backoff_ratio: 0.5, timeout: 100ms, lease: 10s"

static void admits_up_to_the_limit(void **st)
{
    struct fx f;
    struct sl_result res, other;
    char tokens[4][SL_LEASE_MAX];

    (void)st;
    fx_open(&f, AIMD);
    for (int i = 0; i < 4; i++) {
        acquire(&f, "a", T0, 1, &res);
        assert_int_equal(res.verdict, SL_ALLOW);
        assert_int_equal(res.statuses[0].d.quota, 4);
        assert_int_equal(res.statuses[0].d.remaining, 3 - i);
        assert_int_equal(res.statuses[0].d.reset_ns, 10 * SL_NS_PER_S);
        assert_true(res.lease[0] != '\0');
        strcpy(tokens[i], res.lease);
    }
    acquire(&f, "a", T0 + MS, 1, &res);
    assert_int_equal(res.verdict, SL_DENY);
    assert_string_equal(res.lease, "");
    /* until the oldest lease expires at the latest */
    assert_int_equal(res.statuses[0].d.retry_after_ns, 10 * SL_NS_PER_S - MS);
    /* per key: another value has its own limit */
    acquire(&f, "b", T0 + MS, 1, &other);
    assert_int_equal(other.verdict, SL_ALLOW);
    /* a release without latency frees the slot, no sample: limit unchanged */
    assert_int_equal(sl_limiter_release(f.lim, tokens[0], strlen(tokens[0]), T0 + 2 * MS), SL_OK);
    acquire(&f, "a", T0 + 3 * MS, 1, &res);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[0].d.quota, 4);
    /* released twice, or never taken: SL_ENOENT; malformed: SL_EINVAL */
    assert_int_equal(sl_limiter_release(f.lim, tokens[0], strlen(tokens[0]), T0 + 4 * MS),
                     SL_ENOENT);
    assert_int_equal(
        sl_limiter_release_latency(f.lim, tokens[0], strlen(tokens[0]), T0 + 4 * MS, 5 * MS),
        SL_ENOENT);
    assert_int_equal(sl_limiter_release_latency(f.lim, "zz", 2, T0, 5 * MS), SL_EINVAL);
    fx_close(&f);
}

static void cost_above_one_is_never_admitted(void **st)
{
    struct fx f;
    struct sl_result res;

    (void)st;
    fx_open(&f, AIMD);
    acquire(&f, "a", T0, 2, &res);
    assert_int_equal(res.verdict, SL_DENY);
    assert_int_equal(res.statuses[0].d.retry_after_ns, -1);
    assert_string_equal(res.lease, "");
    acquire(&f, "a", T0, 0, &res); /* a peek: nothing taken */
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[0].d.remaining, 4);
    fx_close(&f);
}

/* Take `n` slots at t (all admitted), release each with `latency`. */
static int64_t cycle(struct fx *f, int64_t t, int n, int64_t latency)
{
    struct sl_result res;
    char tokens[8][SL_LEASE_MAX];

    for (int i = 0; i < n; i++) {
        acquire(f, "a", t, 1, &res);
        assert_int_equal(res.verdict, SL_ALLOW);
        strcpy(tokens[i], res.lease);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(
            sl_limiter_release_latency(f->lim, tokens[i], strlen(tokens[i]), t + MS, latency),
            SL_OK);
    return t + 2 * MS;
}

static int64_t quota_at(struct fx *f, int64_t t)
{
    struct sl_result res;

    acquire(f, "a", t, 0, &res);
    return res.statuses[0].d.quota;
}

static void latency_moves_the_limit(void **st)
{
    struct fx f;
    int64_t t = T0;

    (void)st;
    fx_open(&f, AIMD);
    /* fast releases with at least half the limit in flight: +1 each */
    /* (the first was alone in flight of 4: app-limited, no growth) */
    t = cycle(&f, t, 4, 5 * MS);
    assert_int_equal(quota_at(&f, t), 7);
    /* above the timeout: halved (floored) each, down to min_limit */
    t = cycle(&f, t, 1, 200 * MS);
    assert_int_equal(quota_at(&f, t), 3);
    t = cycle(&f, t, 1, 200 * MS);
    assert_int_equal(quota_at(&f, t), 2);
    t = cycle(&f, t, 1, 200 * MS);
    assert_int_equal(quota_at(&f, t), 2);
    /* fast again, 1 in flight of 2 (half): grows */
    t = cycle(&f, t, 1, 5 * MS);
    assert_int_equal(quota_at(&f, t), 3);
    /* the timeout itself is no timeout */
    t = cycle(&f, t, 2, 100 * MS);
    assert_int_equal(quota_at(&f, t), 4);
    fx_close(&f);
}

static void an_expired_lease_is_a_drop(void **st)
{
    struct fx f;
    struct sl_result res;
    char token[SL_LEASE_MAX];

    (void)st;
    fx_open(&f, AIMD);
    acquire(&f, "a", T0, 1, &res);
    strcpy(token, res.lease);
    /* 10 s later the lease has expired: a drop, aimd halves 4 to 2 */
    assert_int_equal(quota_at(&f, T0 + 10 * SL_NS_PER_S), 2);
    acquire(&f, "a", T0 + 10 * SL_NS_PER_S, 1, &res);
    assert_int_equal(res.verdict, SL_ALLOW);
    assert_int_equal(res.statuses[0].d.quota, 2);
    assert_int_equal(res.statuses[0].d.remaining, 1);
    /* its token finds nothing any more */
    assert_int_equal(
        sl_limiter_release_latency(f.lim, token, strlen(token), T0 + 11 * SL_NS_PER_S, 5 * MS),
        SL_ENOENT);
    fx_close(&f);
}

static void changed_controller_starts_fresh(void **st)
{
    struct sl_adaptive_limit a, b;
    const char *why = NULL;

    (void)st;
    sl_adaptive_limit_init(&a, SL_ADAPTIVE_AIMD);
    a.limit.lease_ns = SL_NS_PER_S;
    sl_limit_finish(&a.limit);
    assert_int_equal(sl_limit_validate(&a.limit, &why), SL_OK);
    assert_int_equal(a.limit.requests, 200);
    b = a;
    b.cfg.timeout_ns = SL_NS_PER_S;
    sl_limit_finish(&b.limit);
    assert_true(a.limit.id != b.limit.id);
    /* no lease */
    b.limit.lease_ns = 0;
    sl_limit_finish(&b.limit);
    assert_int_equal(sl_limit_validate(&b.limit, &why), SL_EINVAL);
    assert_non_null(strstr(why, "lease"));
    /* a bare sl_limit is not an adaptive limit */
    struct sl_limit bare;
    sl_limit_init(&bare);
    bare.algo = SL_ALGO_ADAPTIVE_CONCURRENCY;
    bare.requests = 10;
    bare.lease_ns = SL_NS_PER_S;
    assert_int_equal(sl_limit_validate(&bare, &why), SL_EINVAL);
    assert_non_null(strstr(why, "sl_adaptive_limit_init"));
    assert_string_equal(sl_algo_name(SL_ALGO_ADAPTIVE_CONCURRENCY), "adaptive_concurrency");
    enum sl_algo algo;
    assert_int_equal(sl_algo_parse("adaptive_concurrency", &algo), SL_OK);
    assert_int_equal(algo, SL_ALGO_ADAPTIVE_CONCURRENCY);
}

/* The quotas of a fixed trace of vegas acquires and releases (its probe
 * point is drawn from the seed) on key "a" of a limiter with secret byte
 * `secret`. */
static void vegas_trace(uint8_t secret, int64_t *quotas, size_t n)
{
    struct fx f;
    struct sl_limiter_config c;
    struct sl_result res;
    int64_t t = T0;

    if (build("algorithm: adaptive_concurrency, controller: vegas, initial_limit: 8, "
              "max_limit: 64, lease: 10s",
              &f.b, &f.r) != SL_OK)
        fail();
    sl_limiter_config_init(&c);
    c.table.max_bytes = (size_t)4 << 20;
    memset(c.table.secret, secret, sizeof(c.table.secret));
    assert_int_equal(sl_limiter_new(&c, &f.lim), SL_OK);
    for (size_t i = 0; i < n; i++) {
        char tokens[4][SL_LEASE_MAX];
        for (int k = 0; k < 4; k++) {
            acquire(&f, "a", t, 1, &res);
            strcpy(tokens[k], res.lease);
        }
        for (int k = 0; k < 4; k++)
            sl_limiter_release_latency(f.lim, tokens[k], strlen(tokens[k]), t + MS,
                                       (int64_t)(1 + (i * 7 + (size_t)k) % 13) * MS);
        t += 2 * MS;
        quotas[i] = quota_at(&f, t);
    }
    fx_close(&f);
}

/* Seeded from the key's hash under the table's secret: the same secret and
 * trace give the same limits, run after run. */
static void same_secret_same_limits(void **st)
{
    int64_t a[300], b[300];
    bool moved = false;

    (void)st;
    vegas_trace(9, a, 300);
    vegas_trace(9, b, 300);
    assert_memory_equal(a, b, sizeof(a));
    for (size_t i = 1; i < 300; i++)
        moved = moved || a[i] != a[0];
    assert_true(moved); /* the trace exercises the controller */
}

/* The bare algorithm over the caller's state, as an embedder uses it. */
static void bare_state_round_trip(void **st)
{
    struct sl_adaptive_limit al;
    static uint64_t state[4096];
    struct sl_decision d;

    (void)st;
    sl_adaptive_limit_init(&al, SL_ADAPTIVE_AIMD);
    al.cfg.initial_limit = al.cfg.min_limit = 1;
    al.cfg.max_limit = 3;
    al.limit.lease_ns = SL_NS_PER_S;
    sl_limit_finish(&al.limit);
    assert_int_equal(sl_limit_validate(&al.limit, NULL), SL_OK);
    assert_true(sl_algo_state_size(&al.limit) <= sizeof(state));
    sl_algo_init(state, &al.limit, T0);
    sl_algo_decide(state, &al.limit, T0, 1, &d);
    assert_int_equal(d.verdict, SL_ALLOW);
    assert_true(d.lease != 0);
    uint64_t lease = d.lease;
    sl_algo_decide(state, &al.limit, T0, 1, &d);
    assert_int_equal(d.verdict, SL_DENY);
    assert_int_equal(sl_algo_release_latency(state, &al.limit, T0 + MS, lease, MS), SL_OK);
    assert_int_equal(sl_algo_release_latency(state, &al.limit, T0 + MS, lease, MS), SL_ENOENT);
    sl_algo_decide(state, &al.limit, T0 + 2 * MS, 0, &d);
    assert_int_equal(d.quota, 2); /* one fast sample, 1 in flight of 1: +1 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rules_refuse_what_does_not_fit),
        cmocka_unit_test(rules_accept_each_controller),
        cmocka_unit_test(admits_up_to_the_limit),
        cmocka_unit_test(cost_above_one_is_never_admitted),
        cmocka_unit_test(latency_moves_the_limit),
        cmocka_unit_test(an_expired_lease_is_a_drop),
        cmocka_unit_test(changed_controller_starts_fresh),
        cmocka_unit_test(bare_state_round_trip),
        cmocka_unit_test(same_secret_same_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
