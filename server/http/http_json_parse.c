/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_json_parse.c - turns the JSON check bodies (Envoy's RateLimitRequest,
 * the native /v1/check body) into an sl_request. The native body's fields
 * are read by checkbody/check_body.c, which `sluice simulate` shares; this
 * file adds the strict parse into the arena and the overrides.
 *
 * Every count is checked against the library's caps before it is used and
 * every error names the field that is wrong. It does not validate domains
 * or descriptors against the rules, and it does not copy strings: the
 * request points into the parsed document.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check_body.h"
#include "http_json_int.h"

static int fail(struct sl__json_req *r, int rc, const char *what, const char *why)
{
    snprintf(r->error, sizeof(r->error), "%s: %s", what, why);
    return rc;
}

static const cJSON *field(const cJSON *obj, const char *snake, const char *camel)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, snake);
    if (v == NULL && camel != NULL)
        v = cJSON_GetObjectItemCaseSensitive(obj, camel);
    return v;
}

/* proto3 JSON accepts a field by either name; given by both, it is given
 * twice (as a repeated member would be), which Protobuf's parser refuses. */
static int named_once(struct sl__json_req *r, const cJSON *obj, const char *snake,
                      const char *camel, const char *what)
{
    if (cJSON_IsObject(obj) && cJSON_GetObjectItemCaseSensitive(obj, snake) != NULL &&
        cJSON_GetObjectItemCaseSensitive(obj, camel) != NULL)
        return fail(r, SL_EINVAL, what, "given twice (by its snake_case and lowerCamel names)");
    return SL_OK;
}

static int uint_field(struct sl__json_req *r, const cJSON *v, uint64_t max, const char *what,
                      uint64_t *out)
{
    int rc = sl__json_uint(v, max, out);
    if (rc == SL_EINVAL)
        return fail(r, rc, what, "expected a non-negative integer");
    if (rc == SL_ERANGE)
        return fail(r, rc, what, "number out of range");
    return SL_OK;
}

static struct sl_str str_of(const cJSON *v)
{
    struct sl_str s = {v->valuestring, strlen(v->valuestring)};
    return s;
}

static int parse_domain(struct sl__json_req *r, const cJSON *root)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "domain");

    if (d == NULL)
        return fail(r, SL_EINVAL, "domain", "missing");
    if (!cJSON_IsString(d))
        return fail(r, SL_EINVAL, "domain", "expected a string");
    if (d->valuestring[0] == '\0')
        return fail(r, SL_EINVAL, "domain", "must not be empty");
    r->req.domain = str_of(d);
    return SL_OK;
}

/* The descriptors array, checked for type and count; *n its size. */
static int descriptor_array(struct sl__json_req *r, const cJSON *root, const cJSON **out, size_t *n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "descriptors");
    int size;

    if (a == NULL)
        return fail(r, SL_EINVAL, "descriptors", "missing");
    if (!cJSON_IsArray(a))
        return fail(r, SL_EINVAL, "descriptors", "expected an array");
    size = cJSON_GetArraySize(a);
    if (size == 0)
        return fail(r, SL_EINVAL, "descriptors", "must not be empty");
    if (size > SL_MAX_DESCRIPTORS)
        return fail(r, SL_ETOOBIG, "descriptors", "too many (at most 32)");
    *out = a;
    *n = (size_t)size;
    r->req.descriptors = r->descs;
    r->req.n_descriptors = *n;
    return SL_OK;
}

static int start(struct sl__json_req *r, struct sl__json_arena *arena, const char *body, size_t len)
{
    const char *why = NULL;

    memset(&r->req, 0, sizeof(r->req));
    r->error[0] = '\0';
    r->arena = arena;
    r->root = sl__json_parse_in(arena, body, len, &why);
    if (r->root == NULL)
        return fail(r, SL_EPARSE, "body", why);
    if (!cJSON_IsObject(r->root))
        return fail(r, SL_EINVAL, "body", "expected a JSON object");
    return SL_OK;
}

/* ------------------------------------------------------------ Envoy */

static int parse_unit(const cJSON *v, int64_t *ns)
{
    if (cJSON_IsString(v)) {
        for (size_t i = 0; i < SL__ENVOY_N_UNITS; i++) {
            if (strcmp(v->valuestring, sl__envoy_units[i].name) == 0) {
                *ns = sl__envoy_units[i].ns;
                return SL_OK;
            }
        }
        return SL_EINVAL;
    }
    uint64_t n;
    if (sl__json_uint(v, SL__ENVOY_N_UNITS - 1, &n) != SL_OK)
        return SL_EINVAL;
    *ns = sl__envoy_units[n].ns;
    return SL_OK;
}

/* A limit override {"requests_per_unit", "unit"} for descriptor i (`what`
 * names it in errors): limits that descriptor instead of the rules, as an
 * epoch-aligned fixed window of requests_per_unit per unit, as
 * envoyproxy/ratelimit does. */
static int parse_override(struct sl__json_req *r, const cJSON *v, size_t i, const char *what)
{
    struct sl__envoy_override *o = &r->overrides[i];
    struct sl_limit *l = &r->override_limits[i];
    const cJSON *rpu = field(v, "requests_per_unit", "requestsPerUnit");
    const cJSON *unit = field(v, "unit", NULL);
    uint64_t n = 0;
    int rc;

    if (!cJSON_IsObject(v))
        return fail(r, SL_EINVAL, what, "expected an object {\"requests_per_unit\", \"unit\"}");
    if ((rc = named_once(r, v, "requests_per_unit", "requestsPerUnit", what)) != SL_OK)
        return rc;
    if (rpu != NULL && (rc = uint_field(r, rpu, UINT32_MAX, what, &n)) != SL_OK)
        return rc;
    if (unit != NULL && parse_unit(unit, &o->unit_ns) != SL_OK)
        return fail(r, SL_EINVAL, what, "unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR");
    if (n == 0 || o->unit_ns == 0)
        return fail(r, SL_EINVAL, what,
                    "needs requests_per_unit >= 1 and a unit (SECOND ... YEAR)");
    o->requests_per_unit = (uint32_t)n;
    o->set = true;
    sl_limit_init(l);
    l->algo = SL_ALGO_FIXED_WINDOW;
    l->requests = n;
    l->period_ns = o->unit_ns;
    l->ad_hoc = true;
    sl_limit_finish(l);
    r->descs[i].limit = l;
    return SL_OK;
}

static int parse_envoy_entries(struct sl__json_req *r, const cJSON *d, size_t i)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(d, "entries");
    const cJSON *e;
    size_t j = 0;
    char what[64];

    snprintf(what, sizeof(what), "descriptors[%zu].entries", i);
    r->descs[i].entries = r->entries[i];
    r->descs[i].n_entries = 0;
    if (a == NULL || cJSON_IsNull(a))
        return SL_OK; /* no entries: matches no rule, answered OK (as Envoy's service does) */
    if (!cJSON_IsArray(a))
        return fail(r, SL_EINVAL, what, "expected an array");
    if (cJSON_GetArraySize(a) > SL_MAX_ENTRIES)
        return fail(r, SL_ETOOBIG, what, "too many (at most 16)");
    cJSON_ArrayForEach(e, a)
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "value");
        snprintf(what, sizeof(what), "descriptors[%zu].entries[%zu]", i, j);
        if (!cJSON_IsObject(e))
            return fail(r, SL_EINVAL, what, "expected an object {\"key\", \"value\"}");
        if (!cJSON_IsString(k) || k->valuestring[0] == '\0')
            return fail(r, SL_EINVAL, what, "key must be a non-empty string");
        if (v != NULL && !cJSON_IsString(v))
            return fail(r, SL_EINVAL, what, "value must be a string");
        r->entries[i][j].key = str_of(k);
        r->entries[i][j].value = v != NULL ? str_of(v) : (struct sl_str){"", 0};
        j++;
    }
    r->descs[i].entries = r->entries[i];
    r->descs[i].n_entries = j;
    return SL_OK;
}

static int parse_envoy_descriptor(struct sl__json_req *r, const cJSON *d, size_t i)
{
    const cJSON *hits = field(d, "hits_addend", "hitsAddend");
    const cJSON *limit = field(d, "limit", NULL);
    char what[48];
    uint64_t n;
    int rc;

    snprintf(what, sizeof(what), "descriptors[%zu]", i);
    if (!cJSON_IsObject(d))
        return fail(r, SL_EINVAL, what, "expected an object");
    if ((rc = parse_envoy_entries(r, d, i)) != SL_OK ||
        (rc = named_once(r, d, "hits_addend", "hitsAddend", what)) != SL_OK)
        return rc;
    r->descs[i].hits = -1;
    r->descs[i].limit = NULL;
    if (hits != NULL && !cJSON_IsNull(hits)) {
        snprintf(what, sizeof(what), "descriptors[%zu].hits_addend", i);
        /* UInt64Value; a descriptor's cost is int64 in the library. */
        if ((rc = uint_field(r, hits, INT64_MAX, what, &n)) != SL_OK)
            return rc;
        r->descs[i].hits = (int64_t)n;
    }
    snprintf(what, sizeof(what), "descriptors[%zu].limit", i);
    if (limit != NULL && !cJSON_IsNull(limit))
        return parse_override(r, limit, i, what);
    return SL_OK;
}

int sl__json_parse_envoy(struct sl__json_req *r, struct sl__json_arena *arena, const char *body,
                         size_t len)
{
    const cJSON *descs, *d, *hits;
    size_t n, i = 0;
    uint64_t h = 0;
    int rc;

    memset(r->overrides, 0, sizeof(r->overrides));
    if ((rc = start(r, arena, body, len)) != SL_OK || (rc = parse_domain(r, r->root)) != SL_OK ||
        (rc = descriptor_array(r, r->root, &descs, &n)) != SL_OK)
        return rc;
    if ((rc = named_once(r, r->root, "hits_addend", "hitsAddend", "hits_addend")) != SL_OK)
        return rc;
    hits = field(r->root, "hits_addend", "hitsAddend");
    if (hits != NULL && (rc = uint_field(r, hits, UINT32_MAX, "hits_addend", &h)) != SL_OK)
        return rc;
    r->req.hits = h == 0 ? 1 : h; /* Envoy: 0 (unset) means 1 */
    cJSON_ArrayForEach(d, descs)
    {
        if ((rc = parse_envoy_descriptor(r, d, i++)) != SL_OK)
            return rc;
    }
    return SL_OK;
}

/* ----------------------------------------------------------- native */

/* "overrides": [null | {"requests_per_unit", "unit"}, ...], one per
 * descriptor: Envoy's per-descriptor limit override on the native body. */
static int parse_native_overrides(struct sl__json_req *r, size_t n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(r->root, "overrides"), *v;
    char what[48];
    size_t i = 0;
    int rc;

    if (a == NULL || cJSON_IsNull(a))
        return SL_OK;
    if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) > n)
        return fail(r, SL_EINVAL, "overrides",
                    "expected an array with at most one item per descriptor");
    cJSON_ArrayForEach(v, a)
    {
        snprintf(what, sizeof(what), "overrides[%zu]", i);
        if (!cJSON_IsNull(v) && (rc = parse_override(r, v, i, what)) != SL_OK)
            return rc;
        i++;
    }
    return SL_OK;
}

int sl__json_parse_check(struct sl__json_req *r, struct sl__json_arena *arena, const char *body,
                         size_t len)
{
    const struct sl__check_body b = {&r->req, r->descs, r->entries};
    int rc;

    memset(r->overrides, 0, sizeof(r->overrides));
    if ((rc = start(r, arena, body, len)) != SL_OK ||
        (rc = sl__check_body_read(r->root, &b, r->error, sizeof(r->error))) != SL_OK)
        return rc;
    return parse_native_overrides(r, r->req.n_descriptors);
}

void sl__json_req_release(struct sl__json_req *r)
{
    sl__json_delete_in(r->arena, r->root);
    r->root = NULL;
    memset(&r->req, 0, sizeof(r->req));
}
