/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cell.c - CL.THROTTLE key max_burst count period [quantity]: redis-cell's
 * command, arguments, errors and reply, decided with the library's gcra
 * (lib/algo/gcra.c), the algorithm sluiced answers CL.THROTTLE with, so
 * both give the same replies (tests/redis/test_cell_table.py runs one
 * table against both).
 *
 * The state is redis-cell's: one per key, whatever the parameters, a
 * plain string holding the theoretical arrival time (TAT) in Unix
 * nanoseconds as a decimal integer, expiring when the limit is whole again
 * (at the TAT), the format redis-cell writes (a Redis that switches
 * keeps its states). So DEL resets a key, TTL shows when it is whole, and a
 * call with other parameters than the last goes on from the same TAT, as
 * with redis-cell. (sluiced keeps one state per key and parameter set:
 * docs/distributed.md says so.) A TAT past INT64_MAX ns (the year 2262:
 * periods of centuries) is stored as INT64_MAX, so the calls after one
 * that reached it report less time left than sluiced, which keeps the
 * exact backlog.
 *
 * Time and replication: the time is Redis's (the wall clock, as
 * redis-cell's), so the command is not replicated as itself; a call that
 * changes the state is replicated as its effect, SET key tat PXAT reset_ms,
 * which replicas and the AOF replay without the module. A denial or a peek
 * (quantity 0) writes and replicates nothing.
 *
 * Bad arguments (wrong count, not a decimal integer, negative, zero rates,
 * values past what nanoseconds hold) get redis-cell's error, or sluiced's
 * where redis-cell has none, and change nothing; a key of another type is
 * WRONGTYPE, a string that is not a TAT an error, both left untouched.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "module.h"
#include "sluice_sat.h"
#include "sluice_state.h"

/* A decimal int64 with an optional '-' and nothing else (sluiced's
 * parser in server/resp/resp_sl.c takes the same). */
static bool parse_i64(const char *p, size_t len, int64_t *out)
{
    uint64_t v = 0;
    bool neg = len > 0 && p[0] == '-';
    size_t i = neg;

    if (len == i || len - i > 19)
        return false;
    for (; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* redis-cell's seconds: whole seconds, one more if at least 1 ms is left
 * (sluiced's sl__resp_cell_seconds). */
static long long cell_seconds(int64_t ns)
{
    int64_t s = ns / SL_NS_PER_S;

    if (ns > 0 && ns % SL_NS_PER_S >= SL_NS_PER_MS)
        s++;
    return s;
}

/* The arguments into `l` and *cost; false with the error replied. */
static bool parse_args(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, struct sl_limit *l,
                       uint64_t *cost)
{
    int64_t v[4] = {0, 0, 0, 1}; /* max_burst, count, period, quantity */
    char msg[128];

    if (argc != 5 && argc != 6) {
        sl__rm.reply_with_error(ctx, "Cell error: Usage: cl.throttle <key> <max_burst> <count per "
                                     "period> <period> [<quantity>]");
        return false;
    }
    for (int i = 2; i < argc; i++) {
        size_t len;
        const char *p = sl__rm.string_ptr_len(argv[i], &len);
        if (!parse_i64(p, len, &v[i - 2])) {
            snprintf(msg, sizeof(msg), "Cell error: Couldn't parse as integer: %.*s",
                     (int)(len > 64 ? 64 : len), p);
            sl__rm.reply_with_error(ctx, msg);
            return false;
        }
    }
    if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) {
        sl__rm.reply_with_error(ctx,
                                "ERR max_burst, count, period and quantity must not be negative");
        return false;
    }
    /* the emission interval period/count in whole ns must not be zero */
    if (v[1] == 0 || v[2] == 0 || (v[2] <= INT64_MAX / SL_NS_PER_S && v[2] * SL_NS_PER_S < v[1])) {
        sl__rm.reply_with_error(ctx, "Cell error: Zero rates are not supported");
        return false;
    }
    if (v[2] > INT64_MAX / SL_NS_PER_S || v[0] == INT64_MAX) {
        sl__rm.reply_with_error(ctx, "ERR period or max_burst too large");
        return false;
    }
    sl_limit_init(l);
    l->algo = SL_ALGO_GCRA;
    l->burst = v[0];
    l->requests = (uint64_t)v[1];
    l->period_ns = v[2] * SL_NS_PER_S;
    sl_limit_finish(l);
    *cost = (uint64_t)v[3];
    return true;
}

/* The stored TAT into a gcra state at now: the backlog is what is left
 * of it (none once it is past). false when the value is not a TAT. */
static bool load(const char *raw, size_t len, const struct sl_limit *l, int64_t now_ns,
                 struct sl__backlog *b)
{
    int64_t tat;
    unsigned __int128 v;

    memset(b, 0, sizeof(*b));
    b->last_ns = now_ns;
    if (raw == NULL)
        return true;
    if (!parse_i64(raw, len, &tat))
        return false;
    if (tat <= now_ns)
        return true;
    /* < 2^64 ns * < 2^64 units per ns: fits; the algorithm saturates it */
    v = (unsigned __int128)(uint64_t)sl__sat_sub(tat, now_ns) * l->requests;
    b->lo = (uint64_t)v;
    b->hi = (uint64_t)(v >> 64);
    return true;
}

static void reply(RedisModuleCtx *ctx, const struct sl_limit *l, const struct sl_decision *d)
{
    bool limited = d->verdict == SL_DENY;

    sl__rm.reply_with_array(ctx, 5);
    sl__rm.reply_with_long_long(ctx, limited);
    sl__rm.reply_with_long_long(ctx, (long long)sl_limit_quota(l));
    sl__rm.reply_with_long_long(ctx, (long long)d->remaining);
    sl__rm.reply_with_long_long(
        ctx, limited && d->retry_after_ns >= 0 ? cell_seconds(d->retry_after_ns) : -1);
    sl__rm.reply_with_long_long(ctx, cell_seconds(d->reset_ns));
}

int sl__mcmd_throttle(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    struct sl_limit l;
    struct sl__backlog b;
    struct sl_decision d;
    struct timeval tv;
    uint64_t cost;
    int64_t now_ns, tat;
    const char *raw = NULL;
    size_t len = 0;
    RedisModuleKey *key;

    if (!parse_args(ctx, argv, argc, &l, &cost))
        return SL__RM_OK;
    gettimeofday(&tv, NULL); /* Redis's clock, as TIME reads it */
    now_ns = ((int64_t)tv.tv_sec * 1000000 + tv.tv_usec) * 1000;
    key = sl__rm.open_key(ctx, argv[1], SL__RM_READ | SL__RM_WRITE);
    if (sl__rm.key_type(key) == SL__RM_KEYTYPE_STRING)
        raw = sl__rm.string_dma(key, &len, SL__RM_READ);
    else if (sl__rm.key_type(key) != SL__RM_KEYTYPE_EMPTY) {
        sl__rm.close_key(key);
        return sl__rm.reply_with_error(
            ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    if (!load(raw, len, &l, now_ns, &b)) {
        sl__rm.close_key(key);
        return sl__rm.reply_with_error(
            ctx, "ERR the key holds a value that is not a CL.THROTTLE state (a TAT in ns)");
    }
    sl__state_check(&b, &l, now_ns, cost, &d);
    if (d.verdict != SL_DENY && cost > 0) {
        struct sl__mcall c = {.ctx = ctx, .effects = true};
        char v[24];
        int n;
        sl__state_commit(&b, &l, now_ns, cost, &d);
        tat = sl__state_whole_at(&b, &l);
        n = snprintf(v, sizeof(v), "%lld", (long long)tat);
        /* expires when whole: at the TAT, rounded up to the ms */
        sl__mkeys_put(&c, key, argv[1], v, (size_t)n,
                      (long long)(tat / SL_NS_PER_MS + (tat % SL_NS_PER_MS != 0)));
    }
    sl__rm.close_key(key);
    reply(ctx, &l, &d);
    return SL__RM_OK;
}
