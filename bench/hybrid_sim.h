/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid_sim.h - the hybrid store (store/hybrid/) replayed on a trace with
 * simulated nodes and the trace's own clock: N stores in this process on
 * one real redis-server (started here on a free loopback port, stopped by
 * its PID), each request sent to a node chosen by a seeded generator, every
 * node synced every sync_interval of trace time, one node after the other
 * (a deterministic order: the same trace gives the same figures). No real
 * timer decides anything: a sync's reply is awaited before the trace goes
 * on, as if the round trip took no time.
 *
 * What it reports: for each client and aligned window of the limit's
 * period in which the client offered more than the limit, the overshoot
 * (admitted - limit, 0 when within), as max, p99 and mean, and the share
 * of those windows over the limit.
 */
#ifndef SL_BENCH_HYBRID_SIM_H
#define SL_BENCH_HYBRID_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct hsim_req {
    int64_t t_ns;
    uint32_t client;
};

struct hsim_result {
    uint64_t windows;    /* (client, window) pairs offered more than the limit */
    uint64_t over;       /* of which the fleet admitted more than the limit */
    uint64_t max;        /* largest overshoot */
    uint64_t p99;        /* 99th percentile of the overshoot over `windows` */
    double mean;         /* mean overshoot over `windows` */
    uint64_t requests;   /* replayed */
    uint64_t admitted;   /* by the fleet */
    uint64_t sync_calls; /* script calls, all nodes */
    uint64_t sync_failures;
};

/* Replay reqs[0..n) (sorted by time) through `nodes` hybrid nodes syncing
 * every sync_ms of trace time, with limit `l` per client. 0, or -1 with a
 * message on stderr (no redis-server, a store that did not connect). */
int hsim_run(const struct hsim_req *reqs, size_t n, uint32_t clients, const struct sl_limit *l,
             unsigned nodes, int64_t sync_ms, uint64_t seed, struct hsim_result *out);

#endif
