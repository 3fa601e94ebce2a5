/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * refund.c - SLUICE.REFUND and SLUICE.RELEASE, the two calls that give
 * something back, as store/redis/lua/90_main.lua's run_refund and
 * run_release do.
 *
 * REFUND: the items of a check that a Redis Cluster denied in another
 * slot, at the time the check used: each state that exists and whose
 * algorithm is refunded (not count_rejected, warm-up or concurrency; see
 * sl__state_refund) gets back what the check consumed. Reply { now, items
 * refunded }.
 *
 * RELEASE: the keys are lease index keys, each naming the state key its
 * lease was taken on; the arguments after the settings are the lease ids. A lease
 * still held is freed, its state written back and its index deleted.
 * Reply { now, leases released }.
 */
#include <stdio.h>
#include <string.h>

#include "module.h"
#include "sluice_state.h"

int sl__mcmd_refund(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    struct sl__mcall c;
    long long done = 0;

    if (!sl__margs(ctx, argv, argc, true, &c))
        return SL__RM_OK;
    if (sl__mkeys_load(&c, SL__RM_READ | SL__RM_WRITE) != SL_OK)
        return SL__RM_OK;
    for (size_t i = 0; i < c.n; i++) {
        struct sl__mitem *it = &c.items[i];
        it->write = it->cost > 0 && !it->l.count_rejected && !it->absent &&
                    sl__state_refund(it->st, &it->l, c.now_ns, it->cost);
        done += it->write;
    }
    if (sl__mkeys_encode(&c) != SL_OK)
        return SL__RM_OK;
    sl__mkeys_write(&c);
    sl__mkeys_close(&c);
    sl__mkeys_replicate(&c);
    sl__rm.reply_with_array(ctx, 2);
    sl__rm.reply_with_long_long(ctx, c.now_us);
    sl__rm.reply_with_long_long(ctx, done);
    return SL__RM_OK;
}

/* A lease id as the scripts write it: decimal, no sign, no leading zero. */
static bool lease_id(RedisModuleString *s, uint64_t *id)
{
    size_t len;
    const char *p = sl__rm.string_ptr_len(s, &len);
    uint64_t v = 0;

    if (len == 0 || len > 20 || (p[0] == '0' && len > 1))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - (uint64_t)(p[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    *id = v;
    return v != 0;
}

/* Free lease `id` on the state key named by the open index key `ikey`:
 * true when it was held (and the state is written back). */
static bool release_one(struct sl__mcall *c, RedisModuleKey *ikey, uint64_t id)
{
    size_t nlen, len, size;
    const char *name, *raw;
    RedisModuleString *sname;
    RedisModuleKey *skey;
    struct sl_limit l;
    uint64_t leases;
    int64_t base_us, ttl_ns;
    bool done = false;
    void *st;

    if (sl__rm.key_type(ikey) != SL__RM_KEYTYPE_STRING)
        return false;
    name = sl__rm.string_dma(ikey, &nlen, SL__RM_READ);
    sname = sl__rm.create_string(c->ctx, name, nlen);
    skey = sl__rm.open_key(c->ctx, sname, SL__RM_READ | SL__RM_WRITE);
    raw = sl__rm.key_type(skey) == SL__RM_KEYTYPE_STRING
              ? sl__rm.string_dma(skey, &len, SL__RM_READ)
              : NULL;
    sl_limit_init(&l); /* a limit just large enough for the leases held */
    l.algo = SL_ALGO_CONCURRENCY;
    l.lease_ns = 1;
    if (raw != NULL && sl__mstate_cc_leases(raw, len, &leases) == SL_OK && leases < 10000) {
        l.requests = leases + 1;
        size = (sl__mstate_size(&l) + 7) & ~(size_t)7;
        st = sl__marena(size + 64 + 27 * (leases + 1));
        if (st != NULL && sl__mstate_decode(&l, raw, len, c->now_ns, st, &base_us) == SL_OK &&
            sl_algo_release(st, &l, c->now_ns, id) == SL_OK) {
            struct sl__mp_writer w = {(uint8_t *)st + size, 0, 64 + 27 * (leases + 1), false};
            done = sl__mstate_encode(&l, st, base_us, &w, &ttl_ns) == SL_OK;
            if (done)
                sl__mkeys_put(c, skey, sname, w.buf, w.len, sl__mkeys_at_ms(c, ttl_ns));
        }
    }
    sl__rm.close_key(skey);
    sl__rm.free_string(c->ctx, sname);
    return done;
}

int sl__mcmd_release(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    struct sl__mcall c;
    uint64_t ids[SL__M_MAX_ITEMS];
    long long released = 0;

    if (!sl__margs(ctx, argv, argc, false, &c))
        return SL__RM_OK;
    for (size_t i = 0; i < c.n; i++)
        if (!lease_id(argv[4 + (int)c.n + (int)i], &ids[i]))
            return sl__merror(ctx, "SLUICE_ARGS", "a lease id is not a positive decimal number");
    for (size_t i = 0; i < c.n; i++) {
        RedisModuleKey *ikey = sl__rm.open_key(ctx, c.items[i].name, SL__RM_READ | SL__RM_WRITE);
        if (release_one(&c, ikey, ids[i])) {
            sl__mkeys_del(&c, ikey, c.items[i].name);
            released++;
        }
        sl__rm.close_key(ikey);
    }
    sl__mkeys_replicate(&c);
    sl__rm.reply_with_array(ctx, 2);
    sl__rm.reply_with_long_long(ctx, c.now_us);
    sl__rm.reply_with_long_long(ctx, released);
    return SL__RM_OK;
}
