/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * args.c - the arguments of a call (module.h): numkeys, the keys, now,
 * the settings (slack, prefix) and the items, every number checked, every error an
 * error reply that says which argument is wrong. It does not open keys.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "module.h"

static struct sl__mitem items[SL__M_MAX_ITEMS];

int sl__merror(RedisModuleCtx *ctx, const char *code, const char *text)
{
    char msg[256];

    snprintf(msg, sizeof(msg), "%s %s", code, text);
    return sl__rm.reply_with_error(ctx, msg);
}

/* An error reply, and false for the caller to return. */
static bool refuse(RedisModuleCtx *ctx, const char *code, const char *text)
{
    sl__merror(ctx, code, text);
    return false;
}

static bool num(RedisModuleString *s, int64_t lo, int64_t hi, int64_t *out)
{
    long long v;

    if (sl__rm.string_to_long_long(s, &v) != SL__RM_OK || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* A decimal integer at *p (an optional '-'), up to `stop` or the end;
 * *p moves past it and its separator. */
static bool field(const char **p, const char *end, char stop, int64_t *v)
{
    const char *q = *p;
    bool neg = q < end && *q == '-';
    uint64_t u = 0;

    q += neg;
    if (q == end || *q < '0' || *q > '9')
        return false;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (u > (UINT64_C(1) << 62) / 10)
            return false;
        u = u * 10 + (uint64_t)(*q - '0');
    }
    if (q < end && *q != stop)
        return false;
    *v = neg ? -(int64_t)u : (int64_t)u;
    *p = q < end ? q + 1 : q;
    return true;
}

/* now in whole us, or "redis" (Redis's clock, as TIME), and the settings
 * "<slack ms>,<prefix>". */
static bool parse_fixed(RedisModuleString *now, RedisModuleString *conf, struct sl__mcall *c,
                        const char **why)
{
    const int64_t exact = INT64_C(1) << 53;
    size_t len;
    const char *p = sl__rm.string_ptr_len(now, &len), *end = p + len;

    *why = "now must be whole microseconds or 'redis'";
    if (len == 5 && memcmp(p, "redis", 5) == 0) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        c->now_us = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
        c->effects = true; /* a replica's clock would differ */
    } else if (!field(&p, end, '\0', &c->now_us) || p != end || c->now_us < -exact ||
               c->now_us > exact) {
        return false;
    }
    c->now_ns = c->now_us * 1000;
    p = sl__rm.string_ptr_len(conf, &len);
    end = p + len;
    *why = "the settings must be <slack ms>,<prefix>";
    if (!field(&p, end, ',', &c->slack_ms) || c->slack_ms < 0 || c->slack_ms > exact)
        return false;
    c->prefix = p;
    c->prefix_len = (size_t)(end - p);
    *why = "the prefix must be 1 to 128 bytes";
    return c->prefix_len > 0 && c->prefix_len <= SL__M_PREFIX_MAX;
}

/* An item "algo,cost,cr,shadow,warm,a,b,c,d". */
static bool parse_item(RedisModuleString *s, struct sl__mitem *it, const char **why)
{
    struct sl__mfields mf;
    int64_t *v[9] = {&mf.algo, &mf.cost, &mf.cr, &mf.shadow, &mf.warm, &mf.a, &mf.b, &mf.c, &mf.d};
    size_t len;
    const char *p = sl__rm.string_ptr_len(s, &len), *end = p + len;

    for (int k = 0; k < 9; k++) {
        if (!field(&p, end, ',', v[k]) || (k < 8 && p == end)) {
            *why = "an item must be 9 integers: algo,cost,cr,shadow,warm,a,b,c,d";
            return false;
        }
    }
    if (p != end) {
        *why = "an item must be 9 integers: algo,cost,cr,shadow,warm,a,b,c,d";
        return false;
    }
    if (!sl__mstate_limit(&mf, &it->l, why))
        return false;
    it->cost = (uint64_t)mf.cost;
    return true;
}

bool sl__margs(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool with_items,
               struct sl__mcall *c)
{
    int64_t nk;
    const char *why = NULL;

    memset(c, 0, sizeof(*c));
    c->ctx = ctx;
    c->items = items;
    if (argc < 4 || !num(argv[1], 0, SL__M_MAX_ITEMS, &nk))
        return refuse(ctx, "SLUICE_ARGS", "numkeys must be 0 to 256");
    if (argc != 4 + 2 * (int)nk)
        return refuse(ctx, "SLUICE_ARGS",
                      with_items ? "give numkeys keys, now, the settings, one item per key"
                                 : "give numkeys keys, now, the settings, one id per key");
    if (!parse_fixed(argv[2 + nk], argv[3 + nk], c, &why))
        return refuse(ctx, "SLUICE_ARGS", why);
    c->n = (size_t)nk;
    for (size_t i = 0; i < c->n; i++) {
        memset(&items[i], 0, sizeof(items[i]));
        items[i].name = argv[2 + i];
        if (with_items && !parse_item(argv[4 + nk + (int)i], &items[i], &why))
            return refuse(ctx, strstr(why, "unknown algorithm") ? "SLUICE_ALGO" : "SLUICE_ARGS",
                          why);
    }
    return true;
}
