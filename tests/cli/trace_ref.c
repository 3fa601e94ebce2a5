/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * trace_ref.c - the expected side of the simulate end-to-end test: for each
 * algorithm but concurrency, one limit and one pseudo-random trace of
 * (time, cost), decided directly with sl_algo_decide() on a state blob, the
 * way the algorithm unit tests do. Writes DIR/rules.yaml (the same limits as
 * a rules file), DIR/input.jsonl (the trace as simulate input) and
 * DIR/expected.jsonl (the statuses simulate must print).
 *
 * It does not run the limiter, the table or the rules: that is the side
 * under test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"

struct algo_case {
    const char *name; /* descriptor value and limit name */
    const char *yaml; /* the limit as a `limits:` item */
    struct sl_limit l;
};

#define MS SL_NS_PER_MS
#define S  SL_NS_PER_S

static struct algo_case cases[] = {
    {"tb",
     "{algorithm: token_bucket, requests: 5, period: 1s, burst: 10, name: tb}",
     {.algo = SL_ALGO_TOKEN_BUCKET, .requests = 5, .period_ns = S, .burst = 10}},
    {"tbw",
     "{algorithm: token_bucket, requests: 2, period: 1s, warmup: 4s, name: tbw}",
     {.algo = SL_ALGO_TOKEN_BUCKET,
      .requests = 2,
      .period_ns = S,
      .burst = -1,
      .warmup_ns = 4 * S}},
    {"gcra",
     "{algorithm: gcra, requests: 10, period: 1s, burst: 3, name: gcra}",
     {.algo = SL_ALGO_GCRA, .requests = 10, .period_ns = S, .burst = 3}},
    {"lb",
     "{algorithm: leaky_bucket, requests: 10, period: 1s, burst: 5, delay: 2, name: lb}",
     {.algo = SL_ALGO_LEAKY_BUCKET, .requests = 10, .period_ns = S, .burst = 5, .delay = 2}},
    {"lbn",
     "{algorithm: leaky_bucket, requests: 2, period: 1s, burst: 3, nodelay: true, name: lbn}",
     {.algo = SL_ALGO_LEAKY_BUCKET, .requests = 2, .period_ns = S, .burst = 3, .nodelay = true}},
    {"fw",
     "{algorithm: fixed_window, requests: 3, period: 1s, name: fw}",
     {.algo = SL_ALGO_FIXED_WINDOW, .requests = 3, .period_ns = S, .burst = -1}},
    {"fwc",
     "{algorithm: fixed_window, requests: 3, period: 1s, count_rejected: true, name: fwc}",
     {.algo = SL_ALGO_FIXED_WINDOW,
      .requests = 3,
      .period_ns = S,
      .burst = -1,
      .count_rejected = true}},
    {"sw",
     "{algorithm: sliding_window, requests: 5, period: 2s, name: sw}",
     {.algo = SL_ALGO_SLIDING_WINDOW, .requests = 5, .period_ns = 2 * S, .burst = -1}},
    {"sl",
     "{algorithm: sliding_log, requests: 3, period: 2s, min_interval: 200ms, name: sl}",
     {.algo = SL_ALGO_SLIDING_LOG,
      .requests = 3,
      .period_ns = 2 * S,
      .burst = -1,
      .min_interval_ns = 200 * MS}},
};

#define STEPS 80
#define T0_MS INT64_C(1700000000123)

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static FILE *open_in(const char *dir, const char *name)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    return f;
}

static void write_rules(FILE *f)
{
    fprintf(f, "domain: trace\ndescriptors:\n");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        fprintf(f, "  - key: algo\n    value: %s\n    limits:\n      - %s\n", cases[i].name,
                cases[i].yaml);
}

static void run_case(struct algo_case *c, FILE *in, FILE *exp, int64_t *t_ms)
{
    static const uint64_t costs[] = {0, 1, 1, 1, 1, 2, 3, 1};
    struct sl_limit l = c->l;
    void *state;

    l.log_cap = SL_LOG_CAP_DEFAULT;
    l.name = c->name;
    sl_limit_finish(&l);
    state = calloc(1, sl_algo_state_size(&l));
    if (state == NULL)
        exit(1);
    for (int step = 0; step < STEPS; step++) {
        struct sl_decision d;
        uint64_t cost = costs[next() % 8];
        *t_ms += (int64_t)(next() % 5 == 0 ? next() % 1500 : next() % 120);
        if (step == 0)
            sl_algo_init(state, &l, *t_ms * MS);
        sl_algo_decide(state, &l, *t_ms * MS, cost, &d);
        fprintf(in,
                "{\"t_ms\": %lld, \"domain\": \"trace\", \"descriptors\": [{\"algo\": \"%s\"}], "
                "\"hits\": %llu}\n",
                (long long)*t_ms, c->name, (unsigned long long)cost);
        fprintf(exp,
                "{\"t_ms\": %lld, \"decision\": \"%s\", \"delay_ms\": %lld, \"statuses\": "
                "[{\"decision\": \"%s\", \"limit\": \"%s\", \"quota\": %lld, \"remaining\": %lld, "
                "\"reset_ms\": %lld, \"retry_after_ms\": %lld, \"shadow_denied\": false}]}\n",
                (long long)*t_ms, sl_verdict_name(d.verdict),
                (long long)(d.verdict == SL_DELAY ? sl_ns_to_ms_ceil(d.delay_ns) : 0),
                sl_verdict_name(d.verdict), c->name, (long long)d.quota, (long long)d.remaining,
                (long long)sl_ns_to_ms_ceil(d.reset_ns),
                (long long)sl_ns_to_ms_ceil(d.retry_after_ns));
    }
    free(state);
}

int main(int argc, char **argv)
{
    FILE *rules, *in, *exp;
    int64_t t_ms = T0_MS;

    if (argc != 2) {
        fprintf(stderr, "usage: trace_ref DIR\n");
        return 2;
    }
    rules = open_in(argv[1], "rules.yaml");
    in = open_in(argv[1], "input.jsonl");
    exp = open_in(argv[1], "expected.jsonl");
    write_rules(rules);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i], in, exp, &t_ms);
    fclose(rules);
    fclose(in);
    fclose(exp);
    return 0;
}
