/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sluice.c - what every part of the library shares: error strings, algorithm
 * names, the common validation and identity of a limit, and the bare
 * sl_algo_* entry points that dispatch to the ops tables.
 *
 * It does not decide anything itself: each algorithm lives in lib/algo/.
 */
#include <string.h>

#include "sluice.h"
#include "sluice_adaptive.h"
#include "algo/algo.h"
#include "sluice_sat.h"

static const char *const errors[] = {
    [0] = "success",
    [-SL_EINVAL] = "invalid argument",
    [-SL_ENOMEM] = "out of memory",
    [-SL_ETOOBIG] = "too big",
    [-SL_EFULL] = "table full",
    [-SL_ENOENT] = "not found",
    [-SL_ERANGE] = "out of range",
    [-SL_EPARSE] = "parse error",
};

const char *sl_strerror(int err)
{
    if (err > 0 || (size_t)-err >= sizeof(errors) / sizeof(errors[0]))
        return "unknown error";
    return errors[-err];
}

static const struct sl__algo_ops *const algos[SL_ALGO_COUNT] = {
    [SL_ALGO_TOKEN_BUCKET] = &sl__algo_token_bucket,
    [SL_ALGO_GCRA] = &sl__algo_gcra,
    [SL_ALGO_LEAKY_BUCKET] = &sl__algo_leaky_bucket,
    [SL_ALGO_FIXED_WINDOW] = &sl__algo_fixed_window,
    [SL_ALGO_SLIDING_WINDOW] = &sl__algo_sliding_window,
    [SL_ALGO_SLIDING_LOG] = &sl__algo_sliding_log,
    [SL_ALGO_CONCURRENCY] = &sl__algo_concurrency,
    [SL_ALGO_ADAPTIVE_CONCURRENCY] = &sl__algo_adaptive_concurrency,
};

const struct sl__algo_ops *sl__algo_ops(enum sl_algo algo)
{
    if ((unsigned)algo >= SL_ALGO_COUNT)
        return NULL;
    return algos[algo];
}

const char *sl_algo_name(enum sl_algo algo)
{
    const struct sl__algo_ops *ops = sl__algo_ops(algo);
    return ops ? ops->name : NULL;
}

int sl_algo_parse(const char *name, enum sl_algo *out)
{
    for (int i = 0; i < SL_ALGO_COUNT; i++) {
        if (strcmp(algos[i]->name, name) == 0) {
            *out = (enum sl_algo)i;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

const char *sl_verdict_name(enum sl_verdict v)
{
    switch (v) {
    case SL_ALLOW:
        return "allow";
    case SL_DELAY:
        return "delay";
    case SL_DENY:
        return "deny";
    }
    return "?";
}

void sl_limit_init(struct sl_limit *l)
{
    memset(l, 0, sizeof(*l));
    l->algo = SL_ALGO_TOKEN_BUCKET;
    l->burst = -1;
    l->log_cap = SL_LOG_CAP_DEFAULT;
}

int sl_limit_validate(const struct sl_limit *l, const char **why)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);
    const char *dummy;

    if (why == NULL)
        why = &dummy;
    if (ops == NULL) {
        *why = "unknown algorithm";
        return SL_EINVAL;
    }
    if (l->requests == 0) {
        *why = "requests must be at least 1";
        return SL_EINVAL;
    }
    if (l->algo != SL_ALGO_CONCURRENCY && l->algo != SL_ALGO_ADAPTIVE_CONCURRENCY &&
        l->period_ns <= 0) {
        *why = "period must be a positive duration";
        return SL_EINVAL;
    }
    if (l->burst < -1) {
        *why = "burst must be >= 0";
        return SL_EINVAL;
    }
    if (l->delay < 0) {
        *why = "delay must be >= 0";
        return SL_EINVAL;
    }
    if (l->min_interval_ns < 0 || l->warmup_ns < 0 || l->lease_ns < 0) {
        *why = "durations must be >= 0";
        return SL_EINVAL;
    }
    if (l->buckets > 1 && l->algo != SL_ALGO_SLIDING_WINDOW) {
        *why = "buckets applies to sliding_window only";
        return SL_EINVAL;
    }
    return ops->validate(l, why);
}

/* The identity hash is stable across processes and versions of a rules file
 * (it names state in Redis too), so it uses a fixed, public key: it is an
 * identity, not a defence against flooding. */
static const uint8_t identity_key[16] = "sluice-limit-id";

static uint64_t bits_of(double x)
{
    uint64_t u;

    memcpy(&u, &x, sizeof(u));
    return u;
}

/* adaptive_concurrency: requests is max_limit, and the controller's
 * configuration is part of the identity (another one starts afresh). */
static void finish_adaptive(struct sl_limit *l)
{
    const struct sl_adaptive_config *c = &((struct sl_adaptive_limit *)(void *)l)->cfg;
    uint64_t v[20] = {
        (uint64_t)l->algo,
        (uint64_t)c->algo,
        c->initial_limit,
        c->min_limit,
        c->max_limit,
        bits_of(c->backoff_ratio),
        (uint64_t)c->timeout_ns,
        bits_of(c->smoothing),
        c->probe_multiplier,
        bits_of(c->rtt_tolerance),
        c->long_window,
        c->queue_size,
        bits_of(c->percentile),
        (uint64_t)c->update_interval_ns,
        (uint64_t)c->min_rtt_interval_ns,
        c->min_rtt_requests,
        bits_of(c->jitter_pct),
        bits_of(c->buffer_pct),
        c->consecutive_at_min,
        (uint64_t)l->lease_ns,
    };

    l->requests = c->max_limit;
    l->id = sl_siphash(identity_key, v, sizeof(v));
}

void sl_limit_finish(struct sl_limit *l)
{
    if (l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY && l->adaptive) {
        finish_adaptive(l);
        return;
    }

    int64_t v[11] = {
        (int64_t)l->algo,
        (int64_t)l->requests,
        l->period_ns,
        l->burst,
        l->delay,
        (int64_t)l->nodelay,
        l->min_interval_ns,
        l->warmup_ns,
        l->lease_ns,
        (int64_t)l->count_rejected * 2 + (l->algo == SL_ALGO_SLIDING_LOG ? l->log_cap : 0) * 4,
        0,
    };
    /* sliding_window's sub-windows are part of the identity (another N is
     * a fresh state); N = 1 hashes as before they existed, so the state of
     * every limit written then keeps its name. */
    size_t len = sizeof(v) - sizeof(v[0]);

    if (l->algo == SL_ALGO_SLIDING_WINDOW && l->buckets > 1) {
        v[10] = (int64_t)l->buckets;
        len = sizeof(v);
    }
    l->id = sl_siphash(identity_key, v, len);
}

int64_t sl_limit_quota(const struct sl_limit *l)
{
    int64_t burst;

    switch (l->algo) {
    case SL_ALGO_GCRA:
    case SL_ALGO_LEAKY_BUCKET:
        burst = l->burst < 0 ? 0 : l->burst;
        return sl__sat_add(burst, 1);
    case SL_ALGO_TOKEN_BUCKET:
        return l->burst < 0 ? sl__sat_i64(l->requests) : l->burst;
    default:
        return sl__sat_i64(l->requests);
    }
}

int64_t sl_ns_to_ms_ceil(int64_t ns)
{
    if (ns < 0)
        return -1;
    return ns / SL_NS_PER_MS + (ns % SL_NS_PER_MS != 0);
}

size_t sl_algo_state_size(const struct sl_limit *l)
{
    return sl__algo_ops(l->algo)->state_size(l);
}

void sl_algo_init(void *state, const struct sl_limit *l, int64_t now_ns)
{
    sl__algo_ops(l->algo)->init(state, l, now_ns);
}

void sl_algo_decide(void *state, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                    struct sl_decision *d)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);

    ops->check(state, l, now_ns, cost, d);
    if (cost == 0)
        return;
    if (d->verdict != SL_DENY || l->count_rejected)
        ops->commit(state, l, now_ns, cost, d);
}

/* ------------------------------------------------ sluice_state.h's steps */

void sl__state_check(const void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                     struct sl_decision *d)
{
    sl__algo_ops(l->algo)->check(st, l, now_ns, cost, d);
}

void sl__state_commit(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                      struct sl_decision *d)
{
    sl__algo_ops(l->algo)->commit(st, l, now_ns, cost, d);
}

int64_t sl__state_whole_at(const void *st, const struct sl_limit *l)
{
    return sl__algo_ops(l->algo)->whole_at(st, l);
}

bool sl__state_refund(void *st, const struct sl_limit *l, int64_t now_ns, uint64_t cost)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);

    return ops->refund != NULL && ops->refund(st, l, now_ns, cost);
}

int sl_algo_release(void *state, const struct sl_limit *l, int64_t now_ns, uint64_t lease)
{
    return sl_algo_release_latency(state, l, now_ns, lease, -1);
}

int sl_algo_release_latency(void *state, const struct sl_limit *l, int64_t now_ns, uint64_t lease,
                            int64_t latency_ns)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);

    if (ops->release == NULL)
        return SL_EINVAL;
    return ops->release(state, l, now_ns, lease, latency_ns);
}

void sl_adaptive_limit_init(struct sl_adaptive_limit *al, enum sl_adaptive_algo algo)
{
    sl_limit_init(&al->limit);
    sl_adaptive_config_init(&al->cfg, algo);
    al->limit.algo = SL_ALGO_ADAPTIVE_CONCURRENCY;
    al->limit.adaptive = true;
    al->limit.requests = al->cfg.max_limit;
}
