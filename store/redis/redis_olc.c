/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_olc.c - the over-limit cache of the Redis store: a key that Redis
 * denied until T, for a cost c, is denied locally until T for every cost
 * >= c, with no round trip, so an attacker's flood stops reaching Redis.
 * Sound because other nodes' traffic can only make the key fuller: what
 * was denied with no further traffic stays denied until T.
 *
 * Per worker, bounded (a fixed array, 2-way set associative, the entry
 * that expires first is replaced), keyed by a keyed hash of the state
 * key. A reset anywhere is announced through Redis pub/sub
 * (redis_conn.c) and forgotten here; while that subscription is down the
 * cache is not used, and it is emptied when the subscription comes back.
 * It does not decide which limits may be cached (redis.c excludes
 * count_rejected, concurrency and shadow limits) and it does not expire
 * entries on its own: a lookup past T misses.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "redis_int.h"

int sl__olc_init(struct sl__rstore *st)
{
    uint64_t n = 2;

    if (st->cfg.olc_entries == 0)
        return SL_OK;
    while (n < st->cfg.olc_entries)
        n <<= 1;
    st->olc = calloc(n, sizeof(*st->olc));
    if (st->olc == NULL)
        return SL_ENOMEM;
    st->olc_mask = n - 1;
    if (getrandom(st->olc_secret, sizeof(st->olc_secret), 0) != sizeof(st->olc_secret))
        memset(st->olc_secret, 0x5a, sizeof(st->olc_secret)); /* still bounded */
    return SL_OK;
}

uint64_t sl__olc_hash(const struct sl__rstore *st, const char *key, size_t len)
{
    uint64_t h = sl_siphash(st->olc_secret, key, len);
    return h == 0 ? 1 : h; /* 0 marks an empty slot */
}

static struct sl__olc_slot *set_of(const struct sl__rstore *st, uint64_t hash)
{
    return &st->olc[(hash & st->olc_mask) & ~UINT64_C(1)];
}

const struct sl__olc_slot *sl__olc_find(const struct sl__rstore *st, uint64_t hash, int64_t now_ns,
                                        uint64_t cost)
{
    const struct sl__olc_slot *s;

    if (st->olc == NULL || st->sub.state != SL__RC_READY)
        return NULL; /* a reset elsewhere could go unheard */
    s = set_of(st, hash);
    for (int i = 0; i < 2; i++)
        if (s[i].hash == hash && now_ns < s[i].until_ns && cost >= s[i].cost)
            return &s[i];
    return NULL;
}

void sl__olc_insert(struct sl__rstore *st, uint64_t hash, uint64_t cost, int64_t until_ns,
                    int64_t reset_at_ns)
{
    struct sl__olc_slot *s, *victim;

    if (st->olc == NULL)
        return;
    s = set_of(st, hash);
    victim = s[0].hash == hash || s[1].hash != hash ? &s[0] : &s[1];
    if (s[0].hash != hash && s[1].hash != hash)
        victim = s[0].until_ns <= s[1].until_ns ? &s[0] : &s[1];
    /* A cached denial for a smaller cost covers more requests: keep it. */
    if (victim->hash == hash && victim->cost < cost && victim->until_ns >= until_ns)
        return;
    victim->hash = hash;
    victim->cost = cost;
    victim->until_ns = until_ns;
    victim->reset_at_ns = reset_at_ns;
    SL__CNT(st, olc_inserts, 1);
}

void sl__olc_forget(struct sl__rstore *st, uint64_t hash)
{
    struct sl__olc_slot *s;

    if (st->olc == NULL)
        return;
    s = set_of(st, hash);
    for (int i = 0; i < 2; i++)
        if (s[i].hash == hash)
            memset(&s[i], 0, sizeof(s[i]));
}

void sl__olc_clear(struct sl__rstore *st)
{
    if (st->olc != NULL)
        memset(st->olc, 0, sizeof(*st->olc) * (st->olc_mask + 1));
}
