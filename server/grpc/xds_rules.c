/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * xds_rules.c - RateLimitConfig resources (envoyproxy/ratelimit's xDS
 * rules) rendered as the rules YAML its files hold, for the library's one
 * loader to read: the same rules objects, the same checks and messages
 * as a file's. Each resource becomes one text whose strings are all
 * double-quoted with escapes, so no value can change the text's shape.
 *
 * It does not validate beyond the resource's type and decoding (the
 * loader does) or talk to the server (xds.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "google/protobuf/any.pb-c.h"
#include "ratelimit/config/ratelimit/v3/rls_conf.pb-c.h"
#include "sluice.h"
#include "xalloc.h"
#include "xds.h"

/* Nesting deeper than this is refused (the loader has its own bound). */
#define MAX_DEPTH 32

static void put(struct sl__buf *b, const char *s)
{
    sl__buf_append(b, s, strlen(s));
}

static void indent(struct sl__buf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        sl__buf_append(b, "  ", 2);
}

/* s as a YAML double-quoted scalar. */
static void quoted(struct sl__buf *b, const char *s)
{
    sl__buf_append(b, "\"", 1);
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sl__buf_append(b, e, 2);
        } else if (c < 0x20 || c == 0x7f) {
            char e[8];
            snprintf(e, sizeof(e), "\\x%02x", c);
            put(b, e);
        } else {
            sl__buf_append(b, s, 1);
        }
    }
    sl__buf_append(b, "\"", 1);
}

static const char *unit_name(Ratelimit__Config__Ratelimit__V3__RateLimitUnit u)
{
    switch (u) {
    case RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__SECOND:
        return "second";
    case RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__MINUTE:
        return "minute";
    case RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__HOUR:
        return "hour";
    case RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__DAY:
        return "day";
    case RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__WEEK:
        return "week";
    case RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__MONTH:
        return "month";
    case RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__YEAR:
        return "year";
    default:
        return "unknown"; /* an enum value of a later version: the loader refuses it */
    }
}

static void policy(struct sl__buf *b, const Ratelimit__Config__Ratelimit__V3__RateLimitPolicy *p,
                   int depth)
{
    char num[32];

    indent(b, depth);
    put(b, "rate_limit:\n");
    if (p->unlimited) {
        indent(b, depth + 1);
        put(b, "unlimited: true\n");
    }
    /* UNKNOWN is no unit: the loader asks for one (or unlimited), and
     * refuses an unlimited limit with a unit, as envoyproxy/ratelimit does */
    if (p->unit != RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__UNKNOWN) {
        indent(b, depth + 1);
        put(b, "unit: ");
        put(b, unit_name(p->unit));
        put(b, "\n");
    }
    if (!p->unlimited) {
        snprintf(num, sizeof(num), "%u", p->requests_per_unit);
        indent(b, depth + 1);
        put(b, "requests_per_unit: ");
        put(b, num);
        put(b, "\n");
    }
    if (p->name != NULL && p->name[0] != '\0') {
        indent(b, depth + 1);
        put(b, "name: ");
        quoted(b, p->name);
        put(b, "\n");
    }
    if (p->n_replaces > 0) {
        indent(b, depth + 1);
        put(b, "replaces:\n");
        for (size_t i = 0; i < p->n_replaces; i++) {
            indent(b, depth + 2);
            put(b, "- name: ");
            quoted(b, p->replaces[i]->name);
            put(b, "\n");
        }
    }
}

static int descriptors(struct sl__buf *b,
                       Ratelimit__Config__Ratelimit__V3__RateLimitDescriptor *const *d, size_t n,
                       int depth)
{
    if (depth > MAX_DEPTH)
        return SL_EPARSE;
    for (size_t i = 0; i < n; i++) {
        indent(b, depth);
        put(b, "- key: ");
        quoted(b, d[i]->key);
        put(b, "\n");
        if (d[i]->value != NULL && d[i]->value[0] != '\0') {
            indent(b, depth + 1);
            put(b, "value: ");
            quoted(b, d[i]->value);
            put(b, "\n");
        }
        if (d[i]->rate_limit != NULL)
            policy(b, d[i]->rate_limit, depth + 1);
        if (d[i]->shadow_mode) {
            indent(b, depth + 1);
            put(b, "shadow_mode: true\n");
        }
        if (d[i]->quota_mode) {
            indent(b, depth + 1);
            put(b, "quota_mode: true\n");
        }
        if (d[i]->detailed_metric) {
            indent(b, depth + 1);
            put(b, "detailed_metric: true\n");
        }
        if (d[i]->n_descriptors > 0) {
            indent(b, depth + 1);
            put(b, "descriptors:\n");
            if (descriptors(b, d[i]->descriptors, d[i]->n_descriptors, depth + 2) != SL_OK)
                return SL_EPARSE;
        }
    }
    return SL_OK;
}

/* One decoded RateLimitConfig as a rules document. */
static int render_one(const Ratelimit__Config__Ratelimit__V3__RateLimitConfig *c, struct sl__buf *b)
{
    put(b, "domain: ");
    quoted(b, c->domain);
    put(b, "\n");
    if (c->n_descriptors == 0)
        return SL_OK;
    put(b, "descriptors:\n");
    return descriptors(b, c->descriptors, c->n_descriptors, 1);
}

void sl__xds_texts_free(struct sl__xds_text *t, size_t n)
{
    for (size_t i = 0; t != NULL && i < n; i++) {
        free(t[i].name);
        free(t[i].yaml);
    }
    free(t);
}

int sl__xds_render(struct Google__Protobuf__Any *const *anys, size_t n, struct sl__xds_text **out,
                   size_t *n_out, char *err, size_t errlen)
{
    struct sl__xds_text *t = sl__xzalloc((n ? n : 1) * sizeof(*t));
    int r = SL_OK;

    *out = NULL;
    *n_out = 0;
    for (size_t i = 0; i < n && r == SL_OK; i++) {
        Ratelimit__Config__Ratelimit__V3__RateLimitConfig *c;
        struct sl__buf b = {0};
        const char *name;

        if (anys[i]->type_url == NULL || strcmp(anys[i]->type_url, SL__XDS_TYPE_URL) != 0) {
            snprintf(err, errlen, "resource %zu is a %.200s, not a %s", i,
                     anys[i]->type_url ? anys[i]->type_url : "(no type)", SL__XDS_TYPE_URL);
            r = SL_EPARSE;
            break;
        }
        c = ratelimit__config__ratelimit__v3__rate_limit_config__unpack(NULL, anys[i]->value.len,
                                                                        anys[i]->value.data);
        if (c == NULL) {
            snprintf(err, errlen, "resource %zu: not a valid RateLimitConfig message", i);
            r = SL_EPARSE;
            break;
        }
        name = c->name != NULL && c->name[0] != '\0' ? c->name : c->domain;
        t[i].name = sl__xstrndup(name, strlen(name));
        if (render_one(c, &b) != SL_OK) {
            snprintf(err, errlen, "%.200s: descriptors nest deeper than %d levels", t[i].name,
                     MAX_DEPTH);
            r = SL_EPARSE;
        }
        ratelimit__config__ratelimit__v3__rate_limit_config__free_unpacked(c, NULL);
        t[i].yaml = b.p != NULL ? b.p : sl__xstrndup("", 0);
        t[i].len = b.len;
        *n_out = i + 1;
    }
    if (r != SL_OK) {
        sl__xds_texts_free(t, *n_out);
        *n_out = 0;
        return r;
    }
    *out = t;
    *n_out = n;
    return SL_OK;
}
