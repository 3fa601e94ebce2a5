/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sim_line.c - parse one JSON input line of `sluice simulate` into an
 * sl_request, checking every field's type and the library's caps, with a
 * sentence that says what is wrong.
 *
 * It does not decide anything and does not read a clock: the time is the
 * line's t_ms.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_line.h"

#define MAX_T_MS (INT64_MAX / SL_NS_PER_MS)
#define MAX_HITS 9007199254740992.0 /* 2^53: exact in a JSON number */

void sl__sim_line_free(struct sl__sim_line *s)
{
    cJSON_Delete(s->root);
    s->root = NULL;
}

static int bad(char *err, size_t len, int rc, const char *msg)
{
    snprintf(err, len, "%s", msg);
    return rc;
}

static bool whole(const cJSON *n, double lo, double hi)
{
    return cJSON_IsNumber(n) && n->valuedouble >= lo && n->valuedouble <= hi &&
           floor(n->valuedouble) == n->valuedouble;
}

static int parse_descriptor(struct sl__sim_line *s, size_t i, const cJSON *obj, char *err,
                            size_t len)
{
    size_t n = 0;
    const cJSON *kv;

    if (!cJSON_IsObject(obj))
        return bad(err, len, SL_EPARSE, "each descriptor must be an object {\"key\": \"value\"}");
    cJSON_ArrayForEach(kv, obj)
    {
        if (n == SL_MAX_ENTRIES)
            return bad(err, len, SL_ETOOBIG, "a descriptor has more than 16 entries");
        if (!cJSON_IsString(kv))
            return bad(err, len, SL_EPARSE, "descriptor values must be strings");
        s->entries[i][n].key = (struct sl_str){kv->string, strlen(kv->string)};
        s->entries[i][n].value = (struct sl_str){kv->valuestring, strlen(kv->valuestring)};
        n++;
    }
    if (n == 0)
        return bad(err, len, SL_EPARSE, "a descriptor needs at least one entry");
    s->descs[i] = (struct sl_descriptor){.entries = s->entries[i], .n_entries = n, .hits = -1};
    return SL_OK;
}

static int parse_fields(struct sl__sim_line *s, char *err, size_t len)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->root, "t_ms");
    const cJSON *dom = cJSON_GetObjectItemCaseSensitive(s->root, "domain");
    const cJSON *descs = cJSON_GetObjectItemCaseSensitive(s->root, "descriptors");
    const cJSON *hits = cJSON_GetObjectItemCaseSensitive(s->root, "hits");
    size_t n = 0;
    const cJSON *d;

    if (!whole(t, 0, (double)MAX_T_MS))
        return bad(err, len, SL_ERANGE, "t_ms must be a whole number of Unix milliseconds >= 0");
    if (!cJSON_IsString(dom) || dom->valuestring[0] == '\0')
        return bad(err, len, SL_EPARSE, "domain must be a non-empty string");
    if (hits != NULL && !whole(hits, 0, MAX_HITS))
        return bad(err, len, SL_ERANGE, "hits must be a whole number >= 0");
    if (!cJSON_IsArray(descs) || cJSON_GetArraySize(descs) == 0)
        return bad(err, len, SL_EPARSE, "descriptors must be a non-empty list of objects");
    cJSON_ArrayForEach(d, descs)
    {
        if (n == SL_MAX_DESCRIPTORS)
            return bad(err, len, SL_ETOOBIG, "more than 32 descriptors");
        int rc = parse_descriptor(s, n, d, err, len);
        if (rc != SL_OK)
            return rc;
        n++;
    }
    s->t_ms = (int64_t)t->valuedouble;
    s->req = (struct sl_request){
        .domain = {dom->valuestring, strlen(dom->valuestring)},
        .descriptors = s->descs,
        .n_descriptors = n,
        .hits = hits ? (uint64_t)hits->valuedouble : 1,
        .now_ns = s->t_ms * SL_NS_PER_MS,
    };
    return SL_OK;
}

int sl__sim_line_parse(struct sl__sim_line *s, const char *text, size_t len, char *err,
                       size_t err_len)
{
    s->root = NULL;
    if (len > SL__SIM_LINE_MAX)
        return bad(err, err_len, SL_ETOOBIG, "line longer than 64 KiB");
    s->root = cJSON_ParseWithLength(text, len);
    if (s->root == NULL)
        return bad(err, err_len, SL_EPARSE, "not valid JSON");
    if (!cJSON_IsObject(s->root))
        return bad(err, err_len, SL_EPARSE, "a line must be one JSON object");
    return parse_fields(s, err, err_len);
}
