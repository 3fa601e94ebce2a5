/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sluice_adaptive.h - adaptive concurrency limits and partitions of libsluice
 * (installed beside sluice.h, whose SL_API, SL_OK and SL_EINVAL it uses).
 *
 * An adaptive limit is a concurrency limit that moves with the latency the
 * caller measures: it grows while latency stays near its no-load value and
 * shrinks when requests queue (latency rises) or fail. Four controllers:
 * "aimd", "vegas" and "gradient2" (Netflix's concurrency-limits AIMDLimit,
 * VegasLimit and Gradient2Limit) and "gradient" (Envoy's adaptive
 * concurrency gradient controller). docs/algorithms.md §Adaptive
 * concurrency gives every formula, default and difference.
 *
 * A partition divides one limit among up to SL_PARTITION_MAX priority classes
 * with guaranteed shares (docs/algorithms.md §Partitions).
 *
 * What they are not: they read no clock (every call takes `now_ns`, any
 * monotonic nanosecond clock; a time earlier than one already seen is taken
 * as that one), allocate nothing (the caller embeds the fixed-size structs),
 * do no I/O, take no lock: one struct is used by one thread at a time (the
 * caller serialises, e.g. one per worker or under its own lock). Randomness
 * (Envoy's jitter, Vegas's probe) comes from the caller's seed only, so a
 * run is reproducible. Floating point is used (the published formulas are in
 * doubles) with + - * / and sqrt only, which IEEE 754 rounds exactly, so
 * results do not depend on the platform's libm.
 *
 * The structs' fields are readable but belong to the library: change them
 * only through these functions.
 */
#ifndef SLUICE_ADAPTIVE_H
#define SLUICE_ADAPTIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- controllers */

enum sl_adaptive_algo {
    SL_ADAPTIVE_GRADIENT = 0, /* Envoy's gradient controller (windows, minRTT) */
    SL_ADAPTIVE_GRADIENT2,    /* Netflix Gradient2Limit (short vs long RTT) */
    SL_ADAPTIVE_VEGAS,        /* Netflix VegasLimit (queue estimate vs noload RTT) */
    SL_ADAPTIVE_AIMD,         /* Netflix AIMDLimit (loss based) */
};

/* "gradient", "gradient2", "vegas", "aimd" -> *out: SL_OK, or SL_EINVAL. */
SL_API int sl_adaptive_algo_parse(const char *name, enum sl_adaptive_algo *out);
/* The name sl_adaptive_algo_parse() reads; "?" for an unknown value. */
SL_API const char *sl_adaptive_algo_name(enum sl_adaptive_algo algo);

/* Latency samples one gradient window keeps (a reservoir beyond that). */
#define SL_ADAPTIVE_SAMPLES 256

/*
 * Parameters. sl_adaptive_config_init(c, algo) fills every field with the
 * defaults of that controller; each controller reads only its own fields.
 * Durations are ns; ratios are fractions; percentages are 0..100.
 */
struct sl_adaptive_config {
    enum sl_adaptive_algo algo;
    uint32_t initial_limit; /* aimd 20, vegas 20, gradient2 20, gradient 3 */
    uint32_t min_limit;     /* aimd 20, vegas 1, gradient2 20; gradient: min_concurrency, 3 */
    uint32_t max_limit;     /* aimd 200, vegas 1000, gradient2 200, gradient 1000 */
    /* aimd */
    double backoff_ratio; /* limit *= this on a drop or a timeout; [0.5, 1), 0.9 */
    int64_t timeout_ns;   /* a latency above this counts as a drop; 5 s */
    /* vegas and gradient2 */
    double smoothing; /* weight of the new estimate, (0, 1]; vegas 1.0, gradient2 0.2 */
    /* vegas */
    uint32_t probe_multiplier; /* re-probe noload RTT every ~N x limit samples; 30 */
    /* gradient2 */
    double rtt_tolerance; /* latency ratio tolerated before shrinking, >= 1; 1.5 */
    uint32_t long_window; /* samples of the long RTT's exponential average; 600 */
    uint32_t queue_size;  /* growth allowed per sample before smoothing; 4 */
    /* gradient (Envoy) */
    double percentile;           /* sample_aggregate_percentile, (0, 100]; 50 */
    int64_t update_interval_ns;  /* concurrency_update_interval; 100 ms */
    int64_t min_rtt_interval_ns; /* min_rtt_calc_params.interval; 60 s */
    uint32_t min_rtt_requests;   /* min_rtt_calc_params.request_count; 50 */
    double jitter_pct;           /* min_rtt_calc_params.jitter, [0, 100]; 15 */
    double buffer_pct;           /* min_rtt_calc_params.buffer, [0, 100]; 25 */
    uint32_t consecutive_at_min; /* windows at min_limit that re-measure; 5 */
    /* gradient: a window raises the limit to at most twice the most in
     * flight its requests started with (one that used less than half of
     * it does not raise it); true. false: Envoy's formula exactly, which
     * also grows a limit nobody uses. */
    bool app_limited;
};

/* Fills `c` with the defaults of `algo` (above). */
SL_API void sl_adaptive_config_init(struct sl_adaptive_config *c, enum sl_adaptive_algo algo);
/* SL_OK, or SL_EINVAL with *why a static sentence saying what to fix. */
SL_API int sl_adaptive_config_validate(const struct sl_adaptive_config *c, const char **why);

/* What a controller is doing (sl_adaptive_stats.phase). */
enum sl_adaptive_phase {
    SL_ADAPTIVE_STEADY = 0,        /* adjusting the limit from samples */
    SL_ADAPTIVE_MEASURING_MIN_RTT, /* gradient: limit pinned to min_limit, measuring minRTT */
};

/* "steady", "measuring_min_rtt"; "?" for an unknown value. */
SL_API const char *sl_adaptive_phase_name(enum sl_adaptive_phase phase);

/* How a request ended (sl_adaptive_release). */
enum sl_adaptive_outcome {
    SL_ADAPTIVE_SUCCESS = 0, /* answered: its latency is a sample */
    SL_ADAPTIVE_DROPPED,     /* failed or timed out: a drop (aimd, vegas) */
    SL_ADAPTIVE_IGNORED,     /* cancelled, unusable: frees the slot, no sample */
};

/* Given by sl_adaptive_acquire, handed back to sl_adaptive_release. */
struct sl_adaptive_ticket {
    int64_t start_ns;  /* when it was admitted */
    uint32_t inflight; /* in flight, this one included, when it was admitted */
};

/* One controller's whole state: embed it, sl_adaptive_init() it. */
struct sl_adaptive {
    struct sl_adaptive_config cfg; /* a copy, validated */
    double estimate;               /* the limit as the formulas carry it */
    uint32_t limit;                /* what acquire admits up to: floor(estimate) */
    uint32_t inflight;             /* acquired and not released */
    int64_t last_ns;               /* latest time seen (the clock never goes back) */
    uint64_t rng;                  /* splitmix64 state, from the seed */
    uint64_t admitted, rejected, dropped, samples;
    int64_t last_rtt_ns; /* latest sample (gradient: latest window's aggregate) */
    double gradient;     /* latest gradient (gradient, gradient2) */
    /* vegas */
    int64_t noload_ns; /* rtt_noload: the least latency since the last probe */
    uint64_t probe_count;
    double probe_jitter; /* [0.5, 1), drawn at each probe */
    /* gradient2 */
    double long_rtt_ns; /* exponential average; the first 10 samples averaged */
    double long_sum_ns;
    uint32_t long_count;
    /* gradient */
    int32_t phase;           /* enum sl_adaptive_phase */
    int64_t min_rtt_ns;      /* 0 until first measured */
    int64_t epoch_ns;        /* start of the current minRTT measurement */
    int64_t window_end_ns;   /* end of the sampling window */
    int64_t next_min_rtt_ns; /* when the next scheduled minRTT measurement starts */
    uint32_t deferred_limit; /* limit to restore after measuring */
    uint32_t at_min;         /* consecutive windows that set the limit at min_limit */
    double headroom;         /* latest sqrt(gradient x limit) */
    uint64_t window_seen;    /* samples offered to the window (reservoir) */
    uint32_t n;              /* samples held */
    uint32_t window_peak;    /* the most in flight a window's requests started with */
    int64_t window[SL_ADAPTIVE_SAMPLES];
};

/* What a controller shows (sl_adaptive_stats). RTTs are ns, 0 when unknown. */
struct sl_adaptive_stats {
    uint32_t limit, inflight;
    enum sl_adaptive_phase phase;
    int64_t min_rtt_ns;      /* gradient: minRTT; vegas: rtt_noload */
    int64_t long_rtt_ns;     /* gradient2: the long RTT */
    int64_t sample_rtt_ns;   /* latest sample, or gradient's latest window aggregate */
    double gradient;         /* gradient, gradient2; 0 elsewhere */
    double headroom;         /* gradient: sqrt term; gradient2: queue_size */
    double estimate;         /* the unrounded limit */
    int64_t next_min_rtt_ns; /* gradient: when the next minRTT measurement starts */
    /* acquires admitted and refused, releases dropped, latencies fed (gradient
     * drops those of requests sent before its latest minRTT measurement) */
    uint64_t admitted, rejected, dropped, samples;
};

/* Starts `a` at `now_ns` with a copy of `c`: SL_OK, or SL_EINVAL (with *why,
 * which may be NULL) if `c` does not validate. `seed` drives the jitter. */
SL_API int sl_adaptive_init(struct sl_adaptive *a, const struct sl_adaptive_config *c,
                            int64_t now_ns, uint64_t seed, const char **why);
/* Admits one request if fewer than the limit are in flight: true and `t`
 * filled (pass it to release), or false (the caller sheds it: 503). */
SL_API bool sl_adaptive_acquire(struct sl_adaptive *a, int64_t now_ns,
                                struct sl_adaptive_ticket *t);
/* The request of `t` ended at `now_ns` with `latency_ns` (e.g. from sending
 * it to the response head) and `outcome`: frees its slot and, unless
 * ignored, feeds the sample. A negative latency is no sample; 0 counts as
 * 1 ns; any latency up to INT64_MAX is handled. */
SL_API void sl_adaptive_release(struct sl_adaptive *a, const struct sl_adaptive_ticket *t,
                                int64_t now_ns, int64_t latency_ns,
                                enum sl_adaptive_outcome outcome);
/* The bare sample, for a caller that counts in-flight itself: the latency
 * `rtt_ns` of a request that ended at `now_ns`, `inflight` requests in
 * flight when it started (itself included), `dropped` as above. */
SL_API void sl_adaptive_on_sample(struct sl_adaptive *a, int64_t now_ns, int64_t rtt_ns,
                                  uint32_t inflight, bool dropped);
/* Closes the gradient controller's windows and starts due minRTT
 * measurements at `now_ns` (acquire, release and on_sample do it too): call
 * it from a timer when traffic may stop. No-op for the other controllers. */
SL_API void sl_adaptive_tick(struct sl_adaptive *a, int64_t now_ns);
/* The current limit. */
SL_API uint32_t sl_adaptive_limit(const struct sl_adaptive *a);
/* Fills `s`. */
SL_API void sl_adaptive_stats(const struct sl_adaptive *a, struct sl_adaptive_stats *s);

/* --------------------------------------------- adaptive_concurrency limits */

/*
 * A limit of algorithm SL_ALGO_ADAPTIVE_CONCURRENCY for the table and the
 * limiter (sluice.h): per key, admitted while fewer than the controller's
 * current limit are in flight, one slot per lease, released with the
 * observed latency (sl_limiter_release_latency). The rules make these from
 * `algorithm: adaptive_concurrency`; an embedder makes one with
 * sl_adaptive_limit_init(), sets cfg and limit.lease_ns, then
 * sl_limit_finish(&al.limit) (which sets limit.requests to cfg.max_limit
 * and hashes cfg into the limit's id) and sl_limit_validate(&al.limit).
 * Pass &al.limit wherever a const struct sl_limit * is taken: the library
 * finds cfg after it, so `limit` must stay the member of its
 * sl_adaptive_limit (a copy of the bare sl_limit is not an adaptive limit,
 * and sl_limit_validate refuses one that was not made here).
 */
struct sl_adaptive_limit {
    struct sl_limit limit;
    struct sl_adaptive_config cfg;
};

/* sl_limit_init(&al->limit), algorithm adaptive_concurrency, and cfg the
 * defaults of controller `algo` (sl_adaptive_config_init); lease_ns is 0
 * (the caller must set it). */
SL_API void sl_adaptive_limit_init(struct sl_adaptive_limit *al, enum sl_adaptive_algo algo);

/* Most in flight an adaptive_concurrency limit may allow (max_limit): its
 * state per key is about 2.4 KB plus 16 bytes per slot. */
#define SL_ADAPTIVE_MAX_LIMIT 10000u

/* ---------------------------------------------------------------- partitions */

#define SL_PARTITION_MAX 8

/* Classes 0 .. n-1, most critical first; share_pct[k] is class k's
 * guaranteed share of the limit in percent; the shares sum to at most 100
 * (what is left is shared by all). */
struct sl_partition_config {
    uint32_t n;
    uint32_t share_pct[SL_PARTITION_MAX];
};

/* Three classes: critical 50 %, default 35 %, sheddable 15 %. */
SL_API void sl_partition_config_init(struct sl_partition_config *c);
/* SL_OK, or SL_EINVAL with *why. */
SL_API int sl_partition_config_validate(const struct sl_partition_config *c, const char **why);

struct sl_partition_class {
    uint64_t admitted, shed;
    uint32_t inflight;
};

struct sl_partition {
    struct sl_partition_config cfg;
    uint32_t inflight; /* all classes */
    struct sl_partition_class cls[SL_PARTITION_MAX];
};

/* SL_OK, or SL_EINVAL (with *why, which may be NULL). */
SL_API int sl_partition_init(struct sl_partition *p, const struct sl_partition_config *c,
                             const char **why);
/* Class k's guaranteed slots under `limit`: floor(limit x share_pct / 100). */
SL_API uint32_t sl_partition_guaranteed(const struct sl_partition *p, uint32_t cls, uint32_t limit);
/* Admits one request of class `cls` under `limit` (e.g. sl_adaptive_limit):
 * true if the class is within its guaranteed share, or if fewer than `limit`
 * are in flight in all; false (shed) otherwise, or for a class >= n. */
SL_API bool sl_partition_try_acquire(struct sl_partition *p, uint32_t cls, uint32_t limit);
/* Frees a slot of class `cls`: SL_OK, or SL_ENOENT if it holds none. */
SL_API int sl_partition_release(struct sl_partition *p, uint32_t cls);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_ADAPTIVE_H */
