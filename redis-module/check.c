/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * check.c - SLUICE.CHECK, SLUICE.PEEK and SLUICE.RESET: every limit of a
 * call decided all-or-nothing with the library's algorithms, exactly as
 * store/redis/lua/90_main.lua's run_check decides it (and lib/limiter.c
 * before it): if any enforced limit denies, nothing is consumed except on
 * count_rejected limits; shadow limits never deny; a key without a state
 * that the request costs something on gets its fresh state written (the
 * memory table creates the entry: its time clamps later ones). Then every
 * changed state is written with its expiry, and a concurrency lease gets
 * its index key, both in this one command.
 *
 * RESET deletes the keys (replicated as DEL: a replica replaying the
 * command would announce it again), announces them on
 * "<prefix>:v1:reset" for the over-limit caches, and reports the fresh
 * states. It does not rank statuses: the C store does (redis_plan.c).
 */
#include <stdio.h>
#include <string.h>

#include "module.h"
#include "sha1.h"
#include "sluice_state.h"

/* The all-or-nothing decision and its commits, in place in the arena. */
static void decide(struct sl__mcall *c, bool peek)
{
    bool denied = false;

    for (size_t i = 0; i < c->n; i++) {
        struct sl__mitem *it = &c->items[i];
        if (peek)
            it->cost = 0;
        sl__state_check(it->st, &it->l, c->now_ns, it->cost, &it->d);
        denied = denied || (it->d.verdict == SL_DENY && !it->l.shadow);
    }
    for (size_t i = 0; i < c->n; i++) {
        struct sl__mitem *it = &c->items[i];
        bool self_deny = it->d.verdict == SL_DENY;
        if (it->cost == 0)
            continue;
        if (it->l.count_rejected || (!denied && !self_deny)) {
            sl__state_commit(it->st, &it->l, c->now_ns, it->cost, &it->d);
            it->write = true;
        } else if (denied && !self_deny) {
            sl__state_check(it->st, &it->l, c->now_ns, 0, &it->d); /* reported unconsumed */
        }
        it->write = it->write || (it->absent && sl__mstate_has_fresh(&it->l));
    }
}

/* "<h>-<id>[-<T>]" and the index key "<prefix>:v1:lease:<h>:<id>" that
 * names the state key, as 90_main.lua does (T: the cluster slot tag the
 * prefix carries as "<prefix>{T}"). */
static void take_lease(struct sl__mcall *c, struct sl__mitem *it)
{
    char h[41], idx[SL__M_PREFIX_MAX + 64];
    const char *open = memchr(c->prefix, '{', c->prefix_len), *close = NULL;
    size_t klen;
    const char *kname = sl__rm.string_ptr_len(it->name, &klen);
    RedisModuleString *iname;
    RedisModuleKey *ikey;
    int n;

    sl__sha1_hex(kname, klen, h);
    h[16] = '\0';
    if (open != NULL)
        close = memchr(open, '}', c->prefix_len - (size_t)(open - c->prefix));
    if (close != NULL)
        snprintf(it->lease, sizeof(it->lease), "%s-%llu-%.*s", h, (unsigned long long)it->d.lease,
                 (int)(close - open - 1), open + 1);
    else
        snprintf(it->lease, sizeof(it->lease), "%s-%llu", h, (unsigned long long)it->d.lease);
    n = snprintf(idx, sizeof(idx), "%.*s:v1:lease:%s:%llu", (int)c->prefix_len, c->prefix, h,
                 (unsigned long long)it->d.lease);
    iname = sl__rm.create_string(c->ctx, idx, (size_t)n);
    ikey = sl__rm.open_key(c->ctx, iname, SL__RM_WRITE);
    if (sl__rm.key_type(ikey) != SL__RM_KEYTYPE_EMPTY &&
        sl__rm.key_type(ikey) != SL__RM_KEYTYPE_STRING)
        sl__rm.delete_key(ikey);
    sl__mkeys_put(c, ikey, iname, kname, klen, sl__mkeys_at_ms(c, it->l.lease_ns));
    sl__rm.close_key(ikey);
    sl__rm.free_string(c->ctx, iname);
}

static void reply(struct sl__mcall *c)
{
    RedisModuleCtx *ctx = c->ctx;

    sl__rm.reply_with_array(ctx, (long)(1 + 6 * c->n));
    sl__rm.reply_with_long_long(ctx, c->now_us);
    for (size_t i = 0; i < c->n; i++) {
        const struct sl__mitem *it = &c->items[i];
        sl__rm.reply_with_long_long(ctx, it->d.verdict);
        sl__rm.reply_with_long_long(ctx, it->d.remaining);
        sl__rm.reply_with_long_long(ctx, it->d.reset_ns);
        sl__rm.reply_with_long_long(ctx, it->d.retry_after_ns);
        sl__rm.reply_with_long_long(ctx, it->d.delay_ns);
        sl__rm.reply_with_string_buffer(ctx, it->lease, strlen(it->lease));
    }
}

static int run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool peek)
{
    struct sl__mcall c;

    if (!sl__margs(ctx, argv, argc, true, &c))
        return SL__RM_OK;
    if (sl__mkeys_load(&c, peek ? SL__RM_READ : SL__RM_READ | SL__RM_WRITE) != SL_OK)
        return SL__RM_OK;
    decide(&c, peek);
    if (sl__mkeys_encode(&c) != SL_OK)
        return SL__RM_OK;
    sl__mkeys_write(&c);
    for (size_t i = 0; i < c.n; i++)
        if (c.items[i].d.lease != 0 && c.items[i].write)
            take_lease(&c, &c.items[i]);
    sl__mkeys_close(&c);
    sl__mkeys_replicate(&c);
    reply(&c);
    return SL__RM_OK;
}

int sl__mcmd_check(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return run(ctx, argv, argc, false);
}

int sl__mcmd_peek(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return run(ctx, argv, argc, true);
}

/* Delete the keys, announce them (one per line), report fresh states. */
int sl__mcmd_reset(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    struct sl__mcall c;
    size_t len = 0, plen;

    if (!sl__margs(ctx, argv, argc, true, &c))
        return SL__RM_OK;
    if (sl__mkeys_load(&c, SL__RM_READ | SL__RM_WRITE) != SL_OK)
        return SL__RM_OK;
    c.effects = true; /* DEL: a replica must not announce the reset again */
    plen = c.prefix_len;
    for (const char *b = memchr(c.prefix, '{', plen); b != NULL; b = NULL)
        plen = (size_t)(b - c.prefix); /* "<prefix>{T}": the channel is the prefix's */
    for (size_t i = 0; i < c.n; i++) {
        size_t klen;
        sl__rm.string_ptr_len(c.items[i].name, &klen);
        len += klen + 1;
        if (!c.items[i].absent)
            sl__mkeys_del(&c, c.items[i].key, c.items[i].name);
        sl_algo_init(c.items[i].st, &c.items[i].l, c.now_ns);
        c.items[i].absent = true;
    }
    if (c.n > 0) {
        char *msg = sl__rm.alloc(len), channel[SL__M_PREFIX_MAX + 16];
        size_t at = 0;
        int n = snprintf(channel, sizeof(channel), "%.*s:v1:reset", (int)plen, c.prefix);
        for (size_t i = 0; i < c.n; i++) {
            size_t klen;
            const char *k = sl__rm.string_ptr_len(c.items[i].name, &klen);
            memcpy(msg + at, k, klen);
            at += klen;
            msg[at++] = '\n';
        }
        RedisModuleString *ch = sl__rm.create_string(ctx, channel, (size_t)n);
        RedisModuleString *m = sl__rm.create_string(ctx, msg, len - 1);
        sl__rm.publish_message(ctx, ch, m);
        sl__rm.free_string(ctx, ch);
        sl__rm.free_string(ctx, m);
        sl__rm.free(msg);
    }
    decide(&c, true);
    sl__mkeys_close(&c);
    reply(&c);
    return SL__RM_OK;
}
