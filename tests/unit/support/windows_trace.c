/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * windows_trace.c - runs the reference-trace tables of windows_trace.h.
 *
 * Does not: know any algorithm; it only compares what sl_algo_decide()
 * reports with what a row expects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "support/windows_trace.h"

void *wt_state_new(const struct sl_limit *l, int64_t now_ns)
{
    const char *why = NULL;
    void *st;

    if (sl_limit_validate(l, &why) != SL_OK) {
        print_error("limit does not validate: %s\n", why ? why : "?");
        fail();
    }
    st = test_malloc(sl_algo_state_size(l));
    assert_non_null(st);
    sl_algo_init(st, l, now_ns);
    return st;
}

void wt_run(void *state, const struct sl_limit *l, const struct wt_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct wt_row *r = &rows[i];
        struct sl_decision d;

        sl_algo_decide(state, l, r->t_ns, r->cost, &d);
        if (d.verdict != r->verdict || d.remaining != r->remaining ||
            d.retry_after_ns != r->retry_ns || d.reset_ns != r->reset_ns ||
            d.quota != sl_limit_quota(l) || d.delay_ns != 0) {
            print_error("row %zu (t=%lld cost=%llu): got verdict %d remaining %lld retry %lld "
                        "reset %lld quota %lld delay %lld; want %d %lld %lld %lld\n",
                        i, (long long)r->t_ns, (unsigned long long)r->cost, (int)d.verdict,
                        (long long)d.remaining, (long long)d.retry_after_ns, (long long)d.reset_ns,
                        (long long)d.quota, (long long)d.delay_ns, (int)r->verdict,
                        (long long)r->remaining, (long long)r->retry_ns, (long long)r->reset_ns);
            fail();
        }
    }
}
