/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * killswitch.c - the kill switches of killswitch.h: a fixed table of packed
 * (hash, mode) atomics that checks read without a lock, and the writers'
 * side that keeps the names for listing.
 *
 * A domain is found by a 62-bit SipHash under a per-process random key, so
 * a request cannot pick a domain that collides with a switched one. It does
 * not persist anything and does not decide requests (the protocols apply the
 * mode they read).
 */
#include <string.h>

#include "killswitch.h"

static const char *const mode_names[] = {"enforce", "shadow", "off"};

void sl__ks_init(struct sl__ks *ks, const uint8_t secret[16])
{
    memset(ks, 0, sizeof(*ks));
    memcpy(ks->secret, secret, sizeof(ks->secret));
    pthread_mutex_init(&ks->lock, NULL);
}

void sl__ks_destroy(struct sl__ks *ks)
{
    pthread_mutex_destroy(&ks->lock);
}

static uint64_t ks_hash(const struct sl__ks *ks, struct sl_str domain)
{
    uint64_t h = sl_siphash(ks->secret, domain.p, domain.len) & ~(uint64_t)3;
    return h != 0 ? h : 4; /* 0 marks an empty slot */
}

enum sl__ks_mode sl__ks_mode(struct sl__ks *ks, struct sl_str domain)
{
    uint64_t mode = atomic_load_explicit(&ks->all, memory_order_relaxed);
    uint64_t n = atomic_load_explicit(&ks->n, memory_order_acquire), h;

    if (n == 0 || mode == SL__KS_OFF)
        return (enum sl__ks_mode)mode;
    h = ks_hash(ks, domain);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = atomic_load_explicit(&ks->slot[i], memory_order_relaxed);
        if ((v & ~(uint64_t)3) == h && (v & 3) > mode)
            mode = v & 3;
    }
    return (enum sl__ks_mode)mode;
}

/* The slot holding `domain`'s name, or -1. Under the lock. */
static int find(struct sl__ks *ks, struct sl_str domain, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (atomic_load_explicit(&ks->slot[i], memory_order_relaxed) != 0 &&
            strlen(ks->names[i]) == domain.len && memcmp(ks->names[i], domain.p, domain.len) == 0)
            return (int)i;
    }
    return -1;
}

static int set_locked(struct sl__ks *ks, struct sl_str domain, enum sl__ks_mode mode)
{
    uint64_t n = atomic_load_explicit(&ks->n, memory_order_relaxed);
    int i = find(ks, domain, n);

    if (i < 0 && mode == SL__KS_ENFORCE)
        return SL_OK;
    if (i < 0) {
        for (uint64_t k = 0; k < n && i < 0; k++)
            if (atomic_load_explicit(&ks->slot[k], memory_order_relaxed) == 0)
                i = (int)k;
    }
    if (i < 0 && n == SL__KS_MAX)
        return SL_EFULL;
    if (i < 0)
        i = (int)n;
    memcpy(ks->names[i], domain.p, domain.len);
    ks->names[i][domain.len] = '\0';
    atomic_store_explicit(&ks->slot[i], mode == SL__KS_ENFORCE ? 0 : ks_hash(ks, domain) | mode,
                          memory_order_relaxed);
    if ((uint64_t)i == n) /* publish the slot before readers may scan it */
        atomic_store_explicit(&ks->n, n + 1, memory_order_release);
    return SL_OK;
}

int sl__ks_set(struct sl__ks *ks, struct sl_str domain, enum sl__ks_mode mode)
{
    int r;

    if (domain.len == 0 || domain.len > SL__KS_DOMAIN_MAX || (unsigned)mode > SL__KS_OFF)
        return SL_EINVAL;
    if (domain.len == 1 && domain.p[0] == '*') {
        atomic_store_explicit(&ks->all, (uint64_t)mode, memory_order_relaxed);
        return SL_OK;
    }
    pthread_mutex_lock(&ks->lock);
    r = set_locked(ks, domain, mode);
    pthread_mutex_unlock(&ks->lock);
    return r;
}

void sl__ks_list(struct sl__ks *ks, void (*fn)(void *arg, const char *domain, enum sl__ks_mode),
                 void *arg)
{
    uint64_t all = atomic_load_explicit(&ks->all, memory_order_relaxed);

    if (all != SL__KS_ENFORCE)
        fn(arg, "*", (enum sl__ks_mode)all);
    pthread_mutex_lock(&ks->lock);
    for (uint64_t i = 0; i < atomic_load_explicit(&ks->n, memory_order_relaxed); i++) {
        uint64_t v = atomic_load_explicit(&ks->slot[i], memory_order_relaxed);
        if (v != 0)
            fn(arg, ks->names[i], (enum sl__ks_mode)(v & 3));
    }
    pthread_mutex_unlock(&ks->lock);
}

const struct sl_result *sl__ks_unenforce(const struct sl_result *res, struct sl_result *scratch)
{
    if (res->verdict == SL_ALLOW)
        return res;
    *scratch = *res;
    scratch->verdict = SL_ALLOW;
    scratch->delay_ns = 0;
    for (size_t i = 0; i < scratch->n_statuses; i++) {
        struct sl_decision *d = &scratch->statuses[i].d;
        if (d->verdict == SL_DENY)
            scratch->statuses[i].shadow_denied = true;
        d->verdict = SL_ALLOW;
        d->retry_after_ns = d->delay_ns = 0;
    }
    return scratch;
}

const char *sl__ks_mode_name(enum sl__ks_mode m)
{
    return (unsigned)m <= SL__KS_OFF ? mode_names[m] : "?";
}

int sl__ks_mode_parse(const char *s, enum sl__ks_mode *out)
{
    for (unsigned i = 0; i <= SL__KS_OFF; i++) {
        if (strcmp(s, mode_names[i]) == 0) {
            *out = (enum sl__ks_mode)i;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}
