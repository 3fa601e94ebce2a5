/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * lease.h - concurrency lease tokens (internal): what sl_result.lease holds
 * and sl_limiter_release() takes back.
 *
 * A token names, per lease, the entry (64 bits of its fingerprint) and the
 * lease id, sealed with a 128-bit pseudo-random permutation keyed from the
 * table secret, so a client learns nothing about where its keys hash (the
 * fingerprint would otherwise be an oracle for crafting colliding keys) and
 * a forged token opens to an entry and lease that almost surely do not
 * exist. Not an authentication scheme: a token is a bearer handle.
 *
 * It does not find or release anything (the limiter and the table do).
 */
#ifndef SL_LEASE_H
#define SL_LEASE_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

#define SL__LEASE_HEX 32 /* hex digits per lease in a token */

/* The sealing key, derived from the table secret (never the secret itself). */
void sl__lease_key(const uint8_t secret[16], uint8_t key[16]);
/* Write one lease as SL__LEASE_HEX lowercase hex digits (no NUL). */
void sl__lease_seal(const uint8_t key[16], const struct sl__fp *fp, uint64_t lease, char *out);
/* Parse a whole token ("L.L.L", at most SL_MAX_LEASES): fills fps (w[2]
 * zero: not carried) and ids, *n. SL_EINVAL if malformed. */
int sl__lease_parse(const uint8_t key[16], const char *token, size_t len, struct sl__fp *fps,
                    uint64_t *ids, size_t *n);

#endif /* SL_LEASE_H */
