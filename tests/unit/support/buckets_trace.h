/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * buckets_trace.h - table-driven reference traces for the bucket algorithm
 * tests (token_bucket, gcra, leaky_bucket): a row is (time, cost) ->
 * (verdict, remaining, retry_after, reset, delay), run in order against one
 * state through sl_algo_decide(), every field asserted.
 *
 * Does not: compute expected values (each test writes them, from the
 * reference system it cites) or model anything itself.
 */
#ifndef BUCKETS_TRACE_H
#define BUCKETS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct bk_row {
    int64_t t_ns;
    uint64_t cost;
    enum sl_verdict verdict;
    int64_t remaining;
    int64_t retry_ns;
    int64_t reset_ns;
    int64_t delay_ns;
};

/* One state blob for any bucket limit (they all fit SL__STATE_INLINE). */
struct bk_state {
    uint64_t words[3];
};

/* Validate `l` (the test fails otherwise) and make `st` fresh at `now_ns`. */
void bk_init(struct bk_state *st, const struct sl_limit *l, int64_t now_ns);

/* Run `rows` on `st` in order, asserting verdict, quota (sl_limit_quota),
 * remaining, retry_after, reset and delay; a mismatch names the row. */
void bk_run(struct bk_state *st, const struct sl_limit *l, const struct bk_row *rows, size_t n);

/* A limit of `algo` with `requests` per `period_ns` and `burst`. */
struct sl_limit bk_limit(enum sl_algo algo, uint64_t requests, int64_t period_ns, int64_t burst);

#define BK_N(a)  (sizeof(a) / sizeof((a)[0]))
#define BK_MS(x) ((int64_t)(x)*SL_NS_PER_MS)
#define BK_S(x)  ((int64_t)(x)*SL_NS_PER_S)

#endif /* BUCKETS_TRACE_H */
