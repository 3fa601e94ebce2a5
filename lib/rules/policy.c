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
    LI_N
};
static const char *const li_names[LI_N] = {
    "name",         "algorithm", "requests", "period",         "burst",       "delay",   "nodelay",
    "min_interval", "warmup",    "lease",    "count_rejected", "shadow_mode", "replaces"};

static bool item_algo(struct sl__cctx *c, const struct sl__ynode *item, const struct sl__ynode *a,
                      struct sl_limit *l)
{
    if (a == NULL) {
        SL__ERR(c, item,
                "a limit needs algorithm: token_bucket, gcra, leaky_bucket, "
                "fixed_window, sliding_window, sliding_log or concurrency");
        return false;
    }
    if (a->type != SL__Y_SCALAR || sl_algo_parse(a->text, &l->algo) != SL_OK) {
        SL__ERR(c, a,
                "unknown algorithm '%.32s'; use token_bucket, gcra, leaky_bucket, "
                "fixed_window, sliding_window, sliding_log or concurrency",
                a->text ? a->text : "");
        return false;
    }
    return true;
}

static bool item_numbers(struct sl__cctx *c, const struct sl__ynode *item,
                         const struct sl__ynode **v, struct sl_limit *l)
{
    bool ok = true;

    if (v[LI_REQUESTS] == NULL) {
        SL__ERR(c, item, "a limit needs requests (how many per period)");
        ok = false;
    } else {
        ok = sl__y_uint(c, v[LI_REQUESTS], "requests", (uint64_t)INT64_MAX, &l->requests) && ok;
    }
    if (v[LI_PERIOD] != NULL)
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
