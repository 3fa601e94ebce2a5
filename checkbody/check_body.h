/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * check_body.h - the native check body {"domain": D, "descriptors": [{K: V,
 * ...}, ...], "hits": N} (docs/http.md §POST /v1/check), read from a JSON
 * document already parsed. One reader for the two places that take it:
 * POST /v1/check (server/http) and each input line of `sluice simulate`
 * (cli/), so that both accept and refuse the same bodies.
 *
 * It does not parse JSON text (each caller has its own: sluiced into an
 * arena, strictly), reads no member but those three (t_ms, overrides: the
 * caller's) and allocates nothing.
 *
 * Ownership: the request borrows every string from the document, which
 * must outlive it. Threads: no state; any thread.
 */
#ifndef SL_CHECKBODY_CHECK_BODY_H
#define SL_CHECKBODY_CHECK_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct cJSON;

/* Where a parsed body goes: the caller's arrays, which the request points
 * into (descs[i].entries = entries[i]). */
struct sl__check_body {
    struct sl_request *req;
    struct sl_descriptor *descs;                /* SL_MAX_DESCRIPTORS of them */
    struct sl_entry (*entries)[SL_MAX_ENTRIES]; /* SL_MAX_DESCRIPTORS rows */
};

/*
 * Read the body object `root` into b: domain a non-empty string;
 * descriptors 1 to SL_MAX_DESCRIPTORS objects of 1 to SL_MAX_ENTRIES
 * members each, keys non-empty, values strings, entries in the object's
 * order, each descriptor's hits -1 (the request's); hits absent means 1,
 * 0 peeks, otherwise a JSON number or a decimal string up to 2^64-1.
 * Other members are ignored. b->req's now_ns is left 0 for the caller.
 * SL_OK, or SL_EINVAL (wrong type, missing or empty), SL_ETOOBIG (too
 * many descriptors or entries), SL_ERANGE (hits above 2^64-1), with
 * err[0..err_len) saying "field: what is wrong".
 */
int sl__check_body_read(const struct cJSON *root, const struct sl__check_body *b, char *err,
                        size_t err_len);

/*
 * An unsigned integer given as a JSON number or a decimal string (proto3
 * JSON writes 64-bit integers as strings), at most `max`: SL_OK with *out,
 * SL_EINVAL for another type, a sign, a fraction or an empty string,
 * SL_ERANGE above max. A JSON number is exact only up to 2^53; larger
 * values are written as strings.
 */
int sl__json_uint(const struct cJSON *v, uint64_t max, uint64_t *out);

#endif /* SL_CHECKBODY_CHECK_BODY_H */
