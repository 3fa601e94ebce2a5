/*
 * report.h - how a descriptor's status is chosen among its limits' decisions
 * (CONTRACTS C2), shared by every store so that the memory store
 * (lib/limiter.c) and the Redis store (store/redis_plan.c) report alike.
 * Internal; pure.
 */
#ifndef SL_REPORT_H
#define SL_REPORT_H

#include <stdbool.h>

#include "sluice.h"

/* The decision `d` of limit `l` as reported: a shadow limit never denies or
 * delays (it is counted and shown, and *shadow_denied is set when it would
 * have denied). */
struct sl_decision sl__report_shadow(struct sl_decision d, const struct sl_limit *l,
                                     bool *shadow_denied);

/* Does (a, la) rank above the current pick (b, lb) for a descriptor's
 * status? Deny (the longest retry; -1, never, is the longest) > delay (the
 * longest) > the lowest remaining (tie: the longer period). */
bool sl__report_ranks_above(const struct sl_decision *a, const struct sl_limit *la,
                            const struct sl_decision *b, const struct sl_limit *lb);

#endif /* SL_REPORT_H */
