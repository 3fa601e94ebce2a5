/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * report.c - how a descriptor's status is chosen among its limits'
 * decisions (docs/contracts.md §Decisions; declared in sluice_int.h).
 * It decides nothing: the algorithms decide, the stores commit; this only
 * chooses what a client is told.
 */
#include "sluice_int.h"

struct sl_decision sl__report_shadow(struct sl_decision d, const struct sl_limit *l,
                                     bool *shadow_denied)
{
    if (l->shadow && d.verdict != SL_ALLOW) {
        if (d.verdict == SL_DENY)
            *shadow_denied = true;
        d.verdict = SL_ALLOW;
        d.retry_after_ns = 0;
        d.delay_ns = 0;
    }
    return d;
}

static bool retry_longer(int64_t a, int64_t b)
{
    if (a < 0 || b < 0)
        return a < 0 && b >= 0;
    return a > b;
}

bool sl__report_ranks_above(const struct sl_decision *a, const struct sl_limit *la,
                            const struct sl_decision *b, const struct sl_limit *lb)
{
    if (a->verdict != b->verdict)
        return a->verdict > b->verdict;
    if (a->verdict == SL_DENY)
        return retry_longer(a->retry_after_ns, b->retry_after_ns);
    if (a->verdict == SL_DELAY && a->delay_ns != b->delay_ns)
        return a->delay_ns > b->delay_ns;
    if (a->remaining != b->remaining)
        return a->remaining < b->remaining;
    return la->period_ns > lb->period_ns;
}
