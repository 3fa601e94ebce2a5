/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sim_report.c - what `sluice simulate` prints: one JSON line per request
 * (docs/contracts.md §Interfaces) and, with --summary, how many requests each limit allowed,
 * delayed and denied.
 *
 * A request's descriptor is counted under the limit reported for it (the
 * denying limit, else the one with the lowest remaining, contracts §Decisions); descriptors
 * that no limit applies to are counted under "(none)". A status a shadow
 * limit would have denied says so (shadow_denied) and counts as allowed.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_report.h"

static cJSON *status_json(const struct sl_status *st)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "decision", sl_verdict_name(st->d.verdict));
    if (st->limit != NULL) {
        cJSON_AddStringToObject(o, "limit", st->limit->name ? st->limit->name : "");
        cJSON_AddNumberToObject(o, "quota", (double)st->d.quota);
        cJSON_AddNumberToObject(o, "remaining", (double)st->d.remaining);
    } else {
        cJSON_AddNullToObject(o, "limit");
        cJSON_AddNullToObject(o, "quota");
        cJSON_AddNullToObject(o, "remaining");
        if (st->unmatched)
            cJSON_AddBoolToObject(o, "unmatched", true);
    }
    cJSON_AddNumberToObject(o, "reset_ms", (double)sl_ns_to_ms_ceil(st->d.reset_ns));
    cJSON_AddNumberToObject(o, "retry_after_ms", (double)sl_ns_to_ms_ceil(st->d.retry_after_ns));
    cJSON_AddBoolToObject(o, "shadow_denied", st->shadow_denied);
    return o;
}

int sl__sim_print(FILE *out, int64_t t_ms, const struct sl_result *res)
{
    cJSON *o = cJSON_CreateObject(), *arr;
    char *text;

    if (o == NULL)
        return -1;
    cJSON_AddNumberToObject(o, "t_ms", (double)t_ms);
    cJSON_AddStringToObject(o, "decision", sl_verdict_name(res->verdict));
    cJSON_AddNumberToObject(o, "delay_ms", (double)sl_ns_to_ms_ceil(res->delay_ns));
    arr = cJSON_AddArrayToObject(o, "statuses");
    for (size_t i = 0; arr != NULL && i < res->n_statuses; i++)
        cJSON_AddItemToArray(arr, status_json(&res->statuses[i]));
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text == NULL)
        return -1;
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return 0;
}

static struct sl__sim_count *slot(struct sl__sim_summary *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return &s->v[i];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct sl__sim_count *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        s->v = v;
        s->cap = cap;
    }
    memset(&s->v[s->n], 0, sizeof(s->v[0]));
    s->v[s->n].name = strdup(name);
    if (s->v[s->n].name == NULL)
        return NULL;
    return &s->v[s->n++];
}

void sl__sim_count(struct sl__sim_summary *s, const struct sl_result *res)
{
    s->requests++;
    s->by_verdict[res->verdict]++;
    for (size_t i = 0; i < res->n_statuses; i++) {
        const struct sl_status *st = &res->statuses[i];
        struct sl__sim_count *c =
            slot(s, st->limit && st->limit->name ? st->limit->name : "(none)");
        if (c != NULL)
            c->by_verdict[st->d.verdict]++;
    }
}

void sl__sim_summary_print(FILE *out, const struct sl__sim_summary *s)
{
    fprintf(out, "%-40s %10s %10s %10s\n", "limit", "allowed", "delayed", "denied");
    for (size_t i = 0; i < s->n; i++)
        fprintf(out, "%-40s %10llu %10llu %10llu\n", s->v[i].name,
                (unsigned long long)s->v[i].by_verdict[SL_ALLOW],
                (unsigned long long)s->v[i].by_verdict[SL_DELAY],
                (unsigned long long)s->v[i].by_verdict[SL_DENY]);
    fprintf(out, "%-40s %10llu %10llu %10llu\n", "(requests)",
            (unsigned long long)s->by_verdict[SL_ALLOW],
            (unsigned long long)s->by_verdict[SL_DELAY],
            (unsigned long long)s->by_verdict[SL_DENY]);
}

void sl__sim_summary_free(struct sl__sim_summary *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].name);
    free(s->v);
    memset(s, 0, sizeof(*s));
}
