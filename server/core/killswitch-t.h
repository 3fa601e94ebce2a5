/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * killswitch-t.h - the type of the kill switches (internal): per domain, or
 * for every domain, a run-time override of enforcement set through the
 * admin API. Functions in killswitch.h.
 */
#ifndef SL_SERVER_KILLSWITCH_T_H
#define SL_SERVER_KILLSWITCH_T_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Domains that may carry a switch at once, and the longest domain name. */
#define SL__KS_MAX        64
#define SL__KS_DOMAIN_MAX 128

/* Ordered from strict to relaxed: the more relaxed of a domain's switch and
 * the "*" switch applies. */
enum sl__ks_mode {
    SL__KS_ENFORCE = 0, /* decide and enforce (no switch) */
    SL__KS_SHADOW = 1,  /* decide and count, but answer every denial as allowed */
    SL__KS_OFF = 2,     /* do not decide: answer allowed at once */
};

/*
 * Readers (every check, on any worker) only load atomics: `all`, `n`, and
 * slot[0..n). A slot packs a domain's keyed 62-bit hash with its mode in
 * the low two bits (0: empty). Writers (admin requests) hold `lock`, which
 * also guards `names` (for listing); readers never take it.
 */
struct sl__ks {
    _Atomic uint64_t all;              /* enum sl__ks_mode for "*" */
    _Atomic uint64_t n;                /* slots in use (high-water mark) */
    _Atomic uint64_t slot[SL__KS_MAX]; /* hash & ~3 | mode; 0: empty */
    uint8_t secret[16];                /* SipHash key, random per process */
    pthread_mutex_t lock;
    char names[SL__KS_MAX][SL__KS_DOMAIN_MAX + 1]; /* NUL-terminated; under lock */
};

#endif /* SL_SERVER_KILLSWITCH_T_H */
