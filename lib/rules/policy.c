/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * policy.c - the limits of one descriptor: Envoy's `rate_limit` block (a
 * fixed window of one unit, epoch-aligned, month = 30 days, year = 365 days)
 * and Sluice's `limits:` list (any algorithm, any duration).
 *
 * It validates every value and combination, with a diagnostic at the
 * offending node, and fills struct sl__rlimit; it does not look at the
 * descriptor's key, value or children (descriptor.c does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ycheck.h"

#define DAY_NS (86400 * SL_NS_PER_S)

static const struct {
    const char *name;
    int64_t ns;
} units[] = {
    {"second", SL_NS_PER_S}, {"minute", 60 * SL_NS_PER_S}, {"hour", 3600 * SL_NS_PER_S},
    {"day", DAY_NS},         {"week", 7 * DAY_NS},         {"month", 30 * DAY_NS},
    {"year", 365 * DAY_NS},
};

/* Envoy upper-cases the unit before looking it up, so any case is accepted. */
static bool unit_ns(const char *s, int64_t *out)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(s, units[i].name) == 0) {
            *out = units[i].ns;
            return true;
        }
    }
    return false;
}

static char *default_name(const struct sl__rnode *node, size_t index, bool indexed)
{
    char buf[1024];

    if (!indexed)
        return sl__strdup(node->path);
    snprintf(buf, sizeof(buf), "%s#%zu", node->path, index + 1);
    return sl__strdup(buf);
}

static bool push_limit(struct sl__cctx *c, struct sl__rnode *node, const struct sl__ynode *at,
                       struct sl__rlimit *rl)
{
    struct sl__rlimit *v;

    for (size_t i = 0; i < rl->n_replaces; i++) {
        if (strcmp(rl->replaces[i], rl->name) == 0) {
            SL__ERR(c, at, "limit '%.200s' replaces itself; remove its own name from replaces",
                    rl->name);
            return false;
        }
    }
    if (node->n_limits >= SL_MAX_LIMITS) {
        SL__ERR(c, at, "a descriptor may carry at most %d limits", SL_MAX_LIMITS);
        return false;
    }
    v = realloc(node->limits, (node->n_limits + 1) * sizeof(*v));
    if (v == NULL) {
        c->d->oom = true;
        return false;
    }
    node->limits = v;
    v[node->n_limits++] = *rl;
    return true;
}

static void rlimit_free(struct sl__rlimit *rl)
{
    free(rl->name);
    for (size_t i = 0; i < rl->n_replaces; i++)
        free(rl->replaces[i]);
    free(rl->replaces);
    memset(rl, 0, sizeof(*rl));
}

/* Fields of rate_limit, in this order. */
enum { RL_UNIT, RL_REQUESTS, RL_UNLIMITED, RL_NAME, RL_REPLACES, RL_N };
static const char *const rl_names[RL_N] = {"unit", "requests_per_unit", "unlimited", "name",
                                           "replaces"};

static bool parse_rate_limit(struct sl__cctx *c, const struct sl__ynode *n, struct sl__rnode *node)
{
    const struct sl__ynode *v[RL_N];
    struct sl__rlimit rl;
    bool ok = sl__y_fields(c, n, "rate_limit", rl_names, RL_N, v);
    bool unlimited = false;
    uint64_t req = 0;

    memset(&rl, 0, sizeof(rl));
    sl_limit_init(&rl.l);
    rl.l.algo = SL_ALGO_FIXED_WINDOW;
    if (v[RL_UNLIMITED] != NULL)
        ok = sl__y_bool(c, v[RL_UNLIMITED], "unlimited", &unlimited) && ok;
    if (unlimited && v[RL_UNIT] != NULL) {
        SL__ERR(c, v[RL_UNIT], "an unlimited rate_limit takes no unit; remove unit");
        ok = false;
    } else if (!unlimited && v[RL_UNIT] == NULL && n->type == SL__Y_MAP) {
        SL__ERR(c, n,
                "rate_limit needs a unit (second, minute, hour, day, week, month, year) "
                "or unlimited: true");
        ok = false;
    } else if (v[RL_UNIT] != NULL) {
        if (v[RL_UNIT]->type != SL__Y_SCALAR || !unit_ns(v[RL_UNIT]->text, &rl.l.period_ns)) {
            SL__ERR(c, v[RL_UNIT],
                    "invalid unit '%.32s'; use second, minute, hour, day, week, "
                    "month or year",
                    v[RL_UNIT]->text ? v[RL_UNIT]->text : "");
            ok = false;
        }
    }
    if (v[RL_REQUESTS] != NULL)
        ok = sl__y_uint(c, v[RL_REQUESTS], "requests_per_unit", UINT32_MAX, &req) && ok;
    if (!unlimited && ok && v[RL_REQUESTS] == NULL) {
        SL__ERR(c, n, "rate_limit needs requests_per_unit (0 denies every request)");
        ok = false;
    }
    /* Envoy's requests_per_unit: 0 denies everything. No algorithm takes a
     * quota of 0, so it is kept as a flag that check.c applies; the limit
     * itself stays valid and never reaches the table. */
    rl.deny_all = req == 0;
    rl.l.requests = req == 0 ? 1 : req;
    if (v[RL_NAME] != NULL)
        ok = sl__y_str(c, v[RL_NAME], "name", &rl.name) && ok;
    rl.l.named = v[RL_NAME] != NULL;
    if (v[RL_REPLACES] != NULL)
        ok = sl__y_replaces(c, v[RL_REPLACES], &rl.replaces, &rl.n_replaces) && ok;
    if (unlimited) {
        node->unlimited = true;
        rlimit_free(&rl);
        return ok;
    }
    if (ok && rl.name == NULL)
        rl.name = default_name(node, 0, false);
    if (!ok || rl.name == NULL || !push_limit(c, node, n, &rl)) {
        rlimit_free(&rl);
        return false;
    }
    return true;
}

/* Fields of one `limits:` item. */
enum {
    LI_NAME,
    LI_ALGO,
    LI_REQUESTS,
    LI_PERIOD,
    LI_BURST,
    LI_DELAY,
    LI_NODELAY,
    LI_MIN_INTERVAL,
    LI_WARMUP,
    LI_LEASE,
    LI_COUNT_REJECTED,
    LI_SHADOW,
    LI_REPLACES,
    LI_BUCKETS,
    LI_CONTROLLER, /* adaptive_concurrency from here on (AD_FIRST) */
    LI_INITIAL_LIMIT,
    LI_MIN_LIMIT,
    LI_MAX_LIMIT,
    LI_BACKOFF_RATIO,
    LI_TIMEOUT,
    LI_SMOOTHING,
    LI_PROBE_MULTIPLIER,
    LI_RTT_TOLERANCE,
    LI_LONG_WINDOW,
    LI_QUEUE_SIZE,
    LI_PERCENTILE,
    LI_INTERVAL,
    LI_MIN_RTT_INTERVAL,
    LI_MIN_RTT_REQUESTS,
    LI_JITTER,
    LI_BUFFER,
    LI_N
};
#define AD_FIRST LI_CONTROLLER
static const char *const li_names[LI_N] = {
    "name", "algorithm", "requests", "period", "burst", "delay", "nodelay", "min_interval",
    "warmup", "lease", "count_rejected", "shadow_mode", "replaces", "buckets",
    /* adaptive_concurrency: the controller and its parameters, named as
     * the reverse proxy names them */
    "controller", "initial_limit", "min_limit", "max_limit", "backoff_ratio", "timeout",
    "smoothing", "probe_multiplier", "rtt_tolerance", "long_window", "queue_size", "percentile",
    "interval", "min_rtt_interval", "min_rtt_requests", "jitter", "buffer"};

/* The controllers that take each parameter (bits of enum sl_adaptive_algo),
 * and their names for a diagnostic. */
#define C_GRADIENT  (1u << SL_ADAPTIVE_GRADIENT)
#define C_GRADIENT2 (1u << SL_ADAPTIVE_GRADIENT2)
#define C_VEGAS     (1u << SL_ADAPTIVE_VEGAS)
#define C_AIMD      (1u << SL_ADAPTIVE_AIMD)
#define C_ALL       (C_GRADIENT | C_GRADIENT2 | C_VEGAS | C_AIMD)

static const struct {
    unsigned takes;
    const char *names;
} ad_params[LI_N - AD_FIRST] = {
    [LI_CONTROLLER - AD_FIRST] = {C_ALL, "every controller"},
    [LI_INITIAL_LIMIT - AD_FIRST] = {C_ALL, "every controller"},
    [LI_MIN_LIMIT - AD_FIRST] = {C_ALL, "every controller"},
    [LI_MAX_LIMIT - AD_FIRST] = {C_ALL, "every controller"},
    [LI_BACKOFF_RATIO - AD_FIRST] = {C_AIMD, "aimd"},
    [LI_TIMEOUT - AD_FIRST] = {C_AIMD, "aimd"},
    [LI_SMOOTHING - AD_FIRST] = {C_VEGAS | C_GRADIENT2, "vegas and gradient2"},
    [LI_PROBE_MULTIPLIER - AD_FIRST] = {C_VEGAS, "vegas"},
    [LI_RTT_TOLERANCE - AD_FIRST] = {C_GRADIENT2, "gradient2"},
    [LI_LONG_WINDOW - AD_FIRST] = {C_GRADIENT2, "gradient2"},
    [LI_QUEUE_SIZE - AD_FIRST] = {C_GRADIENT2, "gradient2"},
    [LI_PERCENTILE - AD_FIRST] = {C_GRADIENT, "gradient"},
    [LI_INTERVAL - AD_FIRST] = {C_GRADIENT, "gradient"},
    [LI_MIN_RTT_INTERVAL - AD_FIRST] = {C_GRADIENT, "gradient"},
    [LI_MIN_RTT_REQUESTS - AD_FIRST] = {C_GRADIENT, "gradient"},
    [LI_JITTER - AD_FIRST] = {C_GRADIENT, "gradient"},
    [LI_BUFFER - AD_FIRST] = {C_GRADIENT, "gradient"},
};

/* The controller when `controller:` is not given: gradient2 decides on
 * every sample, with no timer and no phase that pins the limit, which suits
 * a limit that only sees acquires and releases (docs/rules.md). */
#define AD_DEFAULT SL_ADAPTIVE_GRADIENT2

static bool item_algo(struct sl__cctx *c, const struct sl__ynode *item, const struct sl__ynode *a,
                      struct sl_limit *l)
{
    if (a == NULL) {
        SL__ERR(c, item,
                "a limit needs algorithm: token_bucket, gcra, leaky_bucket, "
                "fixed_window, sliding_window, sliding_log, concurrency or adaptive_concurrency");
        return false;
    }
    if (a->type != SL__Y_SCALAR || sl_algo_parse(a->text, &l->algo) != SL_OK) {
        SL__ERR(c, a,
                "unknown algorithm '%.32s'; use token_bucket, gcra, leaky_bucket, "
                "fixed_window, sliding_window, sliding_log, concurrency or adaptive_concurrency",
                a->text ? a->text : "");
        return false;
    }
    return true;
}

/* A fraction or percentage: a plain decimal number (no exponent, no sign). */
static bool y_number(struct sl__cctx *c, const struct sl__ynode *n, const char *what, double *out)
{
    double v = 0, scale = 1;
    bool dot = false, any = false;

    if (n->type != SL__Y_SCALAR || !n->plain) {
        SL__ERR(c, n, "%s must be a number such as 0.9", what);
        return false;
    }
    for (size_t i = 0; i < n->len; i++) {
        char ch = n->text[i];
        if (ch == '.' && !dot) {
            dot = true;
        } else if (ch >= '0' && ch <= '9' && i < 24) {
            any = true;
            if (dot) {
                scale /= 10;
                v += (ch - '0') * scale;
            } else {
                v = v * 10 + (ch - '0');
            }
        } else {
            SL__ERR(c, n, "%s must be a number such as 0.9, not '%.64s'", what, n->text);
            return false;
        }
    }
    if (!any) {
        SL__ERR(c, n, "%s must be a number such as 0.9, not '%.64s'", what, n->text);
        return false;
    }
    *out = v;
    return true;
}

static bool y_u32(struct sl__cctx *c, const struct sl__ynode *n, const char *what, uint32_t *out)
{
    uint64_t v;

    if (!sl__y_uint(c, n, what, UINT32_MAX, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* The parameters of one controller key (index k of li_names) into cfg. */
static bool ad_param(struct sl__cctx *c, const struct sl__ynode *n, int k,
                     struct sl_adaptive_config *cfg)
{
    const char *what = li_names[k];

    switch (k) {
    case LI_INITIAL_LIMIT:
        return y_u32(c, n, what, &cfg->initial_limit);
    case LI_MIN_LIMIT:
        return y_u32(c, n, what, &cfg->min_limit);
    case LI_MAX_LIMIT:
        return y_u32(c, n, what, &cfg->max_limit);
    case LI_BACKOFF_RATIO:
        return y_number(c, n, what, &cfg->backoff_ratio);
    case LI_TIMEOUT:
        return sl__y_duration(c, n, what, &cfg->timeout_ns);
    case LI_SMOOTHING:
        return y_number(c, n, what, &cfg->smoothing);
    case LI_PROBE_MULTIPLIER:
        return y_u32(c, n, what, &cfg->probe_multiplier);
    case LI_RTT_TOLERANCE:
        return y_number(c, n, what, &cfg->rtt_tolerance);
    case LI_LONG_WINDOW:
        return y_u32(c, n, what, &cfg->long_window);
    case LI_QUEUE_SIZE:
        return y_u32(c, n, what, &cfg->queue_size);
    case LI_PERCENTILE:
        return y_number(c, n, what, &cfg->percentile);
    case LI_INTERVAL:
        return sl__y_duration(c, n, what, &cfg->update_interval_ns);
    case LI_MIN_RTT_INTERVAL:
        return sl__y_duration(c, n, what, &cfg->min_rtt_interval_ns);
    case LI_MIN_RTT_REQUESTS:
        return y_u32(c, n, what, &cfg->min_rtt_requests);
    case LI_JITTER:
        return y_number(c, n, what, &cfg->jitter_pct);
    case LI_BUFFER:
        return y_number(c, n, what, &cfg->buffer_pct);
    }
    return true;
}

/* The keys of other algorithms that make no sense for an adaptive limit. */
static const int ad_refused[] = {LI_REQUESTS, LI_PERIOD,       LI_BURST, LI_DELAY,
                                 LI_NODELAY,  LI_MIN_INTERVAL, LI_WARMUP};

/* adaptive_concurrency: the controller, its parameters (unset: the
 * controller's defaults), each checked against the controllers that take
 * it, then sl_adaptive_config_validate. Other algorithms take none. */
static bool item_adaptive(struct sl__cctx *c, const struct sl__ynode *item,
                          const struct sl__ynode **v, struct sl__rlimit *rl)
{
    enum sl_adaptive_algo algo = AD_DEFAULT;
    const char *why = NULL;
    bool ok = true;

    if (rl->l.algo != SL_ALGO_ADAPTIVE_CONCURRENCY) {
        for (int k = AD_FIRST; k < LI_N; k++) {
            if (v[k] == NULL)
                continue;
            SL__ERR(c, v[k],
                    "%s applies to algorithm adaptive_concurrency only (its controller's "
                    "parameters); remove it or use adaptive_concurrency",
                    li_names[k]);
            ok = false;
        }
        return ok;
    }
    for (size_t i = 0; i < sizeof(ad_refused) / sizeof(ad_refused[0]); i++) {
        if (v[ad_refused[i]] == NULL)
            continue;
        SL__ERR(c, v[ad_refused[i]],
                "%s does not apply to algorithm adaptive_concurrency (its limit is learned "
                "between min_limit and max_limit); remove it",
                li_names[ad_refused[i]]);
        ok = false;
    }
    if (v[LI_CONTROLLER] != NULL &&
        (v[LI_CONTROLLER]->type != SL__Y_SCALAR ||
         sl_adaptive_algo_parse(v[LI_CONTROLLER]->text, &algo) != SL_OK)) {
        SL__ERR(c, v[LI_CONTROLLER],
                "unknown controller '%.32s'; use gradient, gradient2, vegas or aimd",
                v[LI_CONTROLLER]->text ? v[LI_CONTROLLER]->text : "");
        return false;
    }
    if (v[LI_LEASE] == NULL) {
        SL__ERR(c, item,
                "adaptive_concurrency needs lease, a duration such as 30s (an unreleased slot "
                "frees itself after it, counted as a drop)");
        ok = false;
    }
    sl_adaptive_config_init(&rl->al.cfg, algo);
    for (int k = AD_FIRST + 1; k < LI_N; k++) {
        if (v[k] == NULL)
            continue;
        if (!(ad_params[k - AD_FIRST].takes & (1u << algo))) {
            SL__ERR(c, v[k],
                    "%s is a parameter of controller %s, not of %s; remove it or change the "
                    "controller",
                    li_names[k], ad_params[k - AD_FIRST].names, sl_adaptive_algo_name(algo));
            ok = false;
            continue;
        }
        ok = ad_param(c, v[k], k, &rl->al.cfg) && ok;
    }
    if (ok && sl_adaptive_config_validate(&rl->al.cfg, &why) != SL_OK) {
        SL__ERR(c, item, "%s", why);
        ok = false;
    }
    if (ok && rl->al.cfg.max_limit > SL_ADAPTIVE_MAX_LIMIT) {
        SL__ERR(c, v[LI_MAX_LIMIT] != NULL ? v[LI_MAX_LIMIT] : item, "max_limit must be at most %u",
                SL_ADAPTIVE_MAX_LIMIT);
        ok = false;
    }
    rl->l.adaptive = true;
    rl->l.requests = rl->al.cfg.max_limit;
    return ok;
}

/* `buckets: N`: sliding_window's sub-windows per period, 1..SL_SW_BUCKETS_MAX. */
static bool item_buckets(struct sl__cctx *c, const struct sl__ynode *n, struct sl_limit *l)
{
    uint64_t b = 0;

    if (l->algo != SL_ALGO_SLIDING_WINDOW) {
        SL__ERR(c, n,
                "buckets applies to algorithm sliding_window only (it splits the period into "
                "sub-windows); remove it or use sliding_window");
        return false;
    }
    if (!sl__y_uint(c, n, "buckets", SL_SW_BUCKETS_MAX, &b))
        return false;
    if (b == 0) {
        SL__ERR(c, n, "buckets must be from 1 to %u, not 0", SL_SW_BUCKETS_MAX);
        return false;
    }
    l->buckets = (uint16_t)b;
    return true;
}

static bool item_numbers(struct sl__cctx *c, const struct sl__ynode *item,
                         const struct sl__ynode **v, struct sl_limit *l)
{
    bool ok = true;

    if (l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY) {
        /* requests, period: refused by item_adaptive; requests is max_limit */
    } else if (v[LI_REQUESTS] == NULL) {
        SL__ERR(c, item, "a limit needs requests (how many per period)");
        ok = false;
    } else {
        ok = sl__y_uint(c, v[LI_REQUESTS], "requests", (uint64_t)INT64_MAX, &l->requests) && ok;
    }
    if (l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY) {
        /* no period */
    } else if (v[LI_PERIOD] != NULL)
        ok = sl__y_duration(c, v[LI_PERIOD], "period", &l->period_ns) && ok;
    else if (l->algo != SL_ALGO_CONCURRENCY) {
        SL__ERR(c, item, "a limit needs period, a duration such as 1s, 5m or 1h");
        ok = false;
    }
    if (v[LI_BURST] != NULL && sl__y_int(c, v[LI_BURST], "burst", &l->burst) && l->burst < 0) {
        SL__ERR(c, v[LI_BURST], "burst must be >= 0");
        ok = false;
    } else if (v[LI_BURST] != NULL && l->burst < 0) {
        ok = false;
    }
    if (v[LI_DELAY] != NULL && sl__y_int(c, v[LI_DELAY], "delay", &l->delay) && l->delay < 0) {
        SL__ERR(c, v[LI_DELAY], "delay must be >= 0");
        ok = false;
    }
    if (v[LI_NODELAY] != NULL)
        ok = sl__y_bool(c, v[LI_NODELAY], "nodelay", &l->nodelay) && ok;
    if (v[LI_MIN_INTERVAL] != NULL)
        ok = sl__y_duration(c, v[LI_MIN_INTERVAL], "min_interval", &l->min_interval_ns) && ok;
    if (v[LI_WARMUP] != NULL)
        ok = sl__y_duration(c, v[LI_WARMUP], "warmup", &l->warmup_ns) && ok;
    if (v[LI_LEASE] != NULL)
        ok = sl__y_duration(c, v[LI_LEASE], "lease", &l->lease_ns) && ok;
    if (v[LI_COUNT_REJECTED] != NULL)
        ok = sl__y_bool(c, v[LI_COUNT_REJECTED], "count_rejected", &l->count_rejected) && ok;
    if (v[LI_SHADOW] != NULL)
        ok = sl__y_bool(c, v[LI_SHADOW], "shadow_mode", &l->shadow) && ok;
    if (v[LI_BUCKETS] != NULL)
        ok = item_buckets(c, v[LI_BUCKETS], l) && ok;
    return ok;
}

/* Combinations that make no sense, reported where the operator can fix them. */
static bool item_combination(struct sl__cctx *c, const struct sl__ynode *item,
                             const struct sl__ynode **v, const struct sl_limit *l)
{
    const char *why = NULL;

    if (v[LI_WARMUP] != NULL && v[LI_BURST] != NULL) {
        SL__ERR(c, v[LI_WARMUP],
                "warmup cannot be combined with burst (warm-up sets its own "
                "capacity); remove one of them");
        return false;
    }
    if (v[LI_NODELAY] != NULL && v[LI_DELAY] != NULL && l->nodelay) {
        SL__ERR(c, v[LI_NODELAY], "nodelay cannot be combined with delay; remove one of them");
        return false;
    }
    if (sl_limit_validate(l, &why) != SL_OK) {
        SL__ERR(c, item, "%s", why);
        return false;
    }
    return true;
}

static bool parse_item(struct sl__cctx *c, const struct sl__ynode *item, size_t index, bool indexed,
                       struct sl__rnode *node)
{
    const struct sl__ynode *v[LI_N];
    struct sl__rlimit rl;
    bool ok;

    memset(&rl, 0, sizeof(rl));
    sl_limit_init(&rl.l);
    ok = sl__y_fields(c, item, "a limit", li_names, LI_N, v);
    if (item->type != SL__Y_MAP)
        return false;
    ok = item_algo(c, item, v[LI_ALGO], &rl.l) && ok;
    ok = ok && item_adaptive(c, item, v, &rl);
    ok = ok && item_numbers(c, item, v, &rl.l);
    ok = ok && item_combination(c, item, v, &rl.l);
    if (v[LI_NAME] != NULL)
        ok = sl__y_str(c, v[LI_NAME], "name", &rl.name) && ok;
    rl.l.named = v[LI_NAME] != NULL;
    if (v[LI_REPLACES] != NULL)
        ok = sl__y_replaces(c, v[LI_REPLACES], &rl.replaces, &rl.n_replaces) && ok;
    if (ok && rl.name == NULL)
        rl.name = default_name(node, index, indexed);
    if (!ok || rl.name == NULL || !push_limit(c, node, item, &rl)) {
        rlimit_free(&rl);
        return false;
    }
    return true;
}

static bool parse_limits(struct sl__cctx *c, const struct sl__ynode *n, struct sl__rnode *node,
                         bool has_rate_limit)
{
    bool ok = true;

    if (n->type != SL__Y_SEQ) {
        SL__ERR(c, n,
                "limits must be a list: limits: [{algorithm: gcra, requests: 10, "
                "period: 1m}]");
        return false;
    }
    for (size_t i = 0; i < n->n_kids; i++)
        ok = parse_item(c, n->kids[i], i, has_rate_limit || n->n_kids > 1, node) && ok;
    return ok;
}

bool sl__parse_policy(struct sl__cctx *c, const struct sl__ynode *rate_limit,
                      const struct sl__ynode *limits, struct sl__rnode *node)
{
    bool ok = true;

    if (rate_limit != NULL)
        ok = parse_rate_limit(c, rate_limit, node) && ok;
    if (limits != NULL)
        ok = parse_limits(c, limits, node, rate_limit != NULL) && ok;
    node->has_policy = rate_limit != NULL || limits != NULL;
    for (size_t i = 0; i < node->n_limits; i++) {
        struct sl__rlimit *rl = &node->limits[i];
        rl->l.shadow = rl->l.shadow || node->shadow;
        rl->l.name = rl->name;
        sl_limit_finish(&rl->l);
    }
    return ok;
}
