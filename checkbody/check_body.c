/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * check_body.c - the native check body's fields read from a parsed JSON
 * document into an sl_request (check_body.h), for POST /v1/check and
 * `sluice simulate` alike.
 *
 * Every count is checked against the library's caps before it is used and
 * every error names the field that is wrong. It does not parse text, does
 * not validate domains or descriptors against the rules, and does not copy
 * strings: the request points into the document.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check_body.h"

static int fail(char *err, size_t len, int rc, const char *what, const char *why)
{
    snprintf(err, len, "%s: %s", what, why);
    return rc;
}

/* A decimal string: digits only, checked against max before each step so
 * that 2^64-1 is reached without wrapping. */
static int uint_of_string(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t n = 0;

    if (*s == '\0')
        return SL_EINVAL;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return SL_EINVAL;
        if (n > (max - (uint64_t)(*s - '0')) / 10)
            return SL_ERANGE;
        n = n * 10 + (uint64_t)(*s - '0');
    }
    *out = n;
    return SL_OK;
}

int sl__json_uint(const cJSON *v, uint64_t max, uint64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d >= 0)) /* negative, or NaN */
            return SL_EINVAL;
        if (d >= 18446744073709551616.0)
            return SL_ERANGE;
        if (d != (double)(uint64_t)d)
            return SL_EINVAL; /* a fraction */
        if ((uint64_t)d > max)
            return SL_ERANGE;
        *out = (uint64_t)d;
        return SL_OK;
    }
    if (cJSON_IsString(v))
        return uint_of_string(v->valuestring, max, out);
    return SL_EINVAL;
}

static struct sl_str str_of(const char *s)
{
    return (struct sl_str){s, strlen(s)};
}

static int read_domain(const cJSON *root, struct sl_request *req, char *err, size_t len)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "domain");

    if (d == NULL)
        return fail(err, len, SL_EINVAL, "domain", "missing");
    if (!cJSON_IsString(d))
        return fail(err, len, SL_EINVAL, "domain", "expected a string");
    if (d->valuestring[0] == '\0')
        return fail(err, len, SL_EINVAL, "domain", "must not be empty");
    req->domain = str_of(d->valuestring);
    return SL_OK;
}

static int read_hits(const cJSON *root, struct sl_request *req, char *err, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "hits");
    uint64_t n = 1; /* absent: one request */
    int rc;

    if (v != NULL && (rc = sl__json_uint(v, UINT64_MAX, &n)) != SL_OK)
        return fail(err, len, rc, "hits",
                    rc == SL_ERANGE ? "number out of range" : "expected a non-negative integer");
    req->hits = n;
    return SL_OK;
}

static int read_descriptor(const cJSON *d, size_t i, const struct sl__check_body *b, char *err,
                           size_t len)
{
    const cJSON *e;
    size_t j = 0;
    char what[64];
    int size;

    snprintf(what, sizeof(what), "descriptors[%zu]", i);
    if (!cJSON_IsObject(d))
        return fail(err, len, SL_EINVAL, what, "expected an object {\"key\": \"value\", ...}");
    size = cJSON_GetArraySize(d);
    if (size == 0)
        return fail(err, len, SL_EINVAL, what, "must not be empty");
    if (size > SL_MAX_ENTRIES)
        return fail(err, len, SL_ETOOBIG, what, "too many entries (at most 16)");
    cJSON_ArrayForEach(e, d)
    {
        if (!cJSON_IsString(e)) {
            snprintf(what, sizeof(what), "descriptors[%zu].%.32s", i, e->string);
            return fail(err, len, SL_EINVAL, what, "value must be a string");
        }
        if (e->string[0] == '\0')
            return fail(err, len, SL_EINVAL, what, "keys must not be empty");
        b->entries[i][j].key = str_of(e->string);
        b->entries[i][j].value = str_of(e->valuestring);
        j++;
    }
    b->descs[i] = (struct sl_descriptor){.entries = b->entries[i], .n_entries = j, .hits = -1};
    return SL_OK;
}

/* The descriptors array, checked for type and count before any of its
 * items is read. */
static int descriptor_array(const cJSON *root, const cJSON **out, char *err, size_t len)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "descriptors");
    int size;

    if (a == NULL)
        return fail(err, len, SL_EINVAL, "descriptors", "missing");
    if (!cJSON_IsArray(a))
        return fail(err, len, SL_EINVAL, "descriptors", "expected an array");
    size = cJSON_GetArraySize(a);
    if (size == 0)
        return fail(err, len, SL_EINVAL, "descriptors", "must not be empty");
    if (size > SL_MAX_DESCRIPTORS)
        return fail(err, len, SL_ETOOBIG, "descriptors", "too many (at most 32)");
    *out = a;
    return SL_OK;
}

int sl__check_body_read(const cJSON *root, const struct sl__check_body *b, char *err,
                        size_t err_len)
{
    const cJSON *descs, *d;
    size_t i = 0;
    int rc;

    memset(b->req, 0, sizeof(*b->req));
    if (!cJSON_IsObject(root))
        return fail(err, err_len, SL_EINVAL, "body", "expected a JSON object");
    if ((rc = read_domain(root, b->req, err, err_len)) != SL_OK ||
        (rc = descriptor_array(root, &descs, err, err_len)) != SL_OK ||
        (rc = read_hits(root, b->req, err, err_len)) != SL_OK)
        return rc;
    cJSON_ArrayForEach(d, descs)
    {
        if ((rc = read_descriptor(d, i, b, err, err_len)) != SL_OK)
            return rc;
        i++;
    }
    b->req->descriptors = b->descs;
    b->req->n_descriptors = i;
    return SL_OK;
}
