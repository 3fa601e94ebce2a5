/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_metrics.c - the metrics registry: per-worker counts summed at
 * scrape, the series cap and its overflow (per worker and across workers),
 * label escaping and cleaning, the latency histogram, gauges, buffer
 * limits, and counting threads racing a scraper. Every check parses the
 * exposition text back, as Prometheus would, instead of comparing strings.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

/* ------------------------------------------------ exposition parser */

#define MAX_SAMPLES 4096

struct sample {
    char name[64];
    char labels[4][2][256]; /* name, unescaped value */
    int n_labels;
    char value[32];
};

static struct sample samples[MAX_SAMPLES];
static int n_samples;

/* Parse a label value starting after its opening quote; returns the char
 * after the closing quote. Fails the test on a bad escape. */
static const char *parse_value(const char *p, char *out, size_t cap)
{
    size_t o = 0;

    for (; *p != '"'; p++) {
        char c = *p;
        assert_true(c != '\0' && c != '\n');
        if (c == '\\') {
            p++;
            assert_true(*p == '\\' || *p == '"' || *p == 'n');
            c = *p == 'n' ? '\n' : *p;
        }
        assert_true(o + 1 < cap);
        out[o++] = c;
    }
    out[o] = '\0';
    return p + 1;
}

static void parse_exposition(const char *text)
{
    n_samples = 0;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        assert_non_null(end); /* every line ends with \n */
        if (*line != '#') {
            struct sample *s = &samples[n_samples++];
            const char *p = line;
            size_t n = strcspn(p, "{ ");
            assert_true(n_samples < MAX_SAMPLES && n < sizeof(s->name));
            memset(s, 0, sizeof(*s));
            memcpy(s->name, p, n);
            p += n;
            if (*p == '{') {
                p++;
                while (*p != '}') {
                    size_t k = strcspn(p, "=");
                    assert_true(s->n_labels < 4 && k < 256);
                    memcpy(s->labels[s->n_labels][0], p, k);
                    assert_true(p[k] == '=' && p[k + 1] == '"');
                    p = parse_value(p + k + 2, s->labels[s->n_labels][1], 256);
                    s->n_labels++;
                    if (*p == ',')
                        p++;
                }
                p++;
            }
            assert_true(*p == ' ');
            p++;
            assert_true((size_t)(end - p) < sizeof(s->value));
            memcpy(s->value, p, (size_t)(end - p));
        }
        line = end + 1;
    }
}

static const char *label(const struct sample *s, const char *name)
{
    for (int i = 0; i < s->n_labels; i++) {
        if (strcmp(s->labels[i][0], name) == 0)
            return s->labels[i][1];
    }
    return NULL;
}

/* The value of the one sample matching, or NULL; fails on duplicates. */
static const char *find(const char *name, const char *domain, const char *limit,
                        const char *outcome)
{
    const char *found = NULL;
    for (int i = 0; i < n_samples; i++) {
        const struct sample *s = &samples[i];
        const char *d = label(s, "domain"), *l = label(s, "limit"), *o = label(s, "outcome");
        if (strcmp(s->name, name) != 0)
            continue;
        if ((domain && (!d || strcmp(d, domain))) || (limit && (!l || strcmp(l, limit))) ||
            (outcome && (!o || strcmp(o, outcome))))
            continue;
        assert_null(found);
        found = s->value;
    }
    return found;
}

static long long num(const char *v)
{
    assert_non_null(v);
    return strtoll(v, NULL, 10);
}

static int count(const char *name)
{
    int n = 0;
    for (int i = 0; i < n_samples; i++)
        n += strcmp(samples[i].name, name) == 0;
    return n;
}

/* ----------------------------------------------------------- helpers */

static struct sl__metrics *make(unsigned workers, unsigned cap)
{
    struct sl__metrics_config c = {.workers = workers, .series_cap = cap};
    struct sl__metrics *m;
    for (int i = 0; i < 16; i++)
        c.secret[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(sl__metrics_new(&c, &m), SL_OK);
    return m;
}

static struct sl_str S(const char *s) {
    return (struct sl_str){s, strlen(s)};
}

static char *
render(struct sl__metrics *m, const struct sl__metrics_gauges *g)
{
    static const struct sl__metrics_gauges zero;
    size_t cap = sl__metrics_render_bound(m), len;
    char *buf = malloc(cap);
    assert_non_null(buf);
    assert_int_equal(sl__metrics_render(m, g ? g : &zero, buf, cap, &len), SL_OK);
    assert_int_equal(strlen(buf), len);
    parse_exposition(buf);
    return buf;
}

/* ------------------------------------------------------------- tests */

static void test_counts_summed_across_workers(void **st)
{
    struct sl__metrics *m = make(3, 16);

    sl__metrics_decision(m, 0, S("api"), S("per_user"), SL__OUTCOME_ALLOW);
    sl__metrics_decision(m, 1, S("api"), S("per_user"), SL__OUTCOME_ALLOW);
    sl__metrics_decision(m, 2, S("api"), S("per_user"), SL__OUTCOME_DENY);
    sl__metrics_decision(m, 2, S("api"), S("per_ip"), SL__OUTCOME_DELAY);
    sl__metrics_decision(m, 1, S("api"), S("per_ip"), SL__OUTCOME_SHADOW_DENY);
    sl__metrics_decision(m, 3, S("api"), S("bad_worker"), SL__OUTCOME_ALLOW); /* ignored */
    sl__metrics_unknown_domain(m, 0);
    sl__metrics_unknown_domain(m, 2);
    free(render(m, NULL));
    assert_int_equal(num(find("sluice_decisions_total", "api", "per_user", "allow")), 2);
    assert_int_equal(num(find("sluice_decisions_total", "api", "per_user", "deny")), 1);
    assert_int_equal(num(find("sluice_decisions_total", "api", "per_user", "delay")), 0);
    assert_int_equal(num(find("sluice_decisions_total", "api", "per_ip", "delay")), 1);
    assert_int_equal(num(find("sluice_shadow_denials_total", "api", "per_ip", NULL)), 1);
    assert_null(find("sluice_decisions_total", "api", "bad_worker", "allow"));
    assert_int_equal(num(find("sluice_unknown_domain_total", NULL, NULL, NULL)), 2);
    sl__metrics_free(m);
    (void)st;
}

static void test_cap_and_overflow_one_worker(void **st)
{
    struct sl__metrics *m = make(1, 3);
    char name[16];

    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "user%d", i);
        for (int k = 0; k <= i; k++)
            sl__metrics_decision(m, 0, S("api"), S(name), SL__OUTCOME_DENY);
    }
    free(render(m, NULL));
    /* 3 series kept plus the overflow one, 3 outcomes each. */
    assert_int_equal(count("sluice_decisions_total"), 4 * 3);
    assert_int_equal(num(find("sluice_decisions_total", "api", "user0", "deny")), 1);
    assert_int_equal(num(find("sluice_decisions_total", "api", "user2", "deny")), 3);
    assert_null(find("sluice_decisions_total", "api", "user3", "deny"));
    /* users 3..9 contributed 4 + 5 + ... + 10 = 49. */
    assert_int_equal(
        num(find("sluice_decisions_total", SL__METRIC_OVERFLOW, SL__METRIC_OVERFLOW, "deny")), 49);
    sl__metrics_free(m);
    (void)st;
}

static void test_cap_applies_across_workers(void **st)
{
    struct sl__metrics *m = make(2, 2);

    sl__metrics_decision(m, 0, S("d"), S("a"), SL__OUTCOME_ALLOW);
    sl__metrics_decision(m, 0, S("d"), S("b"), SL__OUTCOME_ALLOW);
    sl__metrics_decision(m, 1, S("d"), S("c"), SL__OUTCOME_ALLOW); /* within worker 1's cap */
    sl__metrics_decision(m, 1, S("d"), S("c"), SL__OUTCOME_ALLOW);
    sl__metrics_decision(m, 1, S("d"), S("a"), SL__OUTCOME_ALLOW);
    free(render(m, NULL));
    assert_int_equal(count("sluice_shadow_denials_total"), 3); /* a, b, overflow */
    assert_int_equal(num(find("sluice_decisions_total", "d", "a", "allow")), 2);
    assert_int_equal(num(find("sluice_decisions_total", "d", "b", "allow")), 1);
    assert_null(find("sluice_decisions_total", "d", "c", "allow"));
    assert_int_equal(num(find("sluice_decisions_total", SL__METRIC_OVERFLOW, NULL, "allow")), 2);
    sl__metrics_free(m);
    (void)st;
}

static void test_label_escaping_and_cleaning(void **st)
{
    struct sl__metrics *m = make(1, 8);
    char longname[300];

    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    sl__metrics_decision(m, 0, S("a\"b\\c"), S("new\nline"), SL__OUTCOME_ALLOW);
    sl__metrics_decision(m, 0, S("caf\xc3\xa9"), S("bad\xff\xc3"), SL__OUTCOME_ALLOW);
    sl__metrics_decision(m, 0, S("long"), S(longname), SL__OUTCOME_ALLOW);
    free(render(m, NULL));
    /* Quote and backslash survive the round trip; control bytes become ?. */
    assert_int_equal(num(find("sluice_decisions_total", "a\"b\\c", "new?line", "allow")), 1);
    /* Valid UTF-8 kept, invalid bytes replaced one by one. */
    assert_int_equal(num(find("sluice_decisions_total", "caf\xc3\xa9", "bad??", "allow")), 1);
    longname[SL__METRIC_LABEL_MAX] = '\0';
    assert_int_equal(num(find("sluice_decisions_total", "long", longname, "allow")), 1);
    sl__metrics_free(m);
    (void)st;
}

/* A worker remembers the series it counted last: the same labels again,
 * labels whose bytes run together the same way ("ab"+"c", "a"+"bc"),
 * labels with a common prefix, and labels past the length limit (not
 * remembered; cleaned to one series) must each count where they belong. */
static void test_same_labels_again_and_lookalikes(void **st)
{
    struct sl__metrics *m = make(1, 8);
    char long1[200], long2[200];

    memset(long1, 'y', sizeof(long1) - 1);
    long1[sizeof(long1) - 1] = '\0';
    memcpy(long2, long1, sizeof(long1));
    long2[sizeof(long2) - 2] = 'z'; /* differs past the limit */
    for (int i = 0; i < 3; i++) {
        sl__metrics_decision(m, 0, S("ab"), S("c"), SL__OUTCOME_ALLOW);
        sl__metrics_decision(m, 0, S("ab"), S("c"), SL__OUTCOME_DENY);
        sl__metrics_decision(m, 0, S("a"), S("bc"), SL__OUTCOME_ALLOW);
        sl__metrics_decision(m, 0, S("ab"), S("cd"), SL__OUTCOME_ALLOW);
        sl__metrics_decision(m, 0, S("ab"), S(""), SL__OUTCOME_ALLOW);
        sl__metrics_decision(m, 0, S(""), S("ab"), SL__OUTCOME_ALLOW);
        sl__metrics_decision(m, 0, S("d"), S(long1), SL__OUTCOME_ALLOW);
        sl__metrics_decision(m, 0, S("d"), S(long2), SL__OUTCOME_ALLOW);
    }
    free(render(m, NULL));
    assert_int_equal(num(find("sluice_decisions_total", "ab", "c", "allow")), 3);
    assert_int_equal(num(find("sluice_decisions_total", "ab", "c", "deny")), 3);
    assert_int_equal(num(find("sluice_decisions_total", "a", "bc", "allow")), 3);
    assert_int_equal(num(find("sluice_decisions_total", "a", "bc", "deny")), 0);
    assert_int_equal(num(find("sluice_decisions_total", "ab", "cd", "allow")), 3);
    assert_int_equal(num(find("sluice_decisions_total", "ab", "", "allow")), 3);
    assert_int_equal(num(find("sluice_decisions_total", "", "ab", "allow")), 3);
    long1[SL__METRIC_LABEL_MAX] = '\0';
    assert_int_equal(num(find("sluice_decisions_total", "d", long1, "allow")), 6);
    sl__metrics_free(m);
    (void)st;
}

static void test_latency_histogram(void **st)
{
    struct sl__metrics *m = make(2, 4);

    sl__metrics_latency(m, 0, 5000);            /* 5 us */
    sl__metrics_latency(m, 1, 30000);           /* 30 us */
    sl__metrics_latency(m, 1, 2 * SL_NS_PER_S); /* 2 s: only +Inf */
    sl__metrics_latency(m, 0, -5);              /* clamped to 0 */
    free(render(m, NULL));
    for (int i = 0; i < n_samples; i++) {
        const char *le = label(&samples[i], "le");
        if (strcmp(samples[i].name, "sluice_check_duration_seconds_bucket") != 0)
            continue;
        if (strcmp(le, "1e-05") == 0)
            assert_int_equal(num(samples[i].value), 2);
        else if (strcmp(le, "5e-05") == 0 || strcmp(le, "0.1") == 0)
            assert_int_equal(num(samples[i].value), 3);
        else if (strcmp(le, "+Inf") == 0)
            assert_int_equal(num(samples[i].value), 4);
    }
    assert_int_equal(count("sluice_check_duration_seconds_bucket"), 14);
    assert_int_equal(num(find("sluice_check_duration_seconds_count", NULL, NULL, NULL)), 4);
    assert_string_equal(find("sluice_check_duration_seconds_sum", NULL, NULL, NULL), "2.000035000");
    sl__metrics_free(m);
    (void)st;
}

static void test_gauges_and_connections(void **st)
{
    struct sl__metrics *m = make(2, 4);
    struct sl__metrics_gauges g = {.table_entries = 11,
                                   .table_bytes = 4096,
                                   .table_max_bytes = 1 << 20,
                                   .table_evictions = 3,
                                   .table_full_denials = 4,
                                   .table_summary_folds = 12,
                                   .table_summary_restores = 13,
                                   .table_summary_cells = 14,
                                   .table_summary_used = 15,
                                   .reloads = 5,
                                   .reload_failures = 6,
                                   .connections = -1};

    sl__metrics_connection(m, 0, 1);
    sl__metrics_connection(m, 1, 1);
    sl__metrics_connection(m, 1, 1);
    sl__metrics_connection(m, 0, -1);
    free(render(m, &g));
    assert_int_equal(num(find("sluice_connections", NULL, NULL, NULL)), 2);
    assert_int_equal(num(find("sluice_connections_total", NULL, NULL, NULL)), 3);
    assert_int_equal(num(find("sluice_table_entries", NULL, NULL, NULL)), 11);
    assert_int_equal(num(find("sluice_table_bytes", NULL, NULL, NULL)), 4096);
    assert_int_equal(num(find("sluice_table_max_bytes", NULL, NULL, NULL)), 1 << 20);
    assert_int_equal(num(find("sluice_table_evictions_total", NULL, NULL, NULL)), 3);
    assert_int_equal(num(find("sluice_table_full_denials_total", NULL, NULL, NULL)), 4);
    assert_int_equal(num(find("sluice_table_summary_folds_total", NULL, NULL, NULL)), 12);
    assert_int_equal(num(find("sluice_table_summary_restores_total", NULL, NULL, NULL)), 13);
    assert_int_equal(num(find("sluice_table_summary_cells", NULL, NULL, NULL)), 14);
    assert_int_equal(num(find("sluice_table_summary_cells_used", NULL, NULL, NULL)), 15);
    assert_int_equal(num(find("sluice_reloads_total", NULL, NULL, NULL)), 5);
    assert_int_equal(num(find("sluice_reload_failures_total", NULL, NULL, NULL)), 6);
    /* A caller that knows the open connections overrides the workers' counts. */
    g.connections = 7;
    free(render(m, &g));
    assert_int_equal(num(find("sluice_connections", NULL, NULL, NULL)), 7);
    sl__metrics_free(m);
    (void)st;
}

static void test_buffer_limits_and_config(void **st)
{
    struct sl__metrics_config bad = {.workers = 0, .series_cap = 4};
    struct sl__metrics *m = make(1, 2), *none = (void *)1;
    static const struct sl__metrics_gauges g = {.connections = -1};
    char small[64], *full;
    size_t len;
    char big[200];

    assert_int_equal(sl__metrics_new(&bad, &none), SL_EINVAL);
    assert_null(none);
    bad.workers = 1;
    bad.series_cap = 0;
    assert_int_equal(sl__metrics_new(&bad, &none), SL_EINVAL);

    /* The bound holds with the cap full of the longest, most escaped labels. */
    memset(big, '"', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (int i = 0; i < 5; i++) {
        big[0] = (char)('a' + i);
        sl__metrics_decision(m, 0, S(big), S(big), SL__OUTCOME_ALLOW);
    }
    full = render(m, NULL);
    assert_int_equal(sl__metrics_render(m, &g, small, sizeof(small), &len), SL_ETOOBIG);
    free(full);
    sl__metrics_free(m);
    sl__metrics_free(NULL);
    (void)st;
}

/* ------------------------------------------------------------ threads */

#define PER_THREAD 20000

struct worker_arg {
    struct sl__metrics *m;
    unsigned w;
};

static void *count_thread(void *p)
{
    struct worker_arg *a = p;
    char name[16];
    for (int i = 0; i < PER_THREAD; i++) {
        snprintf(name, sizeof(name), "l%d", i % 5);
        sl__metrics_decision(a->m, a->w, S("d"), S(name), SL__OUTCOME_ALLOW);
        sl__metrics_latency(a->m, a->w, i);
    }
    return NULL;
}

static void test_workers_race_scraper(void **st)
{
    struct sl__metrics *m = make(2, 8);
    struct worker_arg args[2] = {{m, 0}, {m, 1}};
    pthread_t t[2];
    long long total = 0;

    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, count_thread, &args[i]), 0);
    for (int i = 0; i < 20; i++)
        free(render(m, NULL)); /* concurrent scrapes parse cleanly */
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    free(render(m, NULL));
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "l%d", i);
        total += num(find("sluice_decisions_total", "d", name, "allow"));
    }
    assert_int_equal(total, 2 * PER_THREAD);
    assert_int_equal(num(find("sluice_check_duration_seconds_count", NULL, NULL, NULL)),
                     2 * PER_THREAD);
    sl__metrics_free(m);
    (void)st;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_summed_across_workers),
        cmocka_unit_test(test_cap_and_overflow_one_worker),
        cmocka_unit_test(test_cap_applies_across_workers),
        cmocka_unit_test(test_label_escaping_and_cleaning),
        cmocka_unit_test(test_same_labels_again_and_lookalikes),
        cmocka_unit_test(test_latency_histogram),
        cmocka_unit_test(test_gauges_and_connections),
        cmocka_unit_test(test_buffer_limits_and_config),
        cmocka_unit_test(test_workers_race_scraper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
