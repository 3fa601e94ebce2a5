/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * killswitch.h - kill switches: put one domain, or every domain ("*"), into
 * shadow mode or turn its limiting off at run time (internal). The admin API
 * sets them (PUT /v1/killswitch); every check reads them lock-free. They are
 * not persisted: a restart starts with every domain enforced.
 *
 * Ownership: the struct is the server's. Threads: sl__ks_mode() from any
 * thread at any time; sl__ks_set()/sl__ks_list() from any thread (they lock).
 */
#ifndef SL_SERVER_KILLSWITCH_H
#define SL_SERVER_KILLSWITCH_H

#include <stddef.h>

#include "killswitch-t.h"
#include "sluice.h"

/* Every domain enforced; `secret` keys the domain hash. */
void sl__ks_init(struct sl__ks *ks, const uint8_t secret[16]);
void sl__ks_destroy(struct sl__ks *ks);

/* The mode in force for `domain` (hot path: atomic loads only, no lock, no
 * allocation): the more relaxed of the domain's switch and "*". */
enum sl__ks_mode sl__ks_mode(struct sl__ks *ks, struct sl_str domain);

/* Set `domain`'s switch ("*" for every domain); SL__KS_ENFORCE removes it.
 * SL_OK, SL_EINVAL (empty or longer than SL__KS_DOMAIN_MAX), SL_EFULL
 * (SL__KS_MAX domains switched already). */
int sl__ks_set(struct sl__ks *ks, struct sl_str domain, enum sl__ks_mode mode);

/* Call fn(arg, domain, mode) for "*" (if not enforced) and every switched
 * domain, under the writers' lock. */
void sl__ks_list(struct sl__ks *ks, void (*fn)(void *arg, const char *domain, enum sl__ks_mode),
                 void *arg);

/* Kill switch "shadow" applied to a result: every denial becomes an allow
 * marked shadow_denied, and no delay is imposed. Returns `res` when it is
 * allowed already, otherwise `scratch` filled with the edited copy. */
const struct sl_result *sl__ks_unenforce(const struct sl_result *res, struct sl_result *scratch);

/* "enforce", "shadow", "off" <-> enum; parse gives SL_EINVAL otherwise. */
const char *sl__ks_mode_name(enum sl__ks_mode m);
int sl__ks_mode_parse(const char *s, enum sl__ks_mode *out);

#endif /* SL_SERVER_KILLSWITCH_H */
