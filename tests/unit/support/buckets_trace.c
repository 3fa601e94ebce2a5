/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * buckets_trace.c - runner for the bucket algorithms' reference traces (see
 * buckets_trace.h). Uses only the public bare-algorithm API, so the traces
 * exercise check + commit exactly as an embedder would.
 *
 * Does not: know any algorithm's semantics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "support/buckets_trace.h"

void bk_init(struct bk_state *st, const struct sl_limit *l, int64_t now_ns)
{
    const char *why = NULL;
    int rc = sl_limit_validate(l, &why);

    if (rc != SL_OK)
        print_error("limit invalid: %s\n", why ? why : "?");
    assert_int_equal(rc, SL_OK);
    assert_true(sl_algo_state_size(l) <= sizeof(*st));
    memset(st, 0xa5, sizeof(*st)); /* init must overwrite everything it uses */
    sl_algo_init(st, l, now_ns);
}

static void expect(size_t row, const char *field, int64_t want, int64_t got)
{
    if (want != got)
        print_error("row %zu: %s: want %lld, got %lld\n", row, field, (long long)want,
                    (long long)got);
    assert_int_equal(want, got);
}

void bk_run(struct bk_state *st, const struct sl_limit *l, const struct bk_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct bk_row *r = &rows[i];
        struct sl_decision d;

        memset(&d, 0x5a, sizeof(d));
        sl_algo_decide(st, l, r->t_ns, r->cost, &d);
        expect(i, "verdict", r->verdict, d.verdict);
        expect(i, "quota", sl_limit_quota(l), d.quota);
        expect(i, "remaining", r->remaining, d.remaining);
        expect(i, "retry_after_ns", r->retry_ns, d.retry_after_ns);
        expect(i, "reset_ns", r->reset_ns, d.reset_ns);
        expect(i, "delay_ns", r->delay_ns, d.delay_ns);
    }
}

struct sl_limit bk_limit(enum sl_algo algo, uint64_t requests, int64_t period_ns, int64_t burst)
{
    struct sl_limit l;

    sl_limit_init(&l);
    l.algo = algo;
    l.requests = requests;
    l.period_ns = period_ns;
    l.burst = burst;
    sl_limit_finish(&l);
    return l;
}
