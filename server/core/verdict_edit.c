/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * verdict_edit.c - a delay answered as a denial (verdict_edit.h), for every
 * protocol that will not hold a delay.
 *
 * It decides nothing and formats nothing: it edits a copy of a result the
 * decision path made.
 */
#include "verdict_edit.h"

const struct sl_result *sl__verdict_delay_as_denial(struct sl_result *out,
                                                    const struct sl_result *res)
{
    *out = *res;
    out->verdict = SL_DENY;
    for (size_t i = 0; i < out->n_statuses; i++) {
        struct sl_decision *d = &out->statuses[i].d;
        if (d->verdict == SL_DELAY) {
            d->verdict = SL_DENY;
            d->retry_after_ns = d->delay_ns;
        }
    }
    return out;
}
