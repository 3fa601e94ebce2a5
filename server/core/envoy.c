/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * envoy.c - a decision in Envoy's rate limit API's terms (envoy.h): units,
 * codes, current_limit, remaining and reset, for every protocol that
 * speaks that API.
 */
#include <stdio.h>
#include <string.h>

#include "config-t.h"
#include "envoy.h"
#include "headers.h"

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
    if (sl__envoy_units[u].ns == l->period_ns && l->requests > 0) { /* a whole unit: no division */
        *unit = u;
        *per_unit = l->requests > UINT32_MAX ? UINT32_MAX : (uint32_t)l->requests;
        return;
    }
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
    int64_t s;

    if (ns <= 0)
        return 0;
    s = ns / SL_NS_PER_S; /* (one division: the remainder from it) */
    return s + (s * SL_NS_PER_S != ns);
}

static void status_of(const struct sl_status *s, bool shadow, struct sl__envoy_status *e)
{
    int64_t remaining = s->d.remaining;

    memset(e, 0, sizeof(*e));
    e->code = SL__ENVOY_OK;
    if (s->unlimited) {
        e->limit_remaining = UINT32_MAX;
        return;
    }
    if (s->unmatched && (s->d.verdict == SL_DENY || (shadow && s->shadow_denied)))
        e->code = SL__ENVOY_OVER_LIMIT; /* on_unmatched: deny; no limit to show */
    if (s->limit == NULL)
        return;
    if (s->d.verdict == SL_DENY || (shadow && s->shadow_denied))
        e->code = SL__ENVOY_OVER_LIMIT;
    e->has_limit = true;
    e->name = s->limit->named && s->limit->name != NULL ? s->limit->name : "";
    sl__envoy_unit_of(s->limit, &e->unit, &e->requests_per_unit);
    e->limit_remaining = remaining < 0            ? 0
                         : remaining > UINT32_MAX ? UINT32_MAX
                                                  : (uint32_t)remaining;
    e->reset_s = ceil_s(s->d.reset_ns);
}

/* The descriptor the headers speak for: the first over its limit, else
 * the first with the lowest remaining; -1 when none has a limit. */
static int headline(const struct sl__envoy_answer *a)
{
    int best = -1;

    for (size_t i = 0; i < a->n; i++) {
        const struct sl__envoy_status *e = &a->st[i];
        if (!e->has_limit)
            continue;
        if (e->code == SL__ENVOY_OVER_LIMIT)
            return (int)i;
        if (best < 0 || e->limit_remaining < a->st[best].limit_remaining)
            best = (int)i;
    }
    return best;
}

static void add_header(struct sl__envoy_headers *h, size_t *used, const char *key, size_t klen,
                       const char *fmt_value, uint64_t v)
{
    int n;

    if (h->n == SL__ENVOY_MAX_HEADERS || *used + klen + 24 > sizeof(h->buf))
        return;
    memcpy(h->buf + *used, key, klen);
    h->h[h->n].key = (struct sl_str){h->buf + *used, klen};
    *used += klen;
    n = snprintf(h->buf + *used, sizeof(h->buf) - *used, fmt_value, (unsigned long long)v);
    h->h[h->n].value = (struct sl_str){h->buf + *used, (size_t)n};
    *used += (size_t)n;
    h->n++;
}

/* The IETF draft's pair, from the HTTP header writer's lines. */
static void ietf_headers(const struct sl_result *res, int64_t now_ns, struct sl__envoy_headers *h)
{
    size_t len = 0, at = 0;

    if (sl__hdr_write(res, now_ns, SL__HDR_IETF, h->buf, sizeof(h->buf), &len) != SL_OK)
        return;
    while (at < len && h->n < SL__ENVOY_MAX_HEADERS) {
        char *line = h->buf + at, *end = memchr(line, '\r', len - at), *colon;
        if (end == NULL || (colon = memchr(line, ':', (size_t)(end - line))) == NULL)
            break;
        h->h[h->n].key = (struct sl_str){line, (size_t)(colon - line)};
        h->h[h->n].value = (struct sl_str){colon + 2, (size_t)(end - colon - 2)};
        h->n++;
        at = (size_t)(end - h->buf) + 2;
    }
}

static void headers_of(const struct sl__config *cfg, const struct sl_result *res, int64_t now_ns,
                       struct sl__envoy_answer *a)
{
    struct sl__envoy_headers *h = &a->headers;
    size_t used = 0;
    int i;

    h->n = 0;
    if (cfg == NULL || !cfg->envoy_headers || (i = headline(a)) < 0)
        return; /* (the headline is looked for only when headers are wanted) */
    if (cfg->envoy_header_style == SL__ENVOY_STYLE_IETF) {
        ietf_headers(res, now_ns, h);
        return;
    }
    add_header(h, &used, cfg->envoy_header_limit, strlen(cfg->envoy_header_limit), "%llu",
               a->st[i].requests_per_unit);
    add_header(h, &used, cfg->envoy_header_remaining, strlen(cfg->envoy_header_remaining), "%llu",
               a->st[i].limit_remaining);
    add_header(h, &used, cfg->envoy_header_reset, strlen(cfg->envoy_header_reset), "%llu",
               (uint64_t)a->st[i].reset_s);
}

void sl__envoy_answer(const struct sl__config *cfg, const struct sl_result *res, bool shadow,
                      int64_t now_ns, struct sl__envoy_answer *out)
{
    out->overall = res->verdict == SL_DENY ? SL__ENVOY_OVER_LIMIT : SL__ENVOY_OK;
    out->n = res->n_statuses < SL_MAX_DESCRIPTORS ? res->n_statuses : SL_MAX_DESCRIPTORS;
    for (size_t i = 0; i < out->n; i++)
        status_of(&res->statuses[i], shadow, &out->st[i]);
    headers_of(cfg, res, now_ns, out);
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
        /* a descriptor without entries matches no rule: answered OK */
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

int sl__envoy_override_limit(uint64_t requests_per_unit, unsigned unit, struct sl_limit *l)
{
    if (requests_per_unit == 0 || unit == 0 || unit >= SL__ENVOY_N_UNITS ||
        requests_per_unit > UINT32_MAX)
        return SL_EINVAL;
    sl_limit_init(l);
    l->algo = SL_ALGO_FIXED_WINDOW;
    l->requests = requests_per_unit;
    l->period_ns = sl__envoy_units[unit].ns;
    l->ad_hoc = true;
    sl_limit_finish(l);
    return SL_OK;
}
