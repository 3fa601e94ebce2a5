/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats_config.c - the `stats:` configuration section (config.h): the
 * operator's statistics behind the dashboard, GET /v1/stats and `sluice
 * top` - their switch, their bounds and how keys are shown. It does not
 * apply them (server.c makes the registry, stats.c counts).
 */
#include <stdio.h>

#include "keytab.h"
#include "stats.h"

#define F(member) SL__KF(struct sl__stats_config, member)

static const char *const key_modes[] = {"values", "hash", "truncate", NULL};

static const struct sl__key keys[] = {
    {"stats.enabled", SL__K_BOOL, F(enabled), "true",
     "keep the per-second series and top limited keys (GET /v1/stats, /ui, sluice top)"},
    {"stats.max_series", SL__K_UINT, F(max_series), "64",
     "(domain, limit) pairs kept per worker; decisions of more are counted as dropped", .min = 1,
     .max = 4096},
    {"stats.top_keys", SL__K_UINT, F(top_keys), "32",
     "Space-Saving counters per (domain, limit) pair, per worker and window", .min = 1,
     .max = 1024},
    {"stats.top_window", SL__K_DUR_MS, F(top_window_ms), "60s",
     "the top keys cover the current window and the one before"},
    {"stats.keys", SL__K_CHOICE, F(keys), "values",
     "values | hash | truncate: how limited keys are kept and shown", .choices = key_modes},
    {"stats.key_bytes", SL__K_UINT, F(key_bytes), "4",
     "stats.keys truncate: bytes of each value kept", .min = 1, .max = 64},
};

static int check(void *cfg, const struct sl__config *c, struct sl__config_ctx *x)
{
    const struct sl__stats_config *s = cfg;

    (void)c;
    if (s->top_window_ms < 1000)
        return sl__config_fail_key(x, "stats.top_window", "stats.top_window must be at least 1s");
    return SL_OK;
}

const struct sl__config_section sl__stats_config_section = {
    .name = "stats",
    .size = sizeof(struct sl__stats_config),
    .keys = keys,
    .n_keys = sizeof(keys) / sizeof(keys[0]),
    .check = check,
};
