/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * metrics_int.h - the registry's layout, shared by metrics.c (counting)
 * and metrics_render.c (scraping). Internal to those two files; callers use
 * metrics.h and never see a worker block.
 */
#ifndef SL_SERVER_METRICS_INT_H
#define SL_SERVER_METRICS_INT_H

#include <stdatomic.h>

#include "metrics.h"

/* Check-latency histogram bucket bounds, nanoseconds (le, +Inf implied). */
#define SL__LAT_BUCKETS 13
extern const int64_t sl__lat_bounds_ns[SL__LAT_BUCKETS];
extern const char *const sl__lat_bounds_text[SL__LAT_BUCKETS];

struct sl__series {
    _Atomic uint32_t ready; /* labels written and published (release) */
    uint16_t domain_len, limit_len;
    uint64_t hash;
    char domain[SL__METRIC_LABEL_MAX];
    char limit[SL__METRIC_LABEL_MAX];
    _Atomic uint64_t n[SL__OUTCOME_COUNT];
};

/* One worker's counters; only that worker writes them. */
struct sl__wmetrics {
    _Alignas(64) size_t n_series; /* slots in use (writer only) */
    struct sl__series *slots;     /* open addressing, mask + 1 slots */
    size_t mask;
    struct sl__series overflow; /* everything past the cap */
    _Atomic uint64_t unknown_domains;
    _Atomic uint64_t killswitch_off; /* checks answered allowed by an "off" switch */
    _Atomic uint64_t batches;        /* batches of checks decided together */
    _Atomic uint64_t batched;        /* the checks in them */
    _Atomic int64_t connections;
    _Atomic uint64_t connections_total;
    _Atomic uint64_t conn_events[SL__CONN_EV_COUNT];
    _Atomic uint64_t lat_buckets[SL__LAT_BUCKETS + 1]; /* last: +Inf */
    _Atomic uint64_t lat_sum_ns;
    /* the series found last, by the raw labels it was found for (writer
     * only): a worker counts the same domain and limit decision after
     * decision, and finding a series cleans, hashes and compares both */
    struct sl__series *last;
    uint16_t last_dl, last_ll;
    char last_raw[2 * SL__METRIC_LABEL_MAX];
};

struct sl__metrics {
    unsigned workers;
    unsigned series_cap;
    uint8_t secret[16];
    struct sl__wmetrics *w; /* [workers] */
};

#endif /* SL_SERVER_METRICS_INT_H */
