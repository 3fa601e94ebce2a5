/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * keys.c - a call's keys: opened once, their states decoded into the
 * scratch arena, encoded back, and written with their expiry in the same
 * command; replicas and the AOF get the same states (below).
 *
 * Replication: the command verbatim when it is deterministic (the caller's
 * time: the store's default), its effects with Redis's clock; see
 * sl__mkeys_replicate in module.h.
 *
 * It decides nothing (check.c, refund.c do) and refuses, before anything is
 * written, a call whose states would need more scratch memory than
 * max-call-bytes (SLUICE_TOOBIG, before any key is opened or decoded), a
 * key of another type (WRONGTYPE), a value that is not a state
 * (SLUICE_STATE) and a state the scripts could not store (SLUICE_RANGE).
 */
#include <stdio.h>
#include <string.h>

#include "module.h"

/* Room for an encoding of a state of `size` bytes: at most two numbers of
 * 9 bytes per 8 bytes of state, plus the array header and a string. */
static size_t enc_bound(size_t size)
{
    return 64 + 18 * (size / 8 + 1);
}

static size_t align8(size_t v)
{
    return (v + 7) & ~(size_t)7;
}

void sl__mkeys_close(struct sl__mcall *c)
{
    for (size_t i = 0; i < c->n; i++) {
        sl__rm.close_key(c->items[i].key);
        c->items[i].key = NULL;
    }
}

static int fail(struct sl__mcall *c, const char *code, const char *text)
{
    sl__mkeys_close(c);
    sl__merror(c->ctx, code, text);
    return SL_EINVAL;
}

/* Two items of one call naming the same key would write through two
 * handles; the C store merges them, so a duplicate is refused. */
static bool duplicates(const struct sl__mcall *c)
{
    for (size_t i = 1; i < c->n; i++) {
        size_t li, lj;
        const char *pi = sl__rm.string_ptr_len(c->items[i].name, &li);
        for (size_t j = 0; j < i; j++) {
            const char *pj = sl__rm.string_ptr_len(c->items[j].name, &lj);
            if (li == lj && memcmp(pi, pj, li) == 0)
                return true;
        }
    }
    return false;
}

/* The arena bytes the call needs (each state and room for its encoding),
 * laid out in the items; false, with nothing allocated, past `max`. Sizes
 * come from the limits alone, so this is known before any key is read. */
static bool lay_out(struct sl__mcall *c, size_t max, size_t *total)
{
    *total = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct sl__mitem *it = &c->items[i];
        size_t size = align8(sl__mstate_size(&it->l));
        it->st_off = *total;
        it->enc_off = *total + size;
        *total += size + align8(enc_bound(size)); /* < 2^25 each, max <= 2^32: no overflow */
        if (*total > max)
            return false;
    }
    return true;
}

int sl__mkeys_load(struct sl__mcall *c, int mode)
{
    size_t total;
    char *base;

    if (duplicates(c))
        return fail(c, "SLUICE_ARGS", "a key appears twice");
    if (!lay_out(c, sl__marena_max(), &total)) {
        char why[160];
        snprintf(why, sizeof(why),
                 "state too large: the call's limits need more than max-call-bytes (%zu bytes) "
                 "of scratch memory",
                 sl__marena_max());
        return fail(c, "SLUICE_TOOBIG", why);
    }
    base = sl__marena(total);
    if (base == NULL)
        return fail(c, "SLUICE_OOM", "no memory for the states");
    for (size_t i = 0; i < c->n; i++) {
        struct sl__mitem *it = &c->items[i];
        const char *raw = NULL;
        size_t len = 0;
        it->st = base + it->st_off;
        it->key = sl__rm.open_key(c->ctx, it->name, mode);
        if (sl__rm.key_type(it->key) == SL__RM_KEYTYPE_STRING)
            raw = sl__rm.string_dma(it->key, &len, SL__RM_READ);
        else if (sl__rm.key_type(it->key) != SL__RM_KEYTYPE_EMPTY)
            return fail(c, "WRONGTYPE", "a state key holds another type");
        it->absent = raw == NULL;
        if (sl__mstate_decode(&it->l, raw, len, c->now_ns, it->st, &it->base_us) != SL_OK)
            return fail(c, "SLUICE_STATE", "a key does not hold a state of its limit");
    }
    return SL_OK;
}

int sl__mkeys_encode(struct sl__mcall *c)
{
    char *base = sl__marena(0);

    for (size_t i = 0; i < c->n; i++) {
        struct sl__mitem *it = &c->items[i];
        size_t size = align8(sl__mstate_size(&it->l));
        struct sl__mp_writer w = {(uint8_t *)base + it->enc_off, 0, enc_bound(size), false};
        int rc;
        if (!it->write)
            continue;
        rc = sl__mstate_encode(&it->l, it->st, it->base_us, &w, &it->ttl_ns);
        if (rc != SL_OK)
            return fail(c, rc == SL_ERANGE ? "SLUICE_RANGE" : "SLUICE_OOM",
                        "a state outside the range the scripts store exactly");
        it->enc_len = w.len;
    }
    return SL_OK;
}

long long sl__mkeys_at_ms(const struct sl__mcall *c, int64_t ttl_ns)
{
    int64_t ms = ttl_ns / 1000000 + (ttl_ns % 1000000 != 0);

    return sl__rm.milliseconds() + ms + c->slack_ms;
}

void sl__mkeys_put(struct sl__mcall *c, RedisModuleKey *key, RedisModuleString *name, const void *v,
                   size_t len, long long at_ms)
{
    size_t have = 0;
    char *p = NULL;

    if (sl__rm.key_type(key) == SL__RM_KEYTYPE_STRING)
        p = sl__rm.string_dma(key, &have, SL__RM_WRITE);
    if (p == NULL || have != len) { /* new, or another size: resize, then write in place */
        sl__rm.string_truncate(key, len);
        p = sl__rm.string_dma(key, &have, SL__RM_WRITE);
    }
    if (p == NULL || have != len)
        return; /* not writable: cannot happen for a key opened to write and checked */
    memcpy(p, v, len);
    sl__rm.set_abs_expire(key, at_ms);
    c->wrote = true;
    if (c->effects)
        sl__rm.replicate(c->ctx, "SET", "sbcl", name, (const char *)v, len, "PXAT", at_ms);
}

void sl__mkeys_del(struct sl__mcall *c, RedisModuleKey *key, RedisModuleString *name)
{
    sl__rm.delete_key(key);
    c->wrote = true;
    if (c->effects)
        sl__rm.replicate(c->ctx, "DEL", "s", name);
}

void sl__mkeys_replicate(struct sl__mcall *c)
{
    if (c->wrote && !c->effects)
        sl__rm.replicate_verbatim(c->ctx);
}

void sl__mkeys_write(struct sl__mcall *c)
{
    char *base = sl__marena(0);

    for (size_t i = 0; i < c->n; i++) {
        struct sl__mitem *it = &c->items[i];
        if (it->write)
            sl__mkeys_put(c, it->key, it->name, base + it->enc_off, it->enc_len,
                          sl__mkeys_at_ms(c, it->ttl_ns));
    }
}
