/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * windows_trace.h - table-driven reference traces for the algorithm tests:
 * a row is (time, cost) -> (verdict, remaining, retry_after, reset), run in
 * order against one state through sl_algo_decide().
 *
 * Does not: build expected values (each test writes them, derived by hand
 * from the algorithm's definition) or check concurrency leases.
 */
#ifndef WINDOWS_TRACE_H
#define WINDOWS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct wt_row {
    int64_t t_ns;
    uint64_t cost;
    enum sl_verdict verdict;
    int64_t remaining;
    int64_t retry_ns;
    int64_t reset_ns;
};

/* A fresh state for `l` (validated; fails the test otherwise), created at
 * `now_ns`; free with test_free(). */
void *wt_state_new(const struct sl_limit *l, int64_t now_ns);

/* Run `rows` in order on `state`, asserting every field of every decision
 * (and the quota); a mismatch prints the row's index. */
void wt_run(void *state, const struct sl_limit *l, const struct wt_row *rows, size_t n);

#define WT_N(a) (sizeof(a) / sizeof((a)[0]))

#endif /* WINDOWS_TRACE_H */
