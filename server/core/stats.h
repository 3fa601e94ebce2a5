/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats.h - the operator's statistics (internal): per (domain, limit) a
 * per-second series of allowed, delayed, denied and shadow-denied
 * decisions over the last 15 minutes, the top limited keys of the last
 * windows (Space-Saving, docs/operations.md), and the store's round trips
 * (latency histogram and failures per second). The dashboard (GET /ui),
 * GET /v1/stats and `sluice top` read it.
 *
 * Built like the metrics registry (metrics.h): every worker writes only its
 * own block - no lock, no shared atomic read-modify-write, no allocation
 * after sl__stats_new() - and a reader merges the blocks. Memory is fixed
 * at creation: about (14.4 KB + 2 x top_keys x 148 B) per (domain, limit)
 * pair, max_series pairs, plus 200 KB of store latency and a 64 KiB key
 * ring, per worker (sl__stats_bytes()). Pairs past max_series are not kept
 * (counted as dropped).
 *
 * It reads no clock: the decision's time and the round trip's duration are
 * passed in. It formats nothing (server/admin/admin_stats.c does).
 *
 * Threads: sl__stats_result/_store_call for worker w only on w's thread;
 * sl__stats_read on any thread at any time. Ownership: the registry is the
 * server's (sl__stats_new/free); a view is the caller's
 * (sl__stats_view_free).
 */
#ifndef SL_SERVER_STATS_H
#define SL_SERVER_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "stats-t.h"

struct sl__stats;

/* The `stats:` configuration section (registered in server/protocols.c). */
extern const struct sl__config_section sl__stats_config_section;

/* NULL when stats.enabled is false (nothing is counted, nothing allocated);
 * SL_OK, SL_EINVAL or SL_ENOMEM. `secret` keys the hashes of names and
 * keys (random per process). */
int sl__stats_new(const struct sl__stats_config *c, unsigned workers, const uint8_t secret[16],
                  struct sl__stats **out);
void sl__stats_free(struct sl__stats *s);
/* The memory the registry holds, bytes (docs/operations.md states it). */
size_t sl__stats_bytes(const struct sl__stats *s);

/* ---------------------------------------------------------------- the decision path */

/* Before the store call: what the result will need (req borrowed for the
 * call; rules the snapshot decided with). Cheap: no copy. */
static inline void sl__stats_op_begin(struct sl__stats_op *so, const struct sl_request *req,
                                      const sl_rules *rules)
{
    so->req = req;
    so->rules = rules;
    so->ring_len = 0;
}
/* The store's start call on worker w returned without answering: copy
 * the key texts the result may need out of the request, which is gone
 * after this, into w's key ring. */
void sl__stats_op_keep(struct sl__stats *s, unsigned w, struct sl__stats_op *so);

/* Count a decision of worker w made at now_ns (the server's clock) in
 * domain[0..dlen): every status with a limit, and its key when limited. */
void sl__stats_result(struct sl__stats *s, unsigned w, const char *domain, size_t dlen,
                      const struct sl__stats_op *so, const struct sl_result *res, int64_t now_ns);
/* Both, for decision `a` (stats-t.h): the round trip since
 * a->op->store_ns when it is set, failed unless a->err is SL_OK, then the
 * result when there is one. */
void sl__stats_decision(struct sl__stats *s, const struct sl__stats_answer *a);
/* One store round trip of `rtt_ns`, failed or not, answered at now_ns. */
void sl__stats_store_call(struct sl__stats *s, unsigned w, int64_t now_ns, int64_t rtt_ns,
                          bool failed);

/* ---------------------------------------------------------------- reading */

enum { SL__ST_ALLOW, SL__ST_DELAY, SL__ST_DENY, SL__ST_SHADOW, SL__ST_N };

struct sl__stats_key_view {
    char text[SL__STATS_KEY_MAX]; /* KEY US VALUE RS ... (values mode), or the shown form */
    uint16_t len;
    bool partial;   /* cut, hashed or sanitised: not the request's exact entries */
    uint64_t count; /* limited decisions counted for it (an over-estimate by at most err) */
    uint64_t err;
};

struct sl__stats_series_view {
    char domain[96], limit[96];
    uint16_t domain_len, limit_len;
    uint64_t *n;               /* [seconds][SL__ST_N], oldest first */
    uint64_t total[SL__ST_N];  /* over the seconds read */
    uint64_t recent[SL__ST_N]; /* over the last 10 of them */
    struct sl__stats_key_view *top;
    size_t n_top;
};

struct sl__stats_view {
    int64_t now_s;    /* the last second read (Unix) */
    unsigned seconds; /* how many, ending at now_s */
    size_t n_series;
    struct sl__stats_series_view *series;
    /* The store's round trips, per second: calls, failures, p50 and p99
     * in nanoseconds (the upper bound of the histogram's bucket, within
     * 1.5x; 0 without calls). */
    uint64_t *store_calls, *store_failures, *store_p50_ns, *store_p99_ns;
    uint64_t store_p50_ns_recent, store_p99_ns_recent; /* over the last 10 seconds */
    uint64_t dropped;                                  /* decisions in pairs past max_series */
    unsigned keys;                                     /* enum sl__stats_keys in force */
    int64_t window_ms;                                 /* of the top keys */
};

/* Read the last `seconds` (1..SL__STATS_SECONDS) seconds up to now_ns and
 * up to `top_n` keys per pair, merged over every worker. SL_OK or
 * SL_ENOMEM (then *out holds nothing to free). */
int sl__stats_read(struct sl__stats *s, int64_t now_ns, unsigned seconds, unsigned top_n,
                   struct sl__stats_view *out);
void sl__stats_view_free(struct sl__stats_view *v);

#endif /* SL_SERVER_STATS_H */
