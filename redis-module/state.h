/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * state.h - one stored state, as the scripts store it and as the library's
 * algorithm lays it out (internal to the module).
 *
 * The stored format is the scripts' (store/redis/lua/NN_*.lua, format "v1" of
 * the key names): a MessagePack array per key, in microseconds and, for the
 * backlog algorithms, in the reduced units the C store sends (a = period /
 * g, b = requests / g with g their gcd; 00_prelude.lua says why). This file
 * converts such an array into the layout lib/internal/sluice_state.h
 * defines, for a limit built from the call's item fields, and back - so the
 * module decides with the library's own code and writes what the script
 * would have written (the same bytes, mpack.h). Per algorithm:
 *
 *   token_bucket, gcra, leaky_bucket  [last_us, D]          backlog = 1000 D
 *   token_bucket with warmup          [last_us, free_us, free_rem_ns, "limbs"]
 *   fixed_window                      [last_us, count]
 *   sliding_window                    [last_us, cur, prev]
 *   sliding_log                       [t1_us, n1, t2_us, n2, ...] (runs)
 *   concurrency                       [base_us, next_k, last_us | -1,
 *                                      k1, expires1_us, slots1, ...]
 *
 * with lease id = base_us * 1000 + k, "limbs" the stored permits in base
 * 2^24 digits, little-endian, comma-separated ("" for 0). Counts and the
 * backlog saturate at 2^52 where the scripts do. It does no I/O and keeps
 * no state.
 */
#ifndef SL_MODULE_STATE_H
#define SL_MODULE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpack.h"
#include "sluice.h"

/* The fields of one item as the call sends them (00_prelude.lua): algo,
 * cost, count_rejected, shadow, warm, a, b, c, d. */
struct sl__mfields {
    int64_t algo, cost, cr, shadow, warm, a, b, c, d;
};

/* The limit those fields describe, with the same decisions as the limit
 * the C store reduced them from. false (with *why) for fields that are out
 * of range or describe no valid limit. */
bool sl__mstate_limit(const struct sl__mfields *f, struct sl_limit *l, const char **why);

/* Bytes of the library's state for `l` (sl_algo_state_size). */
size_t sl__mstate_size(const struct sl_limit *l);

/*
 * The state of a key holding raw[0..len) (raw NULL: no key) into `blob`
 * (sl__mstate_size bytes, 8-byte aligned): decoded, or fresh at now_ns as
 * the library makes it. *base_us receives the concurrency id base (fresh:
 * now). SL_OK, or SL_EINVAL when the bytes are not such a state.
 */
int sl__mstate_decode(const struct sl_limit *l, const char *raw, size_t len, int64_t now_ns,
                      void *blob, int64_t *base_us);

/* Does a key without a state get one written when a request costs
 * something on it (the scripts' "fresh" states: the buckets and
 * concurrency; the windows and the log start from nothing)? */
bool sl__mstate_has_fresh(const struct sl_limit *l);

/*
 * Write the state in `blob` as the scripts would into `w`, and the time the
 * key must live from now, in ns (until the state is whole, measured from
 * the state's own time, as the scripts do). SL_OK; SL_ERANGE when a number
 * is outside what the scripts store exactly (then nothing may be written);
 * SL_ENOMEM when `w` is too small.
 */
int sl__mstate_encode(const struct sl_limit *l, const void *blob, int64_t base_us,
                      struct sl__mp_writer *w, int64_t *ttl_ns);

/* concurrency: the number of leases a stored state holds, for sizing a
 * limit to release from (the release call has no limit). SL_EINVAL if
 * the bytes are not a concurrency state. */
int sl__mstate_cc_leases(const char *raw, size_t len, uint64_t *n);

#endif /* SL_MODULE_STATE_H */
