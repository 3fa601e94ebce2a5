/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * verdict_edit.h - the one edit a protocol may ask of a decided result:
 * a delay it will not hold, answered as a denial (internal).
 *
 * HTTP's /v1/auth (a delay above http.max_delay) and the proxy (a delay
 * above its route's max_delay, or a full queue) both need it; written once
 * here, on the decision layer, so the two cannot answer the same delay
 * differently, and so formatters only format.
 *
 * Ownership: `res` is borrowed; the edited copy is written into the
 * caller's `out`, which the returned pointer points to. No allocation, no
 * state; any thread.
 */
#ifndef SL_SERVER_VERDICT_EDIT_H
#define SL_SERVER_VERDICT_EDIT_H

#include "sluice.h"

/*
 * `res` (a delay) as a denial: the request's verdict SL_DENY, and each
 * delayed status denied with its delay as its retry. The request was
 * admitted and counted by the limiter all the same (a delay is an
 * admission); nothing is given back. Returns out.
 */
const struct sl_result *sl__verdict_delay_as_denial(struct sl_result *out,
                                                    const struct sl_result *res);

#endif /* SL_SERVER_VERDICT_EDIT_H */
