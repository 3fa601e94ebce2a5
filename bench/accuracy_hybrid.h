/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * accuracy_hybrid.h - the hybrid store as a decider of bench_accuracy
 * (bench/accuracy.c): `--decider hybrid:NODES:SYNC_MS[:BUCKETS]`.
 *
 * NODES hybrid stores (store/hybrid/, the daemon's own code) in this
 * process on one real redis-server started here on a free loopback port
 * (stopped by its PID); the limit is a sliding_window of BUCKETS
 * sub-windows (default 1) of the trace's limit, with count_rejected as
 * every decider. Each request goes to a node drawn by a seeded generator;
 * when the trace's time has passed the last sync by SYNC_MS, every node
 * syncs at that time, one after the other, each reply awaited before the
 * trace goes on (the round trip takes no trace time): only the trace's
 * clock drives the syncs, and the same trace gives the same figures.
 *
 * Besides the share of requests decided differently from the exact log,
 * it reports the overshoot over the limit per key and aligned window of
 * the period (admitted - limit, 0 within) over the windows in which the
 * key offered more than the limit: max, p99, mean, and the share over.
 */
#ifndef SL_BENCH_ACCURACY_HYBRID_H
#define SL_BENCH_ACCURACY_HYBRID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

void *acc_hybrid_open(uint64_t requests, int64_t period_ns, const char *arg, char *err,
                      size_t err_len);
const char *acc_hybrid_label(void *self);
bool acc_hybrid_decide(void *self, uint32_t key, const char *kb, size_t klen, int64_t now_ns,
                       uint64_t cost);
void acc_hybrid_report(void *self, FILE *out);
void acc_hybrid_close(void *self);

#endif
