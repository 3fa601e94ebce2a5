/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_json_strict.c - JSON bodies read one way only: cJSON takes the
 * first member of an object whose name repeats and stops at the end of the
 * first value, so {"domain":"a","domain":"b"} and {"x":1}garbage parse.
 * A proxy or a filter in front of sluiced may read such a body otherwise
 * (the last member wins in most parsers), so both are refused: a body is
 * one JSON value with only whitespace after it, and no object in it has
 * two members of the same name.
 *
 * It does not interpret the document (http_json_parse.c and the admin
 * endpoints do). Allocation goes through cJSON's hooks (an arena when the
 * caller set one, http_json_arena.c), plus one array to sort the names of
 * an object with many members.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http_json.h"

/* Objects with more members than this are checked by sorting their names;
 * smaller ones pairwise. Either way a body's check is O(n log n). */
#define PAIRWISE_MAX 16

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

static bool sorted_repeats(const cJSON *o, size_t n, bool *oom)
{
    const cJSON **v = malloc(n * sizeof(*v)), *c;
    size_t i = 0;
    bool rep = false;

    if (v == NULL) {
        *oom = true;
        return true;
    }
    cJSON_ArrayForEach(c, o) v[i++] = c;
    qsort(v, n, sizeof(*v), by_name);
    for (i = 1; i < n && !rep; i++)
        rep = strcmp(v[i - 1]->string, v[i]->string) == 0;
    free(v);
    return rep;
}

/* Does some object in `v` (itself or below) repeat a member name? */
static bool repeats(const cJSON *v, bool *oom)
{
    const cJSON *c, *d;
    size_t n = 0;

    cJSON_ArrayForEach(c, v)
    {
        n++;
        if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && repeats(c, oom))
            return true;
    }
    if (!cJSON_IsObject(v) || n < 2)
        return false;
    if (n > PAIRWISE_MAX)
        return sorted_repeats(v, n, oom);
    for (c = v->child; c != NULL; c = c->next)
        for (d = c->next; d != NULL; d = d->next)
            if (strcmp(c->string, d->string) == 0)
                return true;
    return false;
}

struct cJSON *sl__json_parse_strict(const char *body, size_t len, const char **why)
{
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(body, len, &end, false);
    bool oom = false;

    if (doc == NULL) {
        *why = "not valid JSON";
        return NULL;
    }
    while (end < body + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end != body + len)
        *why = "not valid JSON: something follows the value";
    else if (repeats(doc, &oom))
        *why = oom ? "out of memory" : "not valid JSON: an object repeats a member name";
    else
        return doc;
    cJSON_Delete(doc);
    return NULL;
}
