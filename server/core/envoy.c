/*
 * envoy.c - a decision in Envoy's rate limit API's terms (envoy.h): units,
 * codes, current_limit, remaining and reset, for every protocol that
 * speaks that API.
 */
#include <stdio.h>
#include <string.h>

#include "envoy.h"

const struct sl__envoy_unit sl__envoy_units[SL__ENVOY_N_UNITS] = {
    {"UNKNOWN", 0},
    {"SECOND", SL_NS_PER_S},
    {"MINUTE", 60 * SL_NS_PER_S},
    {"HOUR", 3600 * SL_NS_PER_S},
    {"DAY", 86400 * SL_NS_PER_S},
    {"MONTH", 30 * 86400 * SL_NS_PER_S},
    {"YEAR", 365 * 86400 * SL_NS_PER_S},
};

int sl__envoy_unit_find(const char *name, size_t len)
{
    for (int i = 0; i < SL__ENVOY_N_UNITS; i++)
        if (strlen(sl__envoy_units[i].name) == len &&
            memcmp(sl__envoy_units[i].name, name, len) == 0)
            return i;
    return -1;
}

void sl__envoy_unit_of(const struct sl_limit *l, unsigned *unit, uint32_t *per_unit)
{
    unsigned u = 1;

    if (l->period_ns <= 0) {
        *unit = 0;
        *per_unit = l->requests > UINT32_MAX ? UINT32_MAX : (uint32_t)l->requests;
        return;
    }
    /* The longest unit not longer than the period (SECOND below 1 s). */
    while (u + 1 < SL__ENVOY_N_UNITS && sl__envoy_units[u + 1].ns <= l->period_ns)
        u++;
    for (;; u++) {
        unsigned __int128 n = (unsigned __int128)l->requests * (uint64_t)sl__envoy_units[u].ns /
                              (uint64_t)l->period_ns;
        if (n > 0 || u + 1 == SL__ENVOY_N_UNITS) {
            *unit = u;
            *per_unit = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
            return;
        }
    }
}

static int64_t ceil_s(int64_t ns)
{
    if (ns <= 0)
        return 0;
    return ns / SL_NS_PER_S + (ns % SL_NS_PER_S != 0);
}

static void status_of(const struct sl_status *s, struct sl__envoy_status *e)
{
    int64_t remaining = s->d.remaining;

    memset(e, 0, sizeof(*e));
    e->code = SL__ENVOY_OK;
    if (s->limit == NULL)
        return;
    if (s->d.verdict == SL_DENY)
        e->code = SL__ENVOY_OVER_LIMIT;
    e->has_limit = true;
    e->name = s->limit->name != NULL ? s->limit->name : "";
    sl__envoy_unit_of(s->limit, &e->unit, &e->requests_per_unit);
    e->limit_remaining = remaining < 0            ? 0
                         : remaining > UINT32_MAX ? UINT32_MAX
                                                  : (uint32_t)remaining;
    e->reset_s = ceil_s(s->d.reset_ns);
}

void sl__envoy_answer(const struct sl_result *res, struct sl__envoy_answer *out)
{
    out->overall = res->verdict == SL_DENY ? SL__ENVOY_OVER_LIMIT : SL__ENVOY_OK;
    out->n = res->n_statuses < SL_MAX_DESCRIPTORS ? res->n_statuses : SL_MAX_DESCRIPTORS;
    for (size_t i = 0; i < out->n; i++)
        status_of(&res->statuses[i], &out->st[i]);
}

uint64_t sl__envoy_request_hits(uint64_t hits_addend)
{
    return hits_addend == 0 ? 1 : hits_addend;
}

int sl__envoy_request_check(const struct sl_request *req, char *err, size_t cap)
{
    if (req->domain.len == 0) {
        snprintf(err, cap, "domain: must not be empty");
        return SL_EINVAL;
    }
    if (req->n_descriptors == 0) {
        snprintf(err, cap, "descriptors: must not be empty");
        return SL_EINVAL;
    }
    for (size_t i = 0; i < req->n_descriptors; i++) {
        const struct sl_descriptor *d = &req->descriptors[i];
        if (d->n_entries == 0) {
            snprintf(err, cap, "descriptors[%zu].entries: must not be empty", i);
            return SL_EINVAL;
        }
        for (size_t j = 0; j < d->n_entries; j++) {
            if (d->entries[j].key.len == 0) {
                snprintf(err, cap, "descriptors[%zu].entries[%zu]: key must be a non-empty string",
                         i, j);
                return SL_EINVAL;
            }
        }
    }
    return SL_OK;
}

int sl__envoy_too_many(long descriptor, char *err, size_t cap)
{
    if (descriptor < 0)
        snprintf(err, cap, "descriptors: too many (at most %d)", SL_MAX_DESCRIPTORS);
    else
        snprintf(err, cap, "descriptors[%ld].entries: too many (at most %d)", descriptor,
                 SL_MAX_ENTRIES);
    return SL_ETOOBIG;
}
