/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * decide.h - the one decision path of sluiced (internal).
 *
 * Every protocol hands its parsed request here and gets a result back in a
 * callback; none of them calls the store, reads the kill switches or counts
 * metrics itself. This is the one place that:
 *  - takes the time of the decision (the server's clock) and the rules
 *    snapshot of the worker;
 *  - applies the kill switches (server/core/killswitch.h) the same way for
 *    every protocol: to every rule-based check, acquire and peek ("off":
 *    answered allowed without deciding; "shadow": a denial is answered as
 *    allowed, marked shadow_denied), never to release, reset or key
 *    inspection, nor to ad hoc limits that have no domain (CL.THROTTLE);
 *  - starts the operation on the worker's store;
 *  - counts the decision in the metrics (checks and acquires: outcome per
 *    limit, latency, unknown domains, and Envoy's detailed_metric labels
 *    for the domains whose rules ask for them) and in the operator's
 *    statistics (stats.h: the per-second series, the top limited keys,
 *    the store's round trip);
 *  - hands the (possibly edited) result to the protocol's callback, which
 *    only formats it.
 *
 * Adding a protocol therefore means a parser, a formatter and one
 * registration (docs/architecture.md lists the steps).
 *
 * Contract: a decision is answered exactly once, in one of two ways, and
 * the call's return value says which:
 *  - true: it was decided inside the call (the memory store, a kill switch,
 *    an error): the answer is in *now (err, and res: the worker's copy of
 *    the result, valid until its next decision), and `done` is never
 *    called;
 *  - false: `done` will be called exactly once, later, on the worker's loop
 *    thread, never inside this call (a remote store's answer, or a check
 *    queued in a batch). The op is the caller's and must stay valid until
 *    then; the result is borrowed for the duration of `done`.
 * So no caller has to guard against a callback running inside the call
 * that registered it (libuv's rule, with the synchronous answer returned
 * instead of deferred: deferring it would cost the memory store's fast
 * path a queue and a second pass). The request is borrowed for the call
 * only (req->now_ns is set by the call). Nothing is allocated on the memory
 * store's path (detailed_metric labels allocate once per request in a
 * domain whose rules ask for them).
 */
#ifndef SL_SERVER_DECIDE_H
#define SL_SERVER_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "sluice.h"
#include "stats-t.h"

struct sl__worker;

enum sl__decide_kind {
    SL__DECIDE_CHECK,   /* consume req->hits (cost 0 peeks, as a check of cost 0 does) */
    SL__DECIDE_ACQUIRE, /* a check whose result carries a concurrency lease */
    SL__DECIDE_PEEK,    /* report the state, consume nothing */
    SL__DECIDE_INSPECT, /* admin key inspection: a peek without kill switch or counting,
                           each decision what a request of cost 1 would get now */
    SL__DECIDE_RESET,   /* admin reset: forget the state, report the fresh one */
    SL__DECIDE_RELEASE, /* free the slots of a lease (sl__decide_release) */
};

struct sl__decide_op;

/* err: SL_OK with res, or a negative SL_E* code with res NULL. */
typedef void (*sl__decide_done)(struct sl__decide_op *op, int err, const struct sl_result *res);

/* An answer made inside the call (see the contract above). */
struct sl__decided {
    int err;                     /* SL_OK with res, or a negative SL_E* code */
    const struct sl_result *res; /* the worker's copy, valid until its next decision */
};

/* Envoy detailed_metric: per descriptor, the limit label made of the
 * request's entries ("key_value.key2_value2"); len 0 where the rule is not
 * detailed. */
struct sl__decide_labels {
    struct sl_str s[SL_MAX_DESCRIPTORS];
    char bytes[SL_MAX_DESCRIPTORS][SL__METRIC_LABEL_MAX];
};

/*
 * One decision in flight, embedded (usually first) in the protocol's own
 * operation. The caller may set `start_ns` (CLOCK_MONOTONIC when the
 * request arrived; 0: now) before the call; the rest is the decision
 * path's.
 */
struct sl__decide_op {
    int64_t start_ns; /* for the latency histogram */

    struct sl__worker *w;
    sl__decide_done done;
    enum sl__decide_kind kind;
    bool counted;   /* its outcome goes into the metrics */
    bool shadow;    /* kill switch "shadow": a denial is answered as allowed */
    uint8_t by;     /* who answered: 0 the store's state, else a failure policy */
    int64_t now_ns; /* the decision's time (X-RateLimit-Reset and the like) */
    struct sl__decide_labels *labels;
    struct sl__decided *now; /* while the call runs: where an inline answer goes */
    bool answered;           /* the answer went there */
    uint16_t domain_len;
    char domain[SL__METRIC_LABEL_MAX]; /* the metric label (a truncated copy) */
    struct sl__stats_op stats;         /* what the statistics need of the request */
};

/* The failure policy that answered the result `done` was given ("allow",
 * "deny", "local": a remote store could not decide with its state), or
 * NULL when the store's state decided. Protocols say it in their answers. */
const char *sl__decide_policy(const struct sl__decide_op *op);

/* Decide `req` (its domain, descriptors and hits) against the worker's
 * rules: `kind` is any but SL__DECIDE_RELEASE. True: answered in *now;
 * false: `done` answers later. */
bool sl__decide(struct sl__worker *w, struct sl__decide_op *op, enum sl__decide_kind kind,
                struct sl_request *req, sl__decide_done done, struct sl__decided *now);

/* Decide `req` against limits the protocol resolved itself (m[0..n), one
 * per descriptor; CL.THROTTLE's ad hoc limit): a check with no domain, so
 * no kill switch and no per-domain counting. */
bool sl__decide_matched(struct sl__worker *w, struct sl__decide_op *op, struct sl_request *req,
                        const struct sl_match *m, size_t n, sl__decide_done done,
                        struct sl__decided *now);

/* Forget the states of limits the protocol resolved itself (m[0..n);
 * DEL of a CL.THROTTLE key), then report the fresh ones: a reset with no
 * domain. */
bool sl__decide_matched_reset(struct sl__worker *w, struct sl__decide_op *op,
                              struct sl_request *req, const struct sl_match *m, size_t n,
                              sl__decide_done done, struct sl__decided *now);

/* Free every concurrency slot named by `lease` (borrowed for the call).
 * err SL_OK, SL_ENOENT (nothing held) or SL_EINVAL (malformed). */
bool sl__decide_release(struct sl__worker *w, struct sl__decide_op *op, const char *lease,
                        size_t len, sl__decide_done done, struct sl__decided *now);
/* The same with the request's observed latency (ns; negative: none), the
 * sample an adaptive_concurrency slot feeds its controller. */
bool sl__decide_release_latency(struct sl__worker *w, struct sl__decide_op *op, const char *lease,
                                size_t len, int64_t latency_ns, sl__decide_done done,
                                struct sl__decided *now);

/*
 * Batches. Between sl__decide_batch_begin() and sl__decide_batch_end() on a
 * worker (a protocol brackets what it decides from one read), checks
 * (SL__DECIDE_CHECK through sl__decide or sl__decide_matched) of one
 * descriptor are not started at once but queued, up to
 * SL__DECIDE_BATCH_MAX, and decided together, in order, through the store's
 * batch path when the batch ends, fills up or sl__decide_flush() is called;
 * their `done` callbacks then run in the order the checks were made. The
 * request is copied (its bytes too), so it is still borrowed for the call
 * only. Anything else (another kind, a store without a batch path, a
 * request too large to copy) first decides what is queued, then goes
 * alone, so decisions are always made in the order they were asked for.
 * Every decision of one batch takes its time once (the read's time).
 * Results are those of one-at-a-time decisions (tests/unit/
 * test_limiter_batch.c, tests/integration/test_resp_batch.py).
 *
 * A protocol must call sl__decide_flush() before anything that changes
 * what a queued decision would see other than another decision (the test
 * clock, an admin command), and its `done` callbacks must accept being
 * called from sl__decide_batch_end(). Nested begin/end pairs are counted:
 * the outermost end decides.
 */
#define SL__DECIDE_BATCH_MAX 32u
void sl__decide_batch_begin(struct sl__worker *w);
void sl__decide_batch_end(struct sl__worker *w);
void sl__decide_flush(struct sl__worker *w);
/* The worker ends: free its batch. */
void sl__decide_batch_free(struct sl__worker *w);

/* What to tell a client whose decision failed with `err` (a negative SL_E*
 * code from the store): what was wrong and, where the client can fix it,
 * how. The same words whatever the protocol. */
const char *sl__decide_strerror(int err);

/* For a service that answers from the rules without deciding each request
 * (the rate limit quota service): does `domain` say on_unmatched: deny,
 * and is a matched limit Envoy's requests_per_unit: 0 (deny everything)? */
bool sl__decide_denies_unmatched(const sl_rules *rules, struct sl_str domain);
bool sl__decide_limit_denies_all(const struct sl_limit *l);
/* Is l a rate a quota assignment can carry (sl__limit_is_rate: the same
 * test `rlqs: true` applies at load)? */
bool sl__decide_limit_is_rate(const struct sl_limit *l);
/* The rules' match of entries e[0..n) in whichever order they are a path
 * of the rules tree (a bucket id is a map; sl__rules_match_unordered). */
int sl__decide_match_unordered(const sl_rules *rules, struct sl_str domain,
                               const struct sl_entry *e, size_t n, struct sl_match *out);

#endif /* SL_SERVER_DECIDE_H */
